"""spark-submit entry point: plannable findings of one run → a re-checked GC plan (JSON + Markdown), registered.

    spark-submit jobs/plan.py --config conf/example.yaml --run-id 20240601T000000Z [--created-by NAME] [--now ISO]

Every candidate is re-classified in plain Python against the controller image; any disagreement aborts with a
report under the plans dir and exit code 1 (``PlanError``). The last job of a run: it writes the run's metrics
(``metrics:`` config; step durations are only known to ``logdir-gc run``).
"""

from __future__ import annotations

import argparse
import getpass
from datetime import datetime

from pipelines.metrics.run_metrics import record_run
from pipelines.orchestrate.job_args import job_context, run_job
from pipelines.orchestrate.steps import plan_step


def main(argv: list[str] | None = None) -> None:
    def flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--created-by", default=None, help="author recorded in the plan (default: the OS user)")
        p.add_argument("--now", type=datetime.fromisoformat, default=None,
                       help="clock for grace and expiry (ISO 8601, with zone); a rerun with the same clock gives the"
                            " same plan id")

    ctx = job_context(argv, "Emit the GC plan of one run.", flags)
    report, _ = plan_step(ctx.spark, ctx.store, ctx.config, ctx.run_id,
                          created_by=ctx.args.created_by or getpass.getuser(), now=ctx.args.now)
    print(f"plan {ctx.run_id}: {report.counts}")
    for note in report.notes:
        print(f"note: {note}")
    metrics = record_run(ctx.config, ctx.run_id, {}, plan_id=report.counts.get("plan_id"))
    print(f"metrics: {metrics.file}" + (f" (pushed to {metrics.pushed_to})" if metrics.pushed_to else ""))
    for note in metrics.notes:
        print(f"warning: {note}")


if __name__ == "__main__":
    run_job(main)
