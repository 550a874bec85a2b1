"""The approval state machine, against an in-memory fake store (fast) and the real delta-rs store."""

from __future__ import annotations

from datetime import timedelta
from operator import itemgetter
from pathlib import Path

import pytest
from plan_factory import T0, item, plan

from pipelines.config.models import PolicyConfig
from pipelines.errors import PlanError, PolicyViolation
from pipelines.plan import approval
from pipelines.tables.base import TableStore
from pipelines.tables.schemas import ALL_TABLES

NOW = T0 + timedelta(hours=1)


@pytest.fixture
def store(tmp_path: Path) -> TableStore:
    """The real delta-rs store the CLI and the executor use (no fake: the workflow's guarantees are its commits')."""
    from pipelines.tables.rust_engine import RustTableStore

    return RustTableStore(str(tmp_path / "wh"))


def actions(store: TableStore, plan_id: str) -> list[tuple[str, str, str | None]]:
    return [(r["actor"], r["action"], r["to_status"]) for r in approval.audit_rows(store, plan_id)]


def test_register_then_approve_records_every_transition(store: TableStore) -> None:
    p = plan()
    rec = approval.register_plan(store, p, actor="detector", policy=PolicyConfig(), now=T0)
    assert (rec.status, rec.content_hash, rec.item_count, rec.total_bytes) == ("proposed", p.content_hash, 2, 200)
    rec = approval.approve(store, "p1", by="bob", policy=PolicyConfig(), comment="lgtm", now=NOW)
    assert rec.status == "approved" and rec.approvals == ("bob",)
    assert actions(store, "p1") == [("detector", "register", "proposed"), ("bob", "approve", "approved")]
    assert approval.audit_rows(store, "p1")[-1]["content_hash"] == p.content_hash
    assert approval.audited_approvers(store, "p1", p.content_hash) == ("bob",)
    assert len(store.read_rows("gc_plan_items", {"plan_id": "p1"})) == 2


def test_register_stores_the_rows_plan_row_and_plan_item_table_build(store: TableStore) -> None:
    p = plan().with_hash()
    approval.register_plan(store, p, actor="detector", policy=PolicyConfig(), now=NOW)
    row = approval.plan_row(p, PolicyConfig(), at=NOW)
    items = approval.plan_item_table(p).to_pylist()
    assert {name for name in ALL_TABLES if store.exists(name)} == set(approval.TABLES)
    [stored] = store.read_rows("gc_plans", {"plan_id": "p1"})
    assert stored == row
    assert approval.plan_table(p, PolicyConfig(), at=NOW).to_pylist() == [row]  # the JSON as one Arrow buffer
    assert approval.plan_row(p, PolicyConfig())["updated_at"] == p.created_at
    by_id = itemgetter("item_id")
    assert sorted(store.read_rows("gc_plan_items", {"plan_id": "p1"}), key=by_id) == sorted(items, key=by_id)


def test_registering_identical_content_twice_is_a_no_op(store: TableStore) -> None:
    approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
    approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
    assert len(store.read_rows("gc_plans")) == 1
    assert [a for _, a, _ in actions(store, "p1")] == ["register"]


def test_self_approval_is_refused_and_audited(store: TableStore) -> None:
    approval.register_plan(store, plan(author="alice"), actor="alice", policy=PolicyConfig(), now=T0)
    with pytest.raises(PolicyViolation, match=r"^\[approver_differs_from_author\]"):
        approval.approve(store, "p1", by="alice", policy=PolicyConfig(), now=NOW)
    assert approval.get_plan(store, "p1").status == "proposed"
    assert actions(store, "p1")[-1] == ("alice", "approve_refused", None)
    relaxed = PolicyConfig(approver_must_differ_from_author=False)
    assert approval.approve(store, "p1", by="alice", policy=relaxed, now=NOW).status == "approved"


