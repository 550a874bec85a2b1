"""spark-submit entry point: classify every partition dir of one run → the ``findings`` table.

    spark-submit jobs/detect.py --config conf/example.yaml --run-id 20240601T000000Z [--now 2024-06-01T00:00:00Z]

Reads the run's ``partition_dirs``, ``log_dirs`` and ``controller_*`` rows and the cluster's ``metadata_events``;
replaces the run's ``findings`` rows.
"""

from __future__ import annotations

from datetime import datetime

from pipelines.orchestrate.job_args import job_context, run_job
from pipelines.orchestrate.steps import detect_step


def main(argv: list[str] | None = None) -> None:
    ctx = job_context(argv, "Classify the partition dirs of one run.", lambda p: p.add_argument(
        "--now", type=datetime.fromisoformat, default=None, help="clock for ages and grace (ISO 8601, with zone)"))
    report = detect_step(ctx.spark, ctx.store, ctx.config, ctx.run_id, now=ctx.args.now)
    print(f"detect {ctx.run_id}: {report.counts}")


if __name__ == "__main__":
    run_job(main)
