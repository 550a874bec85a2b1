"""The review state of a plan from its signatures, under the REVIEWERS' trust file (issue 29 point 3).

Anyone who can write the warehouse can write ``gc_plans.status``, ``gc_plans.approvals`` and audit rows. So, when
``executor.require_signatures`` is on, ``plans list``/``show``, the state machine, the review notebook and the
metrics take the state from what they can verify: the plan's registration (its ``gc_plans`` row: id, cluster,
content hash, creation and expiry, which plans of the cluster are newer) and the signatures in
``gc_plan_signatures`` that ``ssh-keygen -Y verify`` accepts under the reviewers' ``allowed_signers``
(``signing.allowed_signers``, default ``executor.allowed_signers``), counted as an executor counts them
(:mod:`pipelines.signing.decision`: one vote per principal and per key, never the author's).

The derived status: a valid signed rejection → ``rejected``; enough counted approvals → ``approved`` (or, when the
executors have since recorded progress, that progress: ``applying``, ``applied``...); otherwise ``expired`` once
the plan's expiry passed, ``superseded`` when a newer plan of the cluster is registered, else ``proposed``. The
recorded status is kept beside it, and every decision recorded without a signature that verifies here is listed
as an :class:`Unverified` one: it is shown, never counted, and never blocks a signed decision.

Signatures are verified once per content (statement, signature, signer, trust files, minute) in this process, and
only those whose statement already names this plan, its content hash and cluster reach ``ssh-keygen``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from pipelines.config.models import AppConfig, PolicyConfig
from pipelines.plan import approval as A
from pipelines.plan.approval import PlanRecord
from pipelines.signing.decision import (
    AUTHOR,
    COUNTED,
    NOT_COUNTED,
    VETO,
    HostFacts,
    SignatureVerdict,
    Verify,
    check_row,
    count_approvals,
    field_problem,
)
from pipelines.signing.envelope import EnvelopeError, read_envelope
from pipelines.signing.records import TABLE as SIGNATURES
from pipelines.signing.records import SignatureRow, row_of
from pipelines.signing.statement import Statement, StatementError
from pipelines.signing.trust import HostTrust, check_ssh_keygen, check_trust_file
from pipelines.signing.trust_content import check_allowed_signers, check_revoked_keys
from pipelines.signing.verify import SignatureCheck, verify_signature
from pipelines.tables.base import TableStore

#: where a plan's state came from (JSON ``review_state_from``)
FROM_SIGNATURES, FROM_RECORD = "signatures", "recorded"
#: recorded statuses that claim a decision: shown as unverified when the signatures do not bear them out
_CLAIMS = frozenset({A.APPROVED, A.REJECTED}) | A.EXECUTOR_STATUSES
_DECISIONS = ("approve", "reject")
NO_TRUST = "no_reviewers_trust"


@dataclass(frozen=True, slots=True)
class ReviewTrust:
    """The reviewers' trust files, vetted and read; ``host`` None when none is configured (nothing verifies)."""

    host: HostTrust | None
    setting: str
    digest: str

    def describe(self) -> str:
        return f"{self.setting} ({self.host.allowed_signers})" if self.host else "no reviewers' trust file"


def load_review_trust(app: AppConfig) -> ReviewTrust | None:
    """The reviewers' trust when ``executor.require_signatures`` is on, else None (the recorded state is the state).

    ``signing.allowed_signers`` (with ``signing.revoked_keys``), else ``executor.allowed_signers`` (with
    ``executor.revoked_keys``); each owned by root or the user running this, writable by nobody else, and read
    whole (a damaged file is refused, as on a broker host). Neither set: a trust that verifies nothing.
    """
    if not app.executor.require_signatures:
        return None
    if app.signing.allowed_signers:
        section, allowed, revoked = "signing", app.signing.allowed_signers, app.signing.revoked_keys
    elif app.executor.allowed_signers:
        section, allowed, revoked = "executor", app.executor.allowed_signers, app.executor.revoked_keys
    else:
        return ReviewTrust(None, "", "")
    trusted = frozenset({0, os.geteuid()})
    ssh_keygen = check_ssh_keygen(app.executor.ssh_keygen, trusted)
    allowed_path = check_trust_file(allowed, key="allowed_signers", rule="allowed_signers_permissions",
                                    trusted=trusted, section=section)
    revoked_path = None
    if revoked:
        revoked_path = check_trust_file(revoked, key="revoked_keys", rule="revoked_keys_permissions",
                                        trusted=trusted, section=section)
    check_allowed_signers(allowed_path, str(ssh_keygen))
    if revoked_path is not None:
        check_revoked_keys(revoked_path, str(ssh_keygen))
    digest = hashlib.sha256()
    for path in (allowed_path, revoked_path):
        digest.update(path.read_bytes() if path is not None else b"-")
        digest.update(b"\0")
    host = HostTrust(allowed_path, revoked_path, trusted, ssh_keygen)
    return ReviewTrust(host, f"{section}.allowed_signers", digest.hexdigest())


