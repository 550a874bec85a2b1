"""Small GC plans for the workflow tests (built with the project's own model)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pipelines.plan.model import GcPlan, PlanItem

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc)


def item(item_id: str, *, broker: int = 1, topic: str = "orders", partition: int = 0, size: int = 100) -> PlanItem:
    return PlanItem.model_validate({
        "item_id": item_id, "broker_id": broker, "log_dir": "/data/kafka-logs", "dir_name": f"{topic}-{partition}",
        "topic": topic, "partition": partition, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "class": "recreated_topic",
        "bytes": size, "fingerprint": "sha256:" + "0" * 64,
    })


def plan(plan_id: str = "p1", *, author: str = "alice", created_at: datetime = T0, cluster: str = "c1",
         items: tuple[PlanItem, ...] | None = None, expires_in: timedelta | None = None) -> GcPlan:
    return GcPlan(
        plan_id=plan_id, cluster=cluster, created_at=created_at, created_by=author, run_id="run-1",
        items=items if items is not None else (item("i1"), item("i2", partition=1)),
        expires_at=created_at + expires_in if expires_in else None,
    ).with_hash()
