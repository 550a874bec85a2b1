"""Registering, proposing, approving and rejecting a plan by signing: build the statement, sign it, make the plan's
state transition (:mod:`pipelines.plan.approval`), then store the signature beside the audit row.

A signed proposal is what makes its signer the plan's author for every executor (a plan's ``created_by`` is an
unsigned claim): ``plans register --key`` signs one as the registrant, ``plans propose`` as whoever runs it, the
plan job with ``signing.service_key`` as the plan's ``created_by``.

The signature is made before the transition, so a key that cannot sign changes nothing; it is stored after, so a
refused transition stores no signature. A process killed between the transition and the store leaves an approval
without signature, which an executor requiring signatures does not count (it fails closed).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pipelines.config.models import PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.plan import approval
from pipelines.plan import policy as rules
from pipelines.plan.approval import PlanRecord, ReviewView
from pipelines.plan.model import GcPlan
from pipelines.signing.records import SignatureRow, store_signature
from pipelines.signing.signer import sign
from pipelines.signing.statement import Statement, StatementError
from pipelines.tables.base import TableStore

KeyPath = str | Path | None


def _seconds(at: datetime) -> datetime:
    return at.astimezone(timezone.utc).replace(microsecond=0)


def statement_for(plan: GcPlan, action: str, signer: str, policy: PolicyConfig, *, now: datetime,
                  brokers: Iterable[int] | None = None, valid_for_ms: int | None = None) -> Statement:
    """The statement ``signer`` signs about ``plan``: by default for every broker of the plan, until the plan's
    expiry (or ``valid_for_ms`` from now, when earlier). Raises PolicyViolation when it cannot be made."""
    if plan.cluster_id is None:
        raise rules.refuse("plan_cluster_id", f"plan {plan.plan_id} records no cluster_id; a signature could not "
                           "bind it to one cluster")
    in_plan = {i.broker_id for i in plan.items}
    chosen = set(brokers) if brokers else in_plan
    if not chosen or not chosen <= in_plan:
        raise rules.refuse("signature_brokers", f"brokers {sorted(chosen)} are not among the plan's brokers "
                           f"{sorted(in_plan)}")
    expires = rules.expiry_of(plan, policy)
    if valid_for_ms is not None:
        expires = min(expires, now + timedelta(milliseconds=valid_for_ms))
    try:
        return Statement(action=action, cluster=plan.cluster, cluster_id=plan.cluster_id, plan_id=plan.plan_id,
                         content_hash=plan.with_hash().content_hash, brokers=tuple(sorted(chosen)),
                         expires_at=_seconds(expires), signer=signer.strip(), signed_at=_seconds(now))
    except StatementError as exc:
        raise rules.refuse("signable_statement", f"cannot sign plan {plan.plan_id}: {exc}") from None


def approve_signed(store: TableStore, plan_id: str, *, by: str, policy: PolicyConfig, key: KeyPath, comment: str = "",
                   brokers: Iterable[int] | None = None, valid_for_ms: int | None = None,
                   detect_grace_ms: int | None = None, now: datetime | None = None,
                   review: ReviewView | None = None) -> tuple[PlanRecord, SignatureRow]:
    """Sign ``by``'s approval of the plan's current content, record it, store the signature.

    The cheap rules (state, approver) are checked before signing, so nobody touches a hardware key for an approval
    the workflow would refuse; :func:`approval.approve` checks everything again inside its compare-and-set.
    ``review``: judge state, approvals and authors from verified signatures (``executor.require_signatures``).
    """
    clock = now or datetime.now(timezone.utc)
    stored = approval.get_plan(store, plan_id)
    record = review.view(store, stored) if review is not None else stored
    plan = record.plan()
    try:
        if record.status != approval.PROPOSED:
            raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}")
        rules.check_unexpired(plan, policy, clock)
        rules.check_plan(plan, policy, detect_grace_ms=detect_grace_ms)
        rules.check_approver(plan, policy, by, record.approvals)
        authors = review.authors(store, record) if review is not None else approval.authors_of(store, plan)
        approval.check_not_author(plan, policy, by, authors)
    except PolicyViolation:
        # the workflow refuses this approval: let it do so itself, so the attempt is audited (and an expired plan
        # marked expired) exactly as an unsigned one would be
        approval.approve(store, plan_id, by=by, policy=policy, comment=comment, now=now,
                         detect_grace_ms=detect_grace_ms, review=review)
        raise
    signed = sign(statement_for(plan, "approve", by, policy, now=clock, brokers=brokers,
                                valid_for_ms=valid_for_ms), key=key)
    decided = approval.approve(store, plan_id, by=by, policy=policy, comment=comment, now=now,
                               detect_grace_ms=detect_grace_ms, review=review)
    row = store_signature(store, plan_id, decided.updated_at or clock, signed)
    if review is not None:
        decided = approval.settle_approved(store, plan_id, review, actor=by, now=now)
    return decided, row


def reject_signed(store: TableStore, plan_id: str, *, by: str, reason: str, policy: PolicyConfig, key: KeyPath,
                  now: datetime | None = None, review: ReviewView | None = None) -> tuple[PlanRecord, SignatureRow]:
    """Sign ``by``'s rejection; a valid signed rejection stops every executor that requires signatures."""
    clock = now or datetime.now(timezone.utc)
    stored = approval.get_plan(store, plan_id)
    record = review.view(store, stored) if review is not None else stored
    if record.status != approval.PROPOSED or not by.strip() or not reason.strip():
        approval.reject(store, plan_id, by=by, reason=reason, now=now, review=review)  # refuses naming the rule
        raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}; only a proposed plan is rejected")
    signed = sign(statement_for(record.plan(), "reject", by, policy, now=clock), key=key)
    decided = approval.reject(store, plan_id, by=by, reason=reason, now=now, review=review)
    return decided, store_signature(store, plan_id, decided.updated_at or clock, signed)


