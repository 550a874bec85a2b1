"""The plan state machine, kept in Delta (``gc_plans``) with every attempt recorded in ``gc_plan_audit``.

States: ``proposed → approved | rejected | expired | superseded``, then ``applying → applied | partially_applied |
failed``, and ``restored``. A transition is a compare-and-set: the ``gc_plans`` row is updated only where its
``status``, ``content_hash`` and ``updated_at`` are still what the caller read. If another writer got there first
the update matches no row, the row is read again and the decision re-validated, so two racing decisions never
both win and neither is lost: the loser gets a :class:`PolicyViolation` and its attempt is audited.

Approvals bind to ``content_hash``: re-registering a plan id with other content resets its approvals and status.

Not guaranteed: the ``gc_plans`` update and its audit row are two Delta commits (two tables); a process killed
between them leaves a transition without its audit row. The executor therefore re-derives approvals from the
audit table too (:func:`audited_approvers`), so a missing audit row can block an apply but never enable one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol

from pipelines.config.models import PolicyConfig
from pipelines.errors import PlanError, PolicyViolation
from pipelines.plan import policy as rules
from pipelines.plan.model import GcPlan, compute_content_hash
from pipelines.tables.base import TableStore
from pipelines.tables.schemas import GC_PLAN_ITEMS, GC_PLANS

if TYPE_CHECKING:
    import pyarrow as pa

PROPOSED, APPROVED, REJECTED, EXPIRED, SUPERSEDED = "proposed", "approved", "rejected", "expired", "superseded"
APPLYING, APPLIED, FAILED, RESTORED = "applying", "applied", "failed", "restored"
PARTIALLY_APPLIED, PARTIALLY_RESTORED, PURGED = "partially_applied", "partially_restored", "purged"

#: Statuses the executors' per-broker states add up to (``pipelines.plan.broker_status``); RESTORED and PURGED are
#: final (nothing of the plan is left in quarantine).
EXECUTOR_STATUSES = frozenset({APPLYING, APPLIED, PARTIALLY_APPLIED, FAILED, PARTIALLY_RESTORED, RESTORED, PURGED})

#: status → statuses it may move to.
TRANSITIONS: dict[str, frozenset[str]] = {
    PROPOSED: frozenset({PROPOSED, APPROVED, REJECTED, EXPIRED, SUPERSEDED}),
    APPROVED: frozenset({APPLYING, EXPIRED, PROPOSED}),
    **{s: EXECUTOR_STATUSES for s in (APPLYING, APPLIED, PARTIALLY_APPLIED, FAILED, PARTIALLY_RESTORED)},
    REJECTED: frozenset(),
    EXPIRED: frozenset(),
    SUPERSEDED: frozenset(),
    RESTORED: frozenset(),
    PURGED: frozenset(),
}
#: Statuses in which an executor may (continue to) apply a plan.
EXECUTABLE = frozenset({APPROVED, APPLYING, PARTIALLY_APPLIED, FAILED, APPLIED, PARTIALLY_RESTORED})

TABLES = ("gc_plans", "gc_plan_items", "gc_plan_audit")
#: a ``gc_plans`` row without the plan's JSON (tens of MB for a fleet's plan)
_LISTED_COLUMNS = tuple(c for c in GC_PLANS.column_names if c != "plan_json")
MAX_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class PlanRecord:
    """One ``gc_plans`` row, typed."""

    plan_id: str
    cluster: str
    status: str
    content_hash: str
    approvals: tuple[str, ...]
    created_at: datetime
    created_by: str
    updated_at: datetime | None
    expires_at: datetime | None
    superseded_by: str | None
    item_count: int
    total_bytes: int
    #: the stored plan; ``None`` on a listed record (:func:`list_plans`): :meth:`plan` reads it then from ``store``
    plan_json: str | None
    store: TableStore | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_row(cls, row: dict[str, Any], store: TableStore | None = None) -> PlanRecord:
        return cls(
            plan_id=row["plan_id"], cluster=row["cluster"], status=row["status"],
            content_hash=row["content_hash"], approvals=tuple(row.get("approvals") or ()),
            created_at=row["created_at"], created_by=row["created_by"], updated_at=row["updated_at"],
            expires_at=row.get("expires_at"), superseded_by=row.get("superseded_by"),
            item_count=row.get("item_count") or 0, total_bytes=row.get("total_bytes") or 0,
            plan_json=row.get("plan_json"), store=store,
        )

    def _plan_json(self) -> str:
        if self.plan_json is not None:
            return self.plan_json
        if self.store is None:
            raise PlanError(f"plan {self.plan_id}: listed without its JSON and without a store to read it from")
        rows = self.store.read_rows("gc_plans", {"plan_id": self.plan_id}, columns=("content_hash", "plan_json"))
        if [r["content_hash"] for r in rows] != [self.content_hash]:
            raise PlanError(f"plan {self.plan_id}: changed in gc_plans since it was listed; list the plans again")
        return rows[0]["plan_json"]

    def plan(self) -> GcPlan:
        """The stored plan, parsed; a plan whose JSON does not match its own hash raises PlanError."""
        try:
            plan = GcPlan.from_json(self._plan_json())
        except ValueError as exc:
            raise PlanError(f"plan {self.plan_id}: stored plan JSON is invalid or tampered: "
                            f"{str(exc).splitlines()[0]}") from None
        if compute_content_hash(plan) != self.content_hash:
            raise PlanError(f"plan {self.plan_id}: stored plan content does not match its recorded content_hash")
        return plan


def _now() -> datetime:
    return datetime.now(timezone.utc)


def get_plan(store: TableStore, plan_id: str, *, with_json: bool = True) -> PlanRecord:
    """The plan's ``gc_plans`` row; without its JSON when ``with_json`` is false (``record.plan()`` reads it then).

    Raises:
        PlanError: an unknown id (also when no plan was ever registered in this warehouse).
    """
    if not store.exists("gc_plans"):
        raise PlanError(f"no plan {plan_id!r}: the warehouse {store.warehouse} has no gc_plans table")
    rows = store.read_rows("gc_plans", {"plan_id": plan_id}, columns=None if with_json else _LISTED_COLUMNS)
    if not rows:
        raise PlanError(f"no plan {plan_id!r} in gc_plans")
    if len(rows) > 1:
        raise PlanError(f"plan {plan_id!r} has {len(rows)} rows in gc_plans (table damaged)")
    return PlanRecord.from_row(rows[0], store)


def list_plans(store: TableStore, cluster: str | None = None) -> list[PlanRecord]:
    """Every plan (of ``cluster``); none when no plan was ever registered in this warehouse.

    The plans' JSON is not read (a fleet's nightly plan is tens of MB): ``record.plan()`` reads the one it needs.
    """
    if not store.exists("gc_plans"):
        return []
    rows = store.read_rows("gc_plans", {"cluster": cluster} if cluster else None, columns=_LISTED_COLUMNS)
    records = [PlanRecord.from_row(r, store) for r in rows]
    return sorted(records, key=lambda r: (r.created_at, r.plan_id))


def audit_rows(store: TableStore, plan_id: str) -> list[dict[str, Any]]:
    rows = store.read_rows("gc_plan_audit", {"plan_id": plan_id})
    return sorted(rows, key=lambda r: r["at"])


def audited_approvers(store: TableStore, plan_id: str, content_hash: str) -> tuple[str, ...]:
    """Distinct actors whose approval of exactly ``content_hash`` was accepted, from the audit table."""
    names = {r["actor"] for r in audit_rows(store, plan_id)
             if r["action"] == "approve" and r["content_hash"] == content_hash}
    return tuple(sorted(names))


#: audit actions whose actor declared themselves an author of the plan: its registrant and its proposers
AUTHOR_ACTIONS = frozenset({"register", "content_changed", "propose"})


def authors_of(store: TableStore, plan: GcPlan) -> frozenset[str]:
    """The plan's ``created_by`` and every actor who registered or proposed it (audited). The workflow refuses
    their approvals; the executor knows authors from signed proposals only (:mod:`pipelines.signing.decision`)."""
    audited = {r["actor"].strip() for r in audit_rows(store, plan.plan_id) if r["action"] in AUTHOR_ACTIONS}
    return frozenset({plan.created_by.strip(), *audited})


def check_not_author(plan: GcPlan, policy: PolicyConfig, approver: str, authors: frozenset[str]) -> None:
    """``[approver_differs_from_author]`` when ``approver`` registered, proposed or (by its claim) created the plan."""
    name = approver.strip()
    if policy.approver_must_differ_from_author and name and name in authors:
        raise rules.refuse("approver_differs_from_author", f"{name} registered, proposed or created plan "
                           f"{plan.plan_id} and cannot approve it")


def append_audit(store: TableStore, plan_id: str, at: datetime, actor: str, action: str, from_status: str | None,
           to_status: str | None, comment: str, content_hash: str | None) -> None:
    store.append("gc_plan_audit", [{
        "plan_id": plan_id, "at": at, "actor": actor, "action": action, "from_status": from_status,
        "to_status": to_status, "comment": comment, "content_hash": content_hash,
    }])


def record_event(store: TableStore, record: PlanRecord, *, actor: str, action: str, comment: str = "",
                 now: datetime | None = None) -> datetime:
    """An audit row that changes no state (e.g. a signed proposal) for ``record`` as read; returns its time."""
    at = now or _now()
    append_audit(store, record.plan_id, at, actor, action, record.status, record.status, comment,
                 record.content_hash)
    return at


def next_stamp(previous: datetime | None, now: datetime) -> datetime:
    """A new ``updated_at``: now, but strictly after the previous one (it is the row's revision token)."""
    return now if previous is None or now > previous else previous + timedelta(microseconds=1)


Decide = Callable[[PlanRecord], tuple[str, dict[str, Any]]]


class ReviewView(Protocol):
    """The review state as the signatures show it (``pipelines.signing.review_state.SignedReview``), used when
    ``executor.require_signatures`` is on: a forged ``gc_plans.status``/``approvals`` or audit row neither blocks a
    signed decision nor counts as one."""

    def view(self, store: TableStore, record: PlanRecord) -> PlanRecord:
        """``record`` with the status and approvals its verified signatures give it."""

    def authors(self, store: TableStore, record: PlanRecord) -> frozenset[str]:
        """Its ``created_by``, its registrants and the signers of its verified signed proposals."""


def _transition(store: TableStore, plan_id: str, *, actor: str, action: str, comment: str, decide: Decide,
                now: datetime | None, review: ReviewView | None = None) -> PlanRecord:
    """Compare-and-set loop. ``decide(record)`` returns (new status, extra column values) or raises a refusal.

    With ``review``, ``decide`` and the state machine see the plan as its signatures show it; the compare-and-set
    still guards the row as stored.
    """
    for _ in range(MAX_ATTEMPTS):
        stored = get_plan(store, plan_id, with_json=False)
        record = review.view(store, stored) if review is not None else stored
        at = now or _now()
        try:
            to_status, values = decide(record)
            if to_status not in TRANSITIONS[record.status]:
                raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}; cannot {action} it")
        except PlanError as exc:
            append_audit(store, plan_id, at, actor, f"{action}_refused", record.status, None, str(exc),
                   record.content_hash)
            raise
        stamp = next_stamp(stored.updated_at, at)
        guard = {"plan_id": plan_id, "status": stored.status, "content_hash": stored.content_hash,
                 "updated_at": stored.updated_at}
        if store.update("gc_plans", guard, {"status": to_status, "updated_at": stamp, **values}) == 1:
            append_audit(store, plan_id, stamp, actor, action, record.status, to_status, comment, record.content_hash)
            return get_plan(store, plan_id, with_json=False)
    raise PlanError(f"plan {plan_id}: gave up after {MAX_ATTEMPTS} conflicting concurrent transitions")