_CHECKS: dict[tuple[str, ...], SignatureCheck] = {}
_MAX_CHECKS = 100_000


def _cached_verify(review: ReviewTrust) -> Verify:
    """``verify_signature`` remembered by content (trust files' digest, statement, signature, signer, minute)."""
    def verify(message: bytes, signature: str, signer: str, trust: HostTrust, at: datetime) -> SignatureCheck:
        key = (review.digest, hashlib.sha256(message).hexdigest(), hashlib.sha256(signature.encode()).hexdigest(),
               signer, at.astimezone(timezone.utc).strftime("%Y%m%d%H%M"))
        found = _CHECKS.get(key)
        if found is None:
            if len(_CHECKS) >= _MAX_CHECKS:
                _CHECKS.clear()
            found = _CHECKS[key] = verify_signature(message, signature, signer, trust, at)
        return found
    return verify


@dataclass(frozen=True, slots=True)
class Unverified:
    """A decision recorded without a signature that verifies under the reviewers' trust: shown, never counted."""

    action: str
    actor: str
    at: datetime | None
    source: str  # gc_plan_signatures | gc_plan_audit | gc_plans
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "actor": self.actor, "at": self.at.isoformat() if self.at else None,
                "source": self.source, "reason": self.reason}

    def short(self) -> str:
        return f"{self.action} by {self.actor}" if self.actor else self.action


@dataclass(frozen=True, slots=True)
class ReviewState:
    """One plan's state as the signatures show it, beside what ``gc_plans`` records."""

    status: str
    approvals: tuple[str, ...]
    authors: frozenset[str]
    recorded_status: str
    superseded_by: str | None
    unverified: tuple[Unverified, ...]
    source: str
    verdicts: tuple[SignatureVerdict, ...] = ()

    @property
    def unverified_status(self) -> bool:
        """``gc_plans.status`` claims a decision the signatures do not bear out."""
        return self.recorded_status != self.status and self.recorded_status in _CLAIMS

    @property
    def shown_status(self) -> str:
        """The status for people: the derived one; ``(recorded X: unverified)`` when the record claims more."""
        if self.unverified_status:
            return f"{self.status} (recorded {self.recorded_status}: unverified)"
        return self.status

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "recorded_status": self.recorded_status, "approvals": list(self.approvals),
                "superseded_by": self.superseded_by, "review_state_from": self.source,
                "unverified_decisions": [u.to_dict() for u in self.unverified]}


def recorded_state(record: PlanRecord) -> ReviewState:
    """``require_signatures: false``: the state is what ``gc_plans`` records."""
    return ReviewState(record.status, record.approvals, frozenset({record.created_by.strip()}), record.status,
                       record.superseded_by, (), FROM_RECORD)


@dataclass(frozen=True, slots=True)
class _Facts:
    plan_id: str
    cluster: str
    cluster_id: str | None


def _executor_since(record: PlanRecord, audit: Sequence[Mapping[str, Any]], now: datetime) -> datetime:
    """When executors first recorded progress (their approvals are judged then, not today, when they may have
    expired since); ``now`` when none did."""
    times = [r["at"] for r in audit if r.get("action") in ("broker_state", "set_applying")]
    if record.status not in A.EXECUTOR_STATUSES:
        return now
    return min([*times, now]) if times else min(record.updated_at or now, now)


