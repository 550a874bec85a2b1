"""spark-submit entry point: crawl every configured broker's log dirs into the crawl tables.

    spark-submit jobs/crawl.py --config conf/example.yaml --run-id 20240601T000000Z [--include-segments]

Each table's rows of this run are replaced atomically (``replaceWhere run_id = ...``): a rerun with the same
``--run-id`` never duplicates rows.
"""

from __future__ import annotations

from pipelines.orchestrate.fleet import with_fleet
from pipelines.orchestrate.job_args import job_context, run_job
from pipelines.orchestrate.steps import crawl_step


def main(argv: list[str] | None = None) -> None:
    ctx = job_context(argv, "Crawl broker log dirs for one run.", lambda p: p.add_argument(
        "--include-segments", action="store_true", help="also write per-file segment_files rows"))
    config, _ = with_fleet(ctx.config)  # brokers_from: the broker list from the controller metadata
    report = crawl_step(ctx.spark, ctx.store, config, ctx.run_id, include_segments=ctx.args.include_segments)
    print(f"crawl {ctx.run_id}: {report.counts}")
    if report.counts["status"] == "failed":
        raise SystemExit(1)


if __name__ == "__main__":
    run_job(main)