def register_plan(store: TableStore, plan: GcPlan, *, actor: str, policy: PolicyConfig,
                  now: datetime | None = None, review: ReviewView | None = None) -> PlanRecord:
    """Load a plan into the tables as ``proposed`` (idempotent for identical content) and supersede older ones.

    A plan id already present with other content is replaced only while it is proposed or approved; its
    approvals are dropped (they were bound to the old hash).
    """
    plan = plan if plan.content_hash else plan.with_hash()
    store.ensure_tables(TABLES)
    at = now or _now()
    existing = store.read_rows("gc_plans", {"plan_id": plan.plan_id}, columns=("content_hash",))
    if not existing:  # items and audit first: the plan shows as proposed only once everything else is written
        # each table's rows are built just before their write and dropped after it (a large plan's two are big)
        store.overwrite_partition("gc_plan_items", {"plan_id": plan.plan_id}, plan_item_table(plan))
        append_audit(store, plan.plan_id, at, actor, "register", None, PROPOSED, "", plan.content_hash)
        store.append("gc_plans", plan_table(plan, policy, at=at))
    elif existing[0]["content_hash"] != plan.content_hash:
        def replace(record: PlanRecord) -> tuple[str, dict[str, Any]]:
            if record.status not in (PROPOSED, APPROVED):
                raise rules.refuse("immutable_after_apply", f"plan {plan.plan_id} is {record.status}; "
                                   "its content can no longer change (register it under a new id)")
            return PROPOSED, {"content_hash": plan.content_hash, "plan_json": plan.to_json(), "approvals": [],
                              "item_count": len(plan.items), "total_bytes": plan.total_bytes,
                              "expires_at": rules.expiry_of(plan, policy)}

        _transition(store, plan.plan_id, actor=actor, action="content_changed",
                    comment=f"new content {plan.content_hash}; approvals reset", decide=replace, now=now, review=review)
        store.overwrite_partition("gc_plan_items", {"plan_id": plan.plan_id}, plan_item_table(plan))
    supersede_older(store, plan, actor=actor, now=now, review=review)
    return get_plan(store, plan.plan_id, with_json=False)


