"""``logdir-gc package``: the wheel, and an environment archive executors run the jobs with.

The archive is a virtual environment holding the wheel and every runtime dependency (the ``sftp`` extra and the
``spark`` extra) except pyspark itself, which every Spark installation puts on its executors' path
(``$SPARK_HOME/python/lib/pyspark.zip``) and which must match the cluster's Spark anyway. ``delta-spark``'s Python
half goes in without its pyspark pin. Spark unpacks the archive into each executor's working directory as
``environment/`` (the ``#environment`` of ``--archives``); ``spark.pyspark.python`` points the Python workers at it.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.deploy.env_archive import pack_venv
from pipelines.errors import PipelinesError

DIST = "kafka-logdir-gc"
ENV_DIR = "environment"
#: Extras whose requirements executors need; pyspark is the cluster's own.
RUNTIME_EXTRAS = ("spark", "sftp")
PROVIDED_BY_SPARK = frozenset({"pyspark"})
#: Installed without their own requirements (their only one is pyspark).
WITHOUT_DEPS = frozenset({"delta-spark"})


class PackagingFailed(PipelinesError):
    """The wheel or the environment could not be built (the message names the step and pip's last line)."""


@dataclass(frozen=True)
class Package:
    wheel: Path
    archive: Path
    spark_submit_args: list[str]

    def to_json_dict(self) -> dict[str, Any]:
        return {"wheel": str(self.wheel), "archive": str(self.archive), "spark_submit_args": self.spark_submit_args}


def source_root() -> Path:
    """The checkout this package runs from (``pyproject.toml`` beside ``pipelines/``).

    Raises:
        PackagingFailed: installed from a wheel, without its sources.
    """
    root = Path(__file__).resolve().parents[2]
    if not ((root / "pyproject.toml").is_file() and (root / "pipelines").is_dir()):
        raise PackagingFailed(f"no source checkout at {root}: run `logdir-gc package` from a clone of {DIST}")
    return root


def _name(requirement: str) -> str:
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return found.group(1).lower().replace("_", "-") if found else requirement


def runtime_requirements(requires: list[str], extras: tuple[str, ...] = RUNTIME_EXTRAS) -> tuple[list[str], list[str]]:
    """(requirements installed with their dependencies, requirements installed without) for executors.

    ``requires`` are ``Requires-Dist`` strings: base ones (no marker) and those of ``extras``; pyspark dropped.
    """
    with_deps, without = [], []
    for line in requires:
        spec, _, marker = line.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if extra and extra.group(1) not in extras:
            continue
        if marker.strip() and not extra:
            continue  # a platform marker: none in our own requirements today
        name = _name(spec)
        if name in PROVIDED_BY_SPARK or name == DIST:
            continue
        (without if name in WITHOUT_DEPS else with_deps).append(spec.strip())
    return with_deps, without


def _run(step: str, command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise PackagingFailed(f"{step} failed (exit {done.returncode}): {last}")


def build_wheel(source: Path, out: Path) -> Path:
    """``pip wheel`` of the checkout (C speed-ups compiled for this platform when a compiler is present)."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.whl"))
    _run("building the wheel", [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out),
                                str(source)])
    version = importlib.metadata.version(DIST)
    built = sorted(set(out.glob(f"{DIST.replace('-', '_')}-{version}-*.whl")) - before) or sorted(
        out.glob(f"{DIST.replace('-', '_')}-{version}-*.whl"))
    if not built:
        raise PackagingFailed(f"pip wheel wrote no {DIST} {version} wheel into {out}")
    return built[-1]


def build_environment(wheel: Path, venv: Path, extra: tuple[str, ...] = ()) -> None:
    """A fresh venv with the wheel, its executor-side requirements and ``extra`` ones (e.g. ``s3fs``)."""
    _run("creating the environment", [sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    with_deps, without = runtime_requirements(importlib.metadata.requires(DIST) or [])
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run("installing the wheel and its dependencies", [*pip, str(wheel), *with_deps, *extra])
    if without:
        _run("installing " + ", ".join(without), [*pip, "--no-deps", *without])


def spark_submit_args(archive: Path, driver_python: str = sys.executable) -> list[str]:
    """What to add to a client-mode ``spark-submit`` so executors without this package run the jobs.

    The driver keeps a Python that has the package (``driver_python``, this one by default); in cluster deploy
    mode use ``./environment/bin/python`` for both.
    """
    return [
        "--archives", f"{archive}#{ENV_DIR}",
        "--conf", f"spark.pyspark.python=./{ENV_DIR}/bin/python",
        "--conf", f"spark.pyspark.driver.python={driver_python}",
    ]


def build_package(out: Path, *, python_prefix: str | None = None, extra: tuple[str, ...] = ()) -> Package:
    """Wheel + ``kafka-logdir-gc-<version>-env.tar.gz`` in ``out``; ``extra`` requirements go into the archive too.

    Raises:
        PackagingFailed: no source checkout, or pip failed (no network and nothing cached, no compiler, …).
    """
    out = out.resolve()
    wheel = build_wheel(source_root(), out)
    archive = out / f"{DIST}-{importlib.metadata.version(DIST)}-env.tar.gz"
    with tempfile.TemporaryDirectory(prefix="klgc-env-") as tmp:
        venv = Path(tmp) / ENV_DIR
        build_environment(wheel, venv, extra)
        pack_venv(venv, archive, python_prefix=python_prefix)
    return Package(wheel, archive, spark_submit_args(archive))
