"""Approval rules a mutation audit found unguarded: each test fails if its one check is removed from the code."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from plan_factory import T0, plan

from pipelines.config.models import PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.plan import approval
from pipelines.plan import policy as rules
from pipelines.tables.rust_engine import RustTableStore


def test_a_later_expires_at_in_the_plan_does_not_extend_the_policy_expiry(tmp_path: Path) -> None:
    """Earlier wins in both directions: a plan cannot outlive ``plan_expiry_ms`` by naming a far expiry."""
    policy = PolicyConfig(plan_expiry_ms="2d")
    long_lived = plan(expires_in=timedelta(days=30))
    assert rules.expiry_of(long_lived, policy) == T0 + timedelta(days=2)
    store = RustTableStore(str(tmp_path / "wh"))
    approval.register_plan(store, long_lived, actor="d", policy=policy, now=T0)
    with pytest.raises(PolicyViolation, match=r"^\[plan_expiry\]"):
        approval.approve(store, "p1", by="bob", policy=policy, now=T0 + timedelta(days=3))
    assert approval.get_plan(store, "p1").status == "expired"


@pytest.mark.parametrize(
    ("start", "target"),
    [("proposed", "applying"), ("proposed", "applied"), ("rejected", "approved"), ("rejected", "applying"),
     ("expired", "approved"), ("superseded", "applying"), ("restored", "applying")],
)
def test_executor_side_transitions_follow_the_state_machine(start: str, target: str, tmp_path: Path) -> None:
    """``set_status`` without ``allowed_from`` relies on ``TRANSITIONS`` alone: an unapproved or finished plan can
    never be moved to an executing or approved state."""
    store = RustTableStore(str(tmp_path / "wh"))
    approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
    if start != "proposed":
        store.update("gc_plans", {"plan_id": "p1"}, {"status": start})
    with pytest.raises(PolicyViolation, match=r"^\[state_machine\]"):
        approval.set_status(store, "p1", target, actor="executor@broker-1")
    assert approval.get_plan(store, "p1").status == start
    assert approval.audit_rows(store, "p1")[-1]["action"] == f"set_{target}_refused"