def _expiry(record: PlanRecord, policy: PolicyConfig) -> datetime:
    by_policy = record.created_at + timedelta(milliseconds=policy.plan_expiry_ms)
    return min(record.expires_at, by_policy) if record.expires_at is not None else by_policy


def derive(record: PlanRecord, signatures: Sequence[SignatureRow], audit: Sequence[Mapping[str, Any]], *,
           newest: str | None, trust: ReviewTrust, policy: PolicyConfig, now: datetime,
           cluster_id: str | None = None, with_authors: bool = False, verify: Verify | None = None) -> ReviewState:
    """``record``'s state from its ``signatures`` (verified under ``trust``) and registration; ``audit``: its
    audit rows; ``newest``: the newest registered plan of its cluster; ``cluster_id``: the plan's, when its JSON was
    read (a listing has only ``content_hash``, which covers it); ``with_authors``: verify its signed proposals even
    when no decision needs them (the state machine's author check)."""
    at = _executor_since(record, audit, now)
    verify = verify or _cached_verify(trust)
    host = HostFacts(record.cluster, None, None)
    parsed: list[tuple[SignatureRow, Statement | None, _Facts]] = []
    for row in signatures:
        st = None
        with contextlib.suppress(StatementError):  # an unparseable statement is refused by check_row
            st = _parse(row.statement)
        # a listing has no plan JSON: the statement's cluster id is taken, its content hash covers the plan's
        facts = _Facts(record.plan_id, record.cluster, cluster_id if cluster_id is not None or st is None
                       else st.cluster_id)
        parsed.append((row, st, facts))
    # a proposal only matters against an approval by its principal or key: unless the authors are asked for, it
    # costs no ssh-keygen otherwise (nor does a plan whose statements decide nothing about this content)
    deciding = [(row, st) for row, st, facts in parsed if st is not None and st.action in _DECISIONS
                and field_problem(st, facts, record.content_hash, host, at) is None]
    names = {st.signer for _, st in deciding}
    keys = {_key_of(row) for row, _ in deciding}
    checked: list[SignatureVerdict] = []
    for row, st, facts in parsed:
        if trust.host is None:
            checked.append(SignatureVerdict(row, st, None, NOT_COUNTED, NO_TRUST, "no reviewers' trust file: set "
                                            "signing.allowed_signers"))
        elif (st is not None and st.action == "propose" and not with_authors
              and st.signer not in names and _key_of(row) not in keys):  # it cannot exclude any approver
            checked.append(SignatureVerdict(row, st, None, NOT_COUNTED, "not_needed", "no decision to judge it for"))
        else:
            checked.append(check_row(row, facts, record.content_hash, trust.host, host, at, verify, _parse))
    verdicts = count_approvals(checked, policy)
    counted = tuple(dict.fromkeys(v.who for v in verdicts if v.status == COUNTED))
    vetoes = [v for v in verdicts if v.status == VETO]
    superseded_by = None
    if vetoes:
        status = A.REJECTED
    elif len(counted) >= policy.approvals_required:
        status = record.status if record.status in A.EXECUTOR_STATUSES else A.APPROVED
    elif now >= _expiry(record, policy):
        status = A.EXPIRED
    elif newest is not None and newest != record.plan_id:
        status, superseded_by = A.SUPERSEDED, newest
    else:
        status = A.PROPOSED
    authors = frozenset({record.created_by.strip(), *(v.who for v in verdicts if v.status == AUTHOR)})
    return ReviewState(status, counted, authors, record.status, superseded_by,
                       _unverified(record, verdicts, audit, counted), FROM_SIGNATURES, tuple(verdicts))


def _key_of(row: SignatureRow) -> object:
    """The key that made ``row``'s signature (None when unreadable), to tell whether a proposal shares it."""
    return _signing_key(row.signature)


@functools.lru_cache(maxsize=65_536)
def _signing_key(signature: str) -> object:
    try:
        return read_envelope(signature).key
    except EnvelopeError:
        return None


#: :meth:`Statement.parse` remembered by text (a statement is immutable; its parse is pure)
_parse = functools.lru_cache(maxsize=65_536)(Statement.parse)