def test_two_approvals_required_from_distinct_people(store: TableStore) -> None:
    policy = PolicyConfig(approvals_required=2)
    approval.register_plan(store, plan(), actor="d", policy=policy, now=T0)
    assert approval.approve(store, "p1", by="bob", policy=policy, now=NOW).status == "proposed"
    with pytest.raises(PolicyViolation, match=r"^\[distinct_approvers\]"):
        approval.approve(store, "p1", by="bob", policy=policy, now=NOW)
    rec = approval.approve(store, "p1", by="carol", policy=policy, now=NOW)
    assert rec.status == "approved" and rec.approvals == ("bob", "carol")


def test_expired_plan_is_refused_and_marked_expired(store: TableStore) -> None:
    policy = PolicyConfig(plan_expiry_ms="2d")
    approval.register_plan(store, plan(), actor="d", policy=policy, now=T0)
    with pytest.raises(PolicyViolation, match=r"^\[plan_expiry\]"):
        approval.approve(store, "p1", by="bob", policy=policy, now=T0 + timedelta(days=2))
    assert approval.get_plan(store, "p1").status == "expired"
    # the plan's own expires_at is honoured too when it is earlier than the policy's
    approval.register_plan(store, plan("p2", expires_in=timedelta(hours=1)), actor="d", policy=policy, now=T0)
    with pytest.raises(PolicyViolation, match=r"^\[plan_expiry\]"):
        approval.approve(store, "p2", by="bob", policy=policy, now=T0 + timedelta(hours=2))


@pytest.mark.parametrize(
    ("policy", "items", "rule"),
    [
        (PolicyConfig(max_plan_bytes=150), None, "max_plan_bytes"),
        (PolicyConfig(max_plan_items=1), None, "max_plan_items"),
        (PolicyConfig(max_broker_items=1), (item("a", broker=1), item("b", broker=2), item("c", broker=2)),
         "max_broker_items"),
        (PolicyConfig(max_broker_bytes=150), (item("a", broker=1, size=100), item("b", broker=2, size=200)),
         "max_broker_bytes"),
        (PolicyConfig(protected_topic_patterns=("pay.*",)), (item("a", topic="payments"),), "protected_topic"),
        (PolicyConfig(), (item("a", topic="__consumer_offsets"),), "protected_topic"),
    ],
)
def test_budgets_and_protected_topics_refuse_naming_the_rule(store: TableStore, policy, items, rule) -> None:
    approval.register_plan(store, plan(items=items), actor="d", policy=policy, now=T0)
    with pytest.raises(PolicyViolation, match=rf"^\[{rule}\]"):
        approval.approve(store, "p1", by="bob", policy=policy, now=NOW)
    assert approval.get_plan(store, "p1").status == "proposed"


def test_grace_below_policy_minimum_is_refused(store: TableStore) -> None:
    policy = PolicyConfig(min_grace_ms="2d")
    approval.register_plan(store, plan(), actor="d", policy=policy, now=T0)
    with pytest.raises(PolicyViolation, match=r"^\[min_grace\]"):
        approval.approve(store, "p1", by="bob", policy=policy, now=NOW, detect_grace_ms=86_400_000)
    assert approval.approve(store, "p1", by="bob", policy=policy, now=NOW, detect_grace_ms=2 * 86_400_000).approvals


def test_min_grace_floor_cannot_be_configured_away() -> None:
    with pytest.raises(ValueError, match="floor"):
        PolicyConfig(min_grace_ms="10m")


def test_reject_needs_a_reason_and_is_final(store: TableStore) -> None:
    approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
    with pytest.raises(PolicyViolation, match=r"^\[reject_reason\]"):
        approval.reject(store, "p1", by="bob", reason=" ", now=NOW)
    assert approval.reject(store, "p1", by="bob", reason="too big", now=NOW).status == "rejected"
    with pytest.raises(PolicyViolation, match=r"^\[state_machine\]"):
        approval.approve(store, "p1", by="carol", policy=PolicyConfig(), now=NOW)