def supersede_older(store: TableStore, plan: GcPlan, *, actor: str, now: datetime | None = None,
                    review: ReviewView | None = None) -> list[str]:
    """Among the cluster's proposed plans, the newest (created_at, then plan_id) supersedes every other one.

    Returns the ids marked superseded. A plan approved or decided meanwhile is left alone (its transition
    refuses) since only unapproved plans are superseded. With ``review``, "proposed" and "approved" are what the
    signatures say, whatever ``gc_plans.status`` records.
    """
    where = {"cluster": plan.cluster} if review is not None else {"cluster": plan.cluster, "status": PROPOSED}
    proposed = [(r["created_at"], r["plan_id"]) for r in store.read_rows(  # not the plans' JSON: only their order
        "gc_plans", where, columns=("created_at", "plan_id"))]
    if len(proposed) < 2:
        return []
    _, newest_id = max(proposed)
    done: list[str] = []
    for _, plan_id in proposed:
        if plan_id == newest_id:
            continue

        def mark(record: PlanRecord) -> tuple[str, dict[str, Any]]:
            if record.status != PROPOSED:
                raise rules.refuse("state_machine", f"plan {record.plan_id} is {record.status}; not superseded")
            return SUPERSEDED, {"superseded_by": newest_id}

        try:
            _transition(store, plan_id, actor=actor, action="supersede", comment=f"by {newest_id}",
                        decide=mark, now=now, review=review)
        except PolicyViolation:
            continue
        done.append(plan_id)
    return done