def _unverified(record: PlanRecord, verdicts: Sequence[SignatureVerdict], audit: Sequence[Mapping[str, Any]],
                counted: tuple[str, ...]) -> tuple[Unverified, ...]:
    out: list[Unverified] = []
    valid = {(v.who, v.statement.action) for v in verdicts if v.status in (COUNTED, VETO) and v.statement}
    seen = set(valid)
    for v in verdicts:
        action = v.statement.action if v.statement else v.row.action
        if v.status == NOT_COUNTED and action in _DECISIONS:
            out.append(Unverified(action, v.who, v.row.at, SIGNATURES, f"[{v.rule}] {v.reason}"))
            seen.add((v.who, action))
    for row in audit:
        pair = (str(row.get("actor") or "").strip(), row.get("action"))
        if pair[1] in _DECISIONS and row.get("content_hash") == record.content_hash and pair not in seen:
            out.append(Unverified(pair[1], pair[0], row.get("at"), "gc_plan_audit", "no signature of it verifies"))
            seen.add(pair)
    for name in record.approvals:
        if name not in counted and (name, "approve") not in seen:
            out.append(Unverified("approve", name, None, "gc_plans", "listed in gc_plans.approvals; no signature of "
                                  "it verifies"))
            seen.add((name, "approve"))
    return tuple(out)


def _newest(records: Iterable[PlanRecord]) -> dict[str, str]:
    """cluster → its newest plan id (created_at, then plan_id), as :func:`approval.supersede_older` orders them."""
    best: dict[str, tuple[datetime, str]] = {}
    for r in records:
        if r.cluster not in best or (r.created_at, r.plan_id) > best[r.cluster]:
            best[r.cluster] = (r.created_at, r.plan_id)
    return {c: p for c, (_, p) in best.items()}


def _read_signatures(store: TableStore, plan_ids: set[str]) -> dict[str, list[SignatureRow]]:
    out: dict[str, list[SignatureRow]] = {p: [] for p in plan_ids}
    if not plan_ids or not store.exists(SIGNATURES):
        return out
    where = {"plan_id": next(iter(plan_ids))} if len(plan_ids) == 1 else None
    for r in store.read_rows(SIGNATURES, where):
        if r["plan_id"] in out:
            out[r["plan_id"]].append(row_of(r))
    for rows in out.values():
        rows.sort(key=lambda s: (s.at, s.signer))
    return out


_AUDIT_COLUMNS = ("plan_id", "at", "actor", "action", "content_hash")


