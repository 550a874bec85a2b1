"""Ask the Spark executors whether they can run the crawl, before any step runs.

An executor without this package (or one of its dependencies) fails each crawl task while unpickling it, Spark
retries every task a few times and the job dies with pages of Py4J and log4j traceback. One small probe job first
turns that into one line naming the missing module. The probe function is built inside a function, so cloudpickle
ships it by value: the executor needs nothing of ours to run it, and the probe catches the ImportError itself, so
no task fails and nothing is retried.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pipelines.errors import PipelinesError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: What a crawl task imports (the backends, fsspec, the Kafka parsers come with it); pyarrow: the tasks hand their
#: rows to Spark as Arrow batches (``mapInArrow``).
CRAWL_MODULES = ("pipelines.crawl.tasks", "pipelines.crawl.inventory_file", "pyarrow")
DEPLOY_DOC = 'docs/deploying.md'
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


class ExecutorsLackModule(PipelinesError):
    """Spark executors cannot import a module the jobs need: the package was not shipped to them."""


def missing_module_error(module: str, detail: str = "") -> ExecutorsLackModule:
    why = f" ({detail})" if detail else ""
    return ExecutorsLackModule(
        f"Spark executors cannot import {module}{why}: ship the package to them with `logdir-gc package` "
        f"(spark.archives), see {DEPLOY_DOC}")


def crawl_modules(log_dir_urls: Sequence[str]) -> tuple[str, ...]:
    """What the crawl of these log dirs imports on executors (the SSH library only when a log dir is ``sftp://``)."""
    remote = any(url.startswith(("sftp://", "ssh://")) for url in log_dir_urls)
    return CRAWL_MODULES + (("paramiko",) if remote else ())


def _probe(modules: Sequence[str]) -> Callable[[Any], tuple[str | None, str, str]]:
    def probe(_: Any) -> tuple[str | None, str, str]:
        import importlib
        import platform
        import sys

        where = f"{platform.machine()} python {sys.version.split()[0]}"
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                return exc.name or name, str(exc), where
        from pipelines import native

        return None, native.code_path(), where

    return probe


def check_executors(spark: SparkSession, modules: Sequence[str] = CRAWL_MODULES) -> list[str]:
    """Run one probe task per default-parallelism slot; returns each task's code path (``native.code_path``).

    Skipped (returns ``[]``) on a local master, whose executors are this process's own Python.

    Raises:
        ExecutorsLackModule: an executor could not import one of ``modules`` or what they import.
    """
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return []
    slots = max(sc.defaultParallelism, 1)
    results = sc.parallelize(range(slots), slots).map(_probe(tuple(modules))).collect()
    for missing, detail, where in results:
        if missing is not None:
            raise missing_module_error(missing, f"{detail}; executor {where}")
    return [path for _, path, _ in results]


def as_missing_module(exc: BaseException) -> ExecutorsLackModule | None:
    """The one-line error for a Spark failure whose cause is a module an executor could not import, else None."""
    found = _MISSING.search(str(exc))
    return missing_module_error(found.group(1)) if found else None