def approve(store: TableStore, plan_id: str, *, by: str, policy: PolicyConfig, comment: str = "",
            now: datetime | None = None, detect_grace_ms: int | None = None,
            review: ReviewView | None = None) -> PlanRecord:
    """Add ``by``'s approval; the plan becomes ``approved`` once ``policy.approvals_required`` distinct people did.

    Raises:
        PolicyViolation: a rule refuses (the message names it); an expired plan is first marked ``expired``.
        PlanError: unknown plan, or stored content that does not match its hash.
    """
    clock = now or _now()
    expired: list[bool] = []

    def decide(record: PlanRecord) -> tuple[str, dict[str, Any]]:
        plan = record.plan()
        if record.status == PROPOSED and clock >= rules.expiry_of(plan, policy):
            expired.append(True)
            return EXPIRED, {}
        if record.status != PROPOSED:
            raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}; only a proposed plan can be "
                               "approved")
        rules.check_plan(plan, policy, detect_grace_ms=detect_grace_ms)
        rules.check_approver(plan, policy, by, record.approvals)
        check_not_author(plan, policy, by, review.authors(store, record) if review else authors_of(store, plan))
        approvals = [*record.approvals, by.strip()]
        status = APPROVED if len(approvals) >= policy.approvals_required else PROPOSED
        return status, {"approvals": approvals}

    record = _transition(store, plan_id, actor=by, action="approve", comment=comment, decide=decide, now=now,
                         review=review)
    if expired:
        append_audit(store, plan_id, _now(), by, "approve_refused", EXPIRED, None, "plan expired", record.content_hash)
        raise rules.refuse("plan_expiry", f"plan {plan_id} expired at {record.expires_at}; it was marked expired")
    return record


def settle_approved(store: TableStore, plan_id: str, review: ReviewView, *, actor: str,
                    now: datetime | None = None) -> PlanRecord:
    """After a signature is stored: when the signatures now make a plan ``approved`` that ``gc_plans`` still records
    as ``proposed`` (two approvers raced, each transition saw only the other's signature missing), record it so
    (compare-and-set, audited ``approve_settled``). Returns the plan as its signatures show it."""
    for _ in range(MAX_ATTEMPTS):
        stored = get_plan(store, plan_id, with_json=False)
        record = review.view(store, stored)
        if not (record.status == APPROVED and stored.status == PROPOSED):
            return record
        at = now or _now()
        stamp = next_stamp(stored.updated_at, at)
        guard = {"plan_id": plan_id, "status": stored.status, "content_hash": stored.content_hash,
                 "updated_at": stored.updated_at}
        if store.update("gc_plans", guard, {"status": APPROVED, "approvals": list(record.approvals),
                                            "updated_at": stamp}) == 1:
            append_audit(store, plan_id, stamp, actor, "approve_settled", PROPOSED, APPROVED,
                         "approved by the verified signatures", stored.content_hash)
    return review.view(store, get_plan(store, plan_id, with_json=False))


