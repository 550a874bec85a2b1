"""spark-submit entry point: list, replay and classify the configured remote tier for one run.

    spark-submit jobs/remote_tier.py --config conf/example.yaml --run-id 20240601T000000Z-3f2a9c1e [--now ...]

Lists ``remote_tier.location`` (or reads its S3 Inventory report), reads ``__remote_log_metadata`` and replaces the
run's ``remote_objects``, ``remote_log_segments`` and ``remote_findings`` rows. Needs ``remote_tier`` in the config.
"""

from __future__ import annotations

from datetime import datetime

from pipelines.orchestrate.controller import load_controller_view
from pipelines.orchestrate.job_args import job_context, run_job
from pipelines.orchestrate.remote_tier_step import remote_tier_step


def main(argv: list[str] | None = None) -> None:
    ctx = job_context(argv, "List and classify the remote tier of one run.", lambda p: p.add_argument(
        "--now", type=datetime.fromisoformat, default=None, help="clock for ages and grace (ISO 8601, with zone)"))
    view = load_controller_view(ctx.config.metadata)
    report = remote_tier_step(ctx.spark, ctx.store, ctx.config, ctx.run_id, view, now=ctx.args.now)
    print(f"remote_tier {ctx.run_id}: {report.counts}")
    for note in report.notes:
        print(f"note: {note}")


if __name__ == "__main__":
    run_job(main)