def _read_audit(store: TableStore, plan_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {p: [] for p in plan_ids}
    if not plan_ids or not store.exists("gc_plan_audit"):
        return out
    where = {"plan_id": next(iter(plan_ids))} if len(plan_ids) == 1 else None
    for r in store.read_rows("gc_plan_audit", where, columns=_AUDIT_COLUMNS):
        if r["plan_id"] in out and r["action"] in (*_DECISIONS, "broker_state", "set_applying"):
            out[r["plan_id"]].append(r)
    return out


def plan_states(store: TableStore, records: Sequence[PlanRecord], trust: ReviewTrust | None, policy: PolicyConfig,
                *, now: datetime | None = None, newest: Mapping[str, str] | None = None,
                cluster_ids: Mapping[str, str | None] | None = None, with_authors: bool = False,
                ) -> list[ReviewState]:
    """The state of each of ``records`` (one read of the signatures and of the audit for all of them).

    ``newest``: cluster → newest plan id (default: from ``records``, which must then hold every plan of their
    clusters); ``cluster_ids``: plan id → the cluster id its JSON records, when read.
    """
    if trust is None:
        return [recorded_state(r) for r in records]
    clock = now or datetime.now(timezone.utc)
    ids = {r.plan_id for r in records}
    signatures, audit = _read_signatures(store, ids), _read_audit(store, ids)
    newest = newest if newest is not None else _newest(records)

    def each(verify: Verify | None) -> list[ReviewState]:
        return [derive(r, signatures[r.plan_id], audit[r.plan_id], newest=newest.get(r.cluster), trust=trust,
                       policy=policy, now=clock, cluster_id=(cluster_ids or {}).get(r.plan_id),
                       with_authors=with_authors, verify=verify) for r in records]

    if trust.host is not None and len(records) > 1:
        _prefetch(trust, each)
    return each(None)


def _prefetch(trust: ReviewTrust, each: Callable[[Verify | None], list[ReviewState]]) -> None:
    """Run the ``ssh-keygen`` verifications a listing needs side by side (each is a process that mostly waits to
    start): a dry pass collects them, a pool fills the cache the real pass then reads."""
    wanted: dict[tuple[bytes, str, str, datetime], None] = {}

    def collect(message: bytes, signature: str, signer: str, host: HostTrust, at: datetime) -> SignatureCheck:
        wanted[(message, signature, signer, at)] = None
        return SignatureCheck(False, None, "not_checked")

    each(collect)
    if len(wanted) < 2:
        return
    verify = _cached_verify(trust)
    host = trust.host
    assert host is not None
    with ThreadPoolExecutor(max_workers=_POOL) as pool:
        list(pool.map(lambda w: verify(w[0], w[1], w[2], host, w[3]), wanted))


#: concurrent ssh-keygen processes while listing
_POOL = 4


def newest_of(store: TableStore, cluster: str) -> str | None:
    """The newest registered plan of ``cluster`` (ids and times only)."""
    rows = store.read_rows("gc_plans", {"cluster": cluster}, columns=("created_at", "plan_id"))
    return max(((r["created_at"], r["plan_id"]) for r in rows), default=(None, None))[1]


def state_of(store: TableStore, record: PlanRecord, trust: ReviewTrust | None, policy: PolicyConfig, *,
             now: datetime | None = None, cluster_id: str | None = None, with_authors: bool = False) -> ReviewState:
    """One plan's state (``plans show``, the state machine, the review notebook)."""
    if trust is None:
        return recorded_state(record)
    return plan_states(store, [record], trust, policy, now=now, newest={record.cluster: newest_of(store,
                       record.cluster) or record.plan_id}, cluster_ids={record.plan_id: cluster_id},
                       with_authors=with_authors)[0]


@dataclass(frozen=True, slots=True)
class SignedReview:
    """The state machine's view of a plan (:class:`pipelines.plan.approval.ReviewView`): status and approvals from
    verified signatures, authors from the plan's ``created_by`` and its verified signed proposals."""

    trust: ReviewTrust
    policy: PolicyConfig

    def state(self, store: TableStore, record: PlanRecord) -> ReviewState:
        return state_of(store, record, self.trust, self.policy)

    def view(self, store: TableStore, record: PlanRecord) -> PlanRecord:
        state = self.state(store, record)
        return replace(record, status=state.status, approvals=state.approvals)

    def authors(self, store: TableStore, record: PlanRecord) -> frozenset[str]:
        """The signed authors, the plan's ``created_by`` and whoever the audit says registered it (``register``,
        ``content_changed``): the workflow refuses a registrant's approval even unsigned (it only ever refuses
        more; executors know authors from signatures alone). An audit ``propose`` row is not taken: a proposal
        is a signature here."""
        registrants = {str(r["actor"]).strip() for r in A.audit_rows(store, record.plan_id)
                       if r["action"] in ("register", "content_changed")}
        return state_of(store, record, self.trust, self.policy, with_authors=True).authors | registrants


def review_of(app: AppConfig) -> SignedReview | None:
    """The state machine's review view for ``app`` (None when signatures are not required)."""
    trust = load_review_trust(app)
    return SignedReview(trust, app.policy) if trust is not None else None


def check_fresh(trust: ReviewTrust, statement_text: str, signature: str, signer: str,
                now: datetime | None = None) -> SignatureCheck:
    """Whether a signature just made verifies under the reviewers' trust (``plans approve|reject`` warn if not)."""
    if trust.host is None:
        return SignatureCheck(False, None, NO_TRUST, "no reviewers' trust file: set signing.allowed_signers")
    return _cached_verify(trust)(statement_text.encode("ascii"), signature, signer, trust.host,
                                 now or datetime.now(timezone.utc))


__all__ = ["FROM_RECORD", "FROM_SIGNATURES", "ReviewState", "ReviewTrust", "SignedReview", "Unverified", "derive",
           "load_review_trust", "plan_states", "recorded_state", "review_of", "state_of"]
