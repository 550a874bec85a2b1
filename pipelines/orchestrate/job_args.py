"""What every spark-submit job in ``jobs/`` starts with: arguments, config, session, table store."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipelines.config.load import load_config
from pipelines.config.models import AppConfig
from pipelines.deploy.executor_check import as_missing_module, check_executors, crawl_modules
from pipelines.errors import PipelinesError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.tables.base import TableStore


@dataclass(frozen=True)
class JobContext:
    config: AppConfig
    run_id: str
    args: argparse.Namespace
    spark: SparkSession
    store: TableStore


def job_context(argv: Sequence[str] | None, description: str,
                extra: Callable[[argparse.ArgumentParser], None] | None = None) -> JobContext:
    """Parse ``--config FILE --run-id ID`` (plus ``extra`` flags), load the config, build session and store.

    On a cluster the executors are probed first (``deploy.executor_check``): a missing package is one line.
    """
    from pipelines.tables.spark_session import build_spark
    from pipelines.tables.warehouse_store import warehouse_store

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True, help="YAML config file")
    parser.add_argument("--run-id", required=True, help="run id; a rerun with the same id replaces its rows")
    if extra:
        extra(parser)
    args = parser.parse_args(argv)
    config = load_config(args.config)
    spark = build_spark(master=config.spark.master, conf=config.spark.conf)
    check_executors(spark, crawl_modules(configured_log_dirs(config)))
    store = warehouse_store(config.warehouse, config.warehouse_storage_options, engine="spark", spark=spark)
    store.ensure_tables()
    return JobContext(config, args.run_id, args, spark, store)


def configured_log_dirs(config: AppConfig) -> list[str]:
    """Every log-dir URL (or template) of the config, for the executor probe."""
    urls = [url for b in config.brokers for url in b.log_dirs]
    return urls + list(config.brokers_from.log_dirs if config.brokers_from else ())


def run_job(main: Callable[[], Any]) -> None:
    """Exit 0 on success; one line on stderr and exit 1 for the project's own error families, and for a Spark failure
    caused by a module the executors lack (anything else shows its traceback: a bug)."""
    try:
        main()
    except PipelinesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:
        missing = as_missing_module(exc)
        if missing is None:
            raise
        print(f"error: {missing}", file=sys.stderr)
        sys.exit(1)
