"""spark-submit entry point: crawl every configured broker's log dirs into the crawl tables.

    spark-submit jobs/crawl.py --config conf/example.yaml --run-id 2024-06-01T00 [--include-segments]

Each table's rows of this run are replaced atomically (``replaceWhere run_id = ...``): a rerun with the same
``--run-id`` never duplicates rows.
"""

from __future__ import annotations

import argparse
import sys

from pipelines.config.load import load_config
from pipelines.crawl.spark_crawl import crawl
from pipelines.tables import open_store
from pipelines.tables.schemas import CRAWL_RUNS
from pipelines.tables.spark_session import build_spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crawl", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="YAML config file")
    parser.add_argument("--run-id", required=True, help="crawl run id; a rerun with the same id replaces its rows")
    parser.add_argument("--include-segments", action="store_true", help="also write per-file segment_files rows")
    args = parser.parse_args(argv)

    config = load_config(args.config)
    spark = build_spark(master=config.spark.master, conf=config.spark.conf)
    frames = crawl(spark, config.brokers, run_id=args.run_id, cluster=config.cluster,
                   include_segments=args.include_segments)  # fmt: skip
    store = open_store("spark", config.warehouse, spark=spark)
    run = {"run_id": args.run_id}
    store.overwrite_partition("log_dirs", run, frames.log_dirs)
    store.overwrite_partition("partition_dirs", run, frames.partition_dirs)
    store.overwrite_partition("crawl_errors", run, frames.errors)
    if args.include_segments:
        store.overwrite_partition("segment_files", run, frames.segment_files)
    store.overwrite_partition(CRAWL_RUNS, run, [frames.run_row])
    frames.unpersist()
    row = frames.run_row
    print(f"crawl {args.run_id}: {row['status']}, {row['log_dirs']} log dirs, {row['partition_dirs']} partition"
          f" dirs, {row['bytes']} bytes, {row['errors']} errors")  # fmt: skip
    return 0 if row["status"] != "failed" else 1


if __name__ == "__main__":
    sys.exit(main())
