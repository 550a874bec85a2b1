"""spark-submit entry point: replay the controller metadata into controller_* tables and the event history.

    spark-submit jobs/ingest_metadata.py --config conf/example.yaml --run-id 20240601T000000Z
"""

from __future__ import annotations

from pipelines.orchestrate.job_args import job_context, run_job
from pipelines.orchestrate.steps import ingest_metadata_step


def main(argv: list[str] | None = None) -> None:
    ctx = job_context(argv, "Ingest controller metadata for one run.")
    report, _ = ingest_metadata_step(ctx.store, ctx.config, ctx.run_id)
    print(f"ingest_metadata {ctx.run_id}: {report.counts}")
    for note in report.notes:
        print(f"note: {note}")


if __name__ == "__main__":
    run_job(main)