def propose_signed(store: TableStore, plan_id: str, *, policy: PolicyConfig, key: KeyPath, by: str | None = None,
                   now: datetime | None = None, review: ReviewView | None = None) -> tuple[PlanRecord, SignatureRow]:
    """Sign the plan as an author: ``by`` (default the plan's ``created_by``). Its signer is then never counted as
    an approver, by name or by key; an executor verifies that ``key`` is listed for ``by``."""
    clock = now or datetime.now(timezone.utc)
    stored = approval.get_plan(store, plan_id)
    record = review.view(store, stored) if review is not None else stored
    plan = record.plan()
    author = (by if by is not None else plan.created_by).strip()
    if record.status != approval.PROPOSED:
        raise rules.refuse("state_machine", f"plan {plan_id} is {record.status}: its author signs it only while it is "
                            "proposed, before any decision")
    signed = sign(statement_for(plan, "propose", author, policy, now=clock), key=key)
    at = approval.record_event(store, record, actor=author, action="propose", comment="signed proposal", now=now)
    return record, store_signature(store, plan_id, at, signed)


def register_signed(store: TableStore, plan: GcPlan, *, by: str, policy: PolicyConfig, key: KeyPath,
                    now: datetime | None = None, review: ReviewView | None = None,
                    ) -> tuple[PlanRecord, SignatureRow | None]:
    """Register ``plan`` and sign its proposal as ``by``, the registrant (who is then its author).

    The proposal is signed before anything is written, so a key that cannot sign registers nothing. It is stored
    only while the registered plan is proposed with this content: re-registering a plan already approved (same
    content) adds no author.
    """
    clock = now or datetime.now(timezone.utc)
    signed = sign(statement_for(plan, "propose", by, policy, now=clock), key=key)
    record = approval.register_plan(store, plan, actor=by.strip(), policy=policy, now=now, review=review)
    if review is not None:
        record = review.view(store, record)
    if record.status != approval.PROPOSED or record.content_hash != signed.statement.content_hash:
        return record, None
    at = approval.record_event(store, record, actor=by.strip(), action="propose", comment="signed proposal",
                               now=now)
    return record, store_signature(store, plan.plan_id, at, signed)
