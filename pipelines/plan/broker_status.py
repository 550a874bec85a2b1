"""Per-broker state of an applied plan, and the plan status derived from it.

A plan spans brokers that apply, restore and purge independently, at the same time or days apart. Each executor
command appends ONE audit row for its broker (``action = broker_state``, ``actor = executor@broker-<id>``,
``to_status`` = the broker's state), an append that never conflicts, so every broker's work has its row. The plan's
``status`` is then recomputed from the newest row of every broker (:func:`aggregate`) with a compare-and-set loop
that re-reads the rows on every attempt, so the last of several racing executors always writes the status that
accounts for all of them.

Broker states: ``applying``; after an apply ``applied`` (all its items quarantined), ``partially_applied`` or
``failed`` (none); after a restore or purge that left nothing of the plan in its quarantine, ``restored`` (every
item came back) or ``purged``. The plan is ``restored`` only when every broker that applied anything is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from pipelines.errors import PlanError
from pipelines.plan import approval as A
from pipelines.tables.base import TableStore

BROKER_STATE = "broker_state"
BROKER_STATES = frozenset({A.APPLYING, A.APPLIED, A.PARTIALLY_APPLIED, A.FAILED, A.RESTORED, A.PURGED})


def actor(broker_id: int) -> str:
    return f"executor@broker-{broker_id}"


def broker_states(audit: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """broker id → its newest ``broker_state`` (rows of other actions, or unknown actors, are ignored)."""
    newest: dict[int, tuple[datetime, str]] = {}
    for row in audit:
        who = str(row.get("actor") or "")
        if row.get("action") != BROKER_STATE or not who.startswith("executor@broker-"):
            continue
        try:
            broker = int(who.rsplit("-", 1)[1])
        except ValueError:
            continue
        state = row.get("to_status")
        if state in BROKER_STATES and (broker not in newest or row["at"] >= newest[broker][0]):
            newest[broker] = (row["at"], state)
    return {b: s for b, (_, s) in newest.items()}


def aggregate(states: Mapping[int, str], plan_brokers: Iterable[int]) -> str | None:
    """The plan status the brokers' states add up to; None when no broker has done anything yet."""
    values = set(states.values())
    if not values:
        return None
    if A.APPLYING in values:
        return A.APPLYING
    if values == {A.RESTORED}:
        return A.RESTORED
    if A.PURGED in values and values <= {A.RESTORED, A.PURGED, A.FAILED}:
        return A.PURGED
    if A.RESTORED in values:
        return A.PARTIALLY_RESTORED
    if set(plan_brokers) <= states.keys() and values <= {A.APPLIED, A.PURGED}:
        return A.APPLIED
    if values & {A.APPLIED, A.PARTIALLY_APPLIED, A.PURGED}:
        return A.PARTIALLY_APPLIED
    return A.FAILED


def record(store: TableStore, plan_id: str, broker_id: int, state: str, comment: str = "",
           now: datetime | None = None) -> A.PlanRecord:
    """Append this broker's state and bring the plan status up to date; returns the plan as it now stands.

    Raises:
        PlanError: unknown plan, or the plan is in a status no executor may change (e.g. ``rejected``).
    """
    if state not in BROKER_STATES:
        raise ValueError(f"not a broker state: {state}")
    record = A.get_plan(store, plan_id)
    at = now or datetime.now(timezone.utc)
    A.append_audit(store, plan_id, at, actor(broker_id), BROKER_STATE, None, state, comment, record.content_hash)
    return refresh(store, plan_id, actor=actor(broker_id), now=now)


def refresh(store: TableStore, plan_id: str, *, actor: str, now: datetime | None = None) -> A.PlanRecord:
    """Set the plan status to what its brokers' states add up to (compare-and-set, re-read on every attempt)."""
    for _ in range(A.MAX_ATTEMPTS):
        record = A.get_plan(store, plan_id)
        brokers = {i.broker_id for i in record.plan().items}
        target = aggregate(broker_states(A.audit_rows(store, plan_id)), brokers)
        if target is None or target == record.status:
            return record
        if target not in A.TRANSITIONS[record.status]:
            raise A.rules.refuse("state_machine", f"plan {plan_id} is {record.status}; its brokers' states say "
                                 f"{target}, which it cannot become")
        at = now or datetime.now(timezone.utc)
        stamp = A.next_stamp(record.updated_at, at)
        guard = {"plan_id": plan_id, "status": record.status, "content_hash": record.content_hash,
                 "updated_at": record.updated_at}
        if store.update("gc_plans", guard, {"status": target, "updated_at": stamp}) == 1:
            A.append_audit(store, plan_id, stamp, actor, f"set_{target}", record.status, target, "from broker states",
                     record.content_hash)
            return A.get_plan(store, plan_id)
    raise PlanError(f"plan {plan_id}: gave up after {A.MAX_ATTEMPTS} conflicting concurrent status updates")