def test_changed_content_needs_a_new_approval(store: TableStore) -> None:
    approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
    approval.approve(store, "p1", by="bob", policy=PolicyConfig(), now=NOW)
    changed = plan(items=(item("i1"), item("i2", partition=1), item("i3", partition=2)))
    rec = approval.register_plan(store, changed, actor="d", policy=PolicyConfig(), now=NOW)
    assert (rec.status, rec.approvals, rec.content_hash) == ("proposed", (), changed.content_hash)
    assert approval.audited_approvers(store, "p1", changed.content_hash) == ()
    assert len(store.read_rows("gc_plan_items", {"plan_id": "p1"})) == 3


def test_newer_plan_supersedes_older_unapproved_ones_only(store: TableStore) -> None:
    policy = PolicyConfig()
    approval.register_plan(store, plan("old1", created_at=T0), actor="d", policy=policy, now=T0)
    approval.register_plan(store, plan("old2", created_at=T0 + timedelta(minutes=1)), actor="d", policy=policy, now=T0)
    approval.approve(store, "old2", by="bob", policy=policy, now=NOW)
    approval.register_plan(store, plan("new", created_at=T0 + timedelta(minutes=5)), actor="d", policy=policy, now=NOW)
    approval.register_plan(store, plan("other", cluster="c2"), actor="d", policy=policy, now=NOW)
    status = {r.plan_id: (r.status, r.superseded_by) for r in approval.list_plans(store)}
    assert status == {"old1": ("superseded", "old2"), "old2": ("approved", None), "new": ("proposed", None),
                      "other": ("proposed", None)}


def test_listed_plans_read_their_json_only_when_asked_and_only_as_listed(store: TableStore) -> None:
    """``list_plans`` leaves every plan's JSON in the table; ``record.plan()`` reads that one plan, checks it
    against the hash that was listed and refuses a plan that was re-registered (or tampered with) meanwhile."""
    p, q = plan("p1"), plan("p2", created_at=T0 + timedelta(minutes=1))
    for each in (p, q):
        approval.register_plan(store, each, actor="d", policy=PolicyConfig(), now=T0)
    listed = approval.list_plans(store)
    assert [(r.plan_id, r.plan_json) for r in listed] == [("p1", None), ("p2", None)]
    assert [r.plan() for r in listed] == [p, q]
    changed = plan("p2", created_at=q.created_at, items=(item("i9"),))
    approval.register_plan(store, changed, actor="d", policy=PolicyConfig(), now=NOW)
    with pytest.raises(PlanError, match="changed in gc_plans since it was listed"):
        listed[1].plan()
    assert approval.list_plans(store)[1].plan() == changed
    store.update("gc_plans", {"plan_id": "p1"}, {"plan_json": p.to_json().replace('"orders"', '"orderz"')})
    with pytest.raises(PlanError, match=r"tampered|does not match"):
        listed[0].plan()


def test_tampered_stored_plan_cannot_be_approved(store: TableStore) -> None:
    approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
    row = approval.get_plan(store, "p1")
    store.update("gc_plans", {"plan_id": "p1"}, {"plan_json": row.plan_json.replace('"orders"', '"orderz"')})
    with pytest.raises(PlanError, match=r"tampered|does not match"):
        approval.approve(store, "p1", by="bob", policy=PolicyConfig(), now=NOW)


def test_a_row_written_by_another_emitter_without_updated_at_can_be_approved(store: TableStore) -> None:
    """Plan emission may write gc_plans rows itself; a NULL revision token still gives a compare-and-set."""
    p = plan()
    store.ensure_tables(approval.TABLES)
    store.append("gc_plans", [{"plan_id": "p1", "cluster": "c1", "created_at": T0, "created_by": "alice",
                               "run_id": "run-1", "content_hash": p.content_hash, "status": "proposed",
                               "item_count": 2, "total_bytes": 200, "plan_json": p.to_json()}])
    assert approval.approve(store, "p1", by="bob", policy=PolicyConfig(), now=NOW).status == "approved"
