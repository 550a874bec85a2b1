"""The pipeline's steps (shared by ``jobs/`` and ``logdir-gc run``) and the whole run."""

from pipelines.orchestrate.controller import ControllerView, load_controller_view
from pipelines.orchestrate.pipeline import RunReport, run_pipeline
from pipelines.orchestrate.steps import (
    StepReport,
    crawl_step,
    detect_step,
    ingest_metadata_step,
    new_run_id,
    plan_step,
)

__all__ = [
    "ControllerView",
    "RunReport",
    "StepReport",
    "crawl_step",
    "detect_step",
    "ingest_metadata_step",
    "load_controller_view",
    "new_run_id",
    "plan_step",
    "run_pipeline",
]
