"""GC plans: typed model, emission from findings, approval workflow."""

from pipelines.plan.model import GcPlan, PlanItem, compute_content_hash

__all__ = ["GcPlan", "PlanItem", "compute_content_hash"]