def reject(store: TableStore, plan_id: str, *, by: str, reason: str, now: datetime | None = None,
           review: ReviewView | None = None) -> PlanRecord:
    """Reject a proposed plan. Raises PolicyViolation without a reason or when the plan is already decided."""
    def decide(record: PlanRecord) -> tuple[str, dict[str, Any]]:
        if not by.strip():
            raise rules.refuse("approver_named", "a rejection needs a non-empty --by NAME")
        if not reason.strip():
            raise rules.refuse("reject_reason", "a rejection needs a --reason")
        if record.status != PROPOSED:
            raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}; only a proposed plan can be "
                               "rejected")
        return REJECTED, {}

    return _transition(store, plan_id, actor=by, action="reject", comment=reason, decide=decide, now=now,
                       review=review)


def set_status(store: TableStore, plan_id: str, to_status: str, *, actor: str, comment: str = "",
               allowed_from: Iterable[str] | None = None, now: datetime | None = None) -> PlanRecord:
    """Executor-side transition (``applying``, ``applied`` ...). A no-op if the plan is already ``to_status``."""
    allowed = frozenset(allowed_from) if allowed_from is not None else None

    def decide(record: PlanRecord) -> tuple[str, dict[str, Any]]:
        if allowed is not None and record.status not in allowed:
            raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}; expected one of "
                               f"{sorted(allowed)}")
        return to_status, {}

    current = get_plan(store, plan_id)
    if current.status == to_status:
        return current
    return _transition(store, plan_id, actor=actor, action=f"set_{to_status}", comment=comment, decide=decide,
                       now=now)


def plan_row(plan: GcPlan, policy: PolicyConfig, *, at: datetime | None = None, with_json: bool = True
             ) -> dict[str, Any]:
    """The ``gc_plans`` row of a newly proposed plan (``updated_at`` = ``at``, default its ``created_at``); without
    ``plan_json`` unless ``with_json``."""
    row = {
        "plan_id": plan.plan_id, "cluster": plan.cluster, "created_at": plan.created_at,
        "created_by": plan.created_by, "run_id": plan.run_id, "metadata_offset": plan.metadata_offset,
        "content_hash": plan.content_hash, "status": PROPOSED, "item_count": len(plan.items),
        "total_bytes": plan.total_bytes, "expires_at": rules.expiry_of(plan, policy), "superseded_by": None,
        "approvals": [], "updated_at": plan.created_at if at is None else at,
    }
    return {**row, "plan_json": plan.to_json()} if with_json else row


def plan_table(plan: GcPlan, policy: PolicyConfig, *, at: datetime | None = None) -> pa.Table:
    """:func:`plan_row` as a one-row table whose ``plan_json`` is encoded chunk by chunk into its Arrow buffer: a
    fleet plan's document (51 MB at 100k items) is never a Python string besides."""
    import pyarrow as pa

    schema = GC_PLANS.to_arrow()
    document = bytearray()
    for chunk in plan.iter_json():
        document += chunk.encode("utf-8")
    offsets = pa.array([0, len(document)], pa.int64()).buffers()[1]
    table = pa.Table.from_pylist([plan_row(plan, policy, at=at, with_json=False)],
                                 schema=pa.schema([f for f in schema if f.name != "plan_json"]))
    # built with 64-bit offsets, then cast: the cast shares the bytes and refuses a document over 2 GiB
    column = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(document)]).cast(pa.string())
    return table.append_column(schema.field("plan_json"), column).select(schema.names)


def plan_item_table(plan: GcPlan) -> pa.Table:
    """The plan's ``gc_plan_items`` rows, built column by column (a 100k-item plan is never 100k dicts)."""
    import pyarrow as pa

    shared = {"plan_id": plan.plan_id, "cluster": plan.cluster}
    columns = {name: [shared[name]] * len(plan.items) if name in shared
               else [getattr(i, "class_" if name == "class" else name) for i in plan.items]
               for name in GC_PLAN_ITEMS.column_names}
    return pa.table(columns, schema=GC_PLAN_ITEMS.to_arrow())
