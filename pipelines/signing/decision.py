"""The executor's authorisation from signatures alone: which stored statements this host accepts for a plan.

Input: the plan the executor read and re-hashed, the rows of ``gc_plan_signatures`` (untrusted), the host's trust
files and facts (cluster name from its config, cluster id from its ``meta.properties``, its broker id) and the
policy from its own config. Output: a :class:`PlanVerdict` with one :class:`SignatureVerdict` per row and, when the
plan may not run, a one-line refusal naming the rule.

An approval counts only when every check passes: the statement parses, names this plan id, this content hash,
this cluster name and id, covers this broker, has not expired, and ``ssh-keygen -Y verify`` accepts its signature
by the named signer under this host's allowed_signers and revoked_keys. Approvals are counted once per principal
AND once per key: the key that signed, so a key listed for two principals, certified by any number of certificates
or listed both through a ``cert-authority`` and as itself is one approver. A valid signed rejection vetoes the plan.

The author is known from signatures only: whoever signed a valid proposal of this content (``plans register
--key``, ``plans propose``, the plan job's ``signing.service_key``), by principal and by key, never counts as an
approver. The plan's ``created_by`` is a claim anyone who writes the plan file makes, so it decides nothing here;
under ``approver_must_differ_from_author`` a plan without a valid signed proposal is refused (``author_unsigned``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pipelines.config.models import PolicyConfig
from pipelines.plan.model import GcPlan, compute_content_hash
from pipelines.signing.records import SignatureRow
from pipelines.signing.ssh_key import PublicKey
from pipelines.signing.statement import Statement, StatementError, format_time
from pipelines.signing.trust import HostTrust
from pipelines.signing.verify import SignatureCheck, verify_signature

COUNTED, AUTHOR, VETO, NOT_COUNTED = "counted", "author", "veto", "not_counted"


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What this host is. ``cluster_id``/``broker_id`` None: not known here (``plans verify`` off the broker)."""

    cluster: str
    cluster_id: str | None
    broker_id: int | None


@dataclass(frozen=True, slots=True)
class SignatureVerdict:
    row: SignatureRow
    statement: Statement | None
    key: PublicKey | None  # the key that signed (a certificate's certified key)
    status: str  # counted | author | veto | not_counted
    rule: str | None = None
    reason: str = ""

    @property
    def key_fingerprint(self) -> str | None:
        return self.key.fingerprint if self.key else None

    @property
    def valid(self) -> bool:
        """The signature and statement hold for this host (whether or not the approval was counted)."""
        return self.status in (COUNTED, AUTHOR, VETO)

    @property
    def who(self) -> str:
        return self.statement.signer if self.statement else (self.row.signer or "?")

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.row.at.isoformat(), "action": self.statement.action if self.statement else self.row.action,
                "signer": self.who, "key_fingerprint": self.key_fingerprint,
                "statement": self.statement.to_dict() if self.statement else None, "status": self.status,
                "accepted": self.status == COUNTED, "rule": self.rule, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class PlanVerdict:
    plan_id: str
    content_hash: str
    required: int
    signatures: tuple[SignatureVerdict, ...]
    refusal: str | None

    @property
    def approvers(self) -> tuple[str, ...]:
        return tuple(v.who for v in self.signatures if v.status == COUNTED)

    def to_dict(self) -> dict[str, Any]:
        return {"plan_id": self.plan_id, "content_hash": self.content_hash, "approvals_required": self.required,
                "approvers": list(self.approvers), "would_apply": self.refusal is None, "refusal": self.refusal,
                "signatures": [v.to_dict() for v in self.signatures]}


class PlanFacts(Protocol):
    """What a statement is compared with: a :class:`GcPlan`, or the same three facts read from ``gc_plans``."""

    @property
    def plan_id(self) -> str: ...
    @property
    def cluster(self) -> str: ...
    @property
    def cluster_id(self) -> str | None: ...


def field_problem(st: Statement, plan: PlanFacts, content_hash: str, host: HostFacts,
                   now: datetime) -> tuple[str, str] | None:
    if st.plan_id != plan.plan_id:
        return "signature_plan", f"signed plan {st.plan_id}, not {plan.plan_id}"
    if st.content_hash != content_hash:
        return "signature_content_hash", (f"signed content {st.content_hash[:19]}…, the plan now hashes to "
                                          f"{content_hash[:19]}… (changed after signing)")
    if st.cluster != plan.cluster or st.cluster != host.cluster:
        return "signature_cluster", f"signed for cluster {st.cluster!r}; this host is cluster {host.cluster!r}"
    host_id = host.cluster_id if host.cluster_id is not None else plan.cluster_id
    if st.cluster_id != plan.cluster_id or st.cluster_id != host_id:
        return "signature_cluster_id", f"signed for cluster.id {st.cluster_id}; this host is cluster.id {host_id}"
    if st.action == "approve":
        if host.broker_id is not None and host.broker_id not in st.brokers:
            return "signature_brokers", (f"approves brokers {','.join(map(str, st.brokers))}, not broker "
                                         f"{host.broker_id}")
        if now >= st.expires_at:
            return "approval_expired", f"approval expired at {format_time(st.expires_at)}"
    return None


Verify = Callable[[bytes, str, str, HostTrust, datetime], SignatureCheck]


def check_row(row: SignatureRow, plan: PlanFacts, content_hash: str, trust: HostTrust, host: HostFacts,
              now: datetime, verify: Verify = verify_signature, parse: Callable[[str], Statement] = Statement.parse,
              ) -> SignatureVerdict:
    """One stored signature judged: its statement's fields against ``plan``/``host``, then its signature (``verify``:
    ssh-keygen, or a caller's cache of it; ``parse``: :meth:`Statement.parse`, or a caller's cache of it)."""
    try:
        st = parse(row.statement)
    except StatementError as exc:
        return SignatureVerdict(row, None, None, NOT_COUNTED, "statement_invalid", str(exc))
    problem = field_problem(st, plan, content_hash, host, now)
    if problem is not None:
        return SignatureVerdict(row, st, None, NOT_COUNTED, *problem)
    check = verify(st.to_bytes(), row.signature, st.signer, trust, now)
    if not check.ok:
        return SignatureVerdict(row, st, check.key, NOT_COUNTED, check.rule, check.reason)
    status = {"propose": AUTHOR, "reject": VETO}.get(st.action, COUNTED)
    return SignatureVerdict(row, st, check.key, status)


def count_approvals(checked: list[SignatureVerdict], policy: PolicyConfig) -> list[SignatureVerdict]:
    """Exclude the authors (signers of valid proposals) and repeated principals or keys from the valid approvals,
    oldest statement first."""
    authors: set[str] = set()
    author_keys: set[PublicKey | None] = set()
    if policy.approver_must_differ_from_author:
        authors = {v.who for v in checked if v.status == AUTHOR}
        author_keys = {v.key for v in checked if v.status == AUTHOR}
    names: set[str] = set()
    keys: set[PublicKey | None] = set()
    out: dict[int, SignatureVerdict] = {}
    order = sorted(range(len(checked)), key=lambda i: (checked[i].statement.signed_at if checked[i].statement
                                                       else checked[i].row.at, checked[i].row.at))
    for i in order:
        v = checked[i]
        if v.status == COUNTED:
            if v.who in authors or v.key in author_keys:
                v = SignatureVerdict(v.row, v.statement, v.key, NOT_COUNTED, "approver_differs_from_author",
                                     f"{v.who} (key {v.key_fingerprint}) signed the plan's proposal: an author")
            elif v.who in names or v.key in keys:
                v = SignatureVerdict(v.row, v.statement, v.key, NOT_COUNTED, "distinct_approvers",
                                     f"{v.who} (key {v.key_fingerprint}) already counted as an approver")
            else:
                names.add(v.who)
                keys.add(v.key)
        out[i] = v
    return [out[i] for i in range(len(checked))]


def judge(plan: GcPlan, rows: list[SignatureRow], trust: HostTrust, host: HostFacts, policy: PolicyConfig,
          now: datetime) -> PlanVerdict:
    """Every stored signature of ``plan`` judged for this host, and whether the plan may run here."""
    content_hash = compute_content_hash(plan)
    verdicts = count_approvals([check_row(r, plan, content_hash, trust, host, now) for r in rows], policy)
    refusal = None
    vetoes = [v for v in verdicts if v.status == VETO]
    counted = [v for v in verdicts if v.status == COUNTED]
    unsigned_author = policy.approver_must_differ_from_author and not any(v.status == AUTHOR for v in verdicts)
    if vetoes:
        refusal = f"[rejected] plan {plan.plan_id} was rejected by {vetoes[0].who} (a valid signed rejection)"
    elif len(counted) < policy.approvals_required:
        missed = [v for v in verdicts if v.status == NOT_COUNTED
                  and (v.statement is None or v.statement.action == "approve")]
        lead = missed[0].rule if missed else "approvals_required"
        refusal = (f"[{lead}] plan {plan.plan_id}: {len(counted)} of {policy.approvals_required} required signed "
                   f"approval(s) of {content_hash[:19]}… valid on this host")
        if counted:
            refusal += f" (counted: {', '.join(v.who for v in counted)})"
        if missed:
            refusal += "; not counted: " + "; ".join(f"{v.who} [{v.rule}] {v.reason}" for v in missed)
        if unsigned_author:
            refusal += "; and no valid signed proposal names its author"
    elif unsigned_author:
        refusal = (f"[author_unsigned] plan {plan.plan_id}: no valid signed proposal of {content_hash[:19]}… on this "
                   f"host, so its author is unknown (its created_by {plan.created_by!r} is not signed); the author "
                   "signs it with `plans register --key` or `plans propose`")
        bad = [v for v in verdicts if v.status == NOT_COUNTED and v.statement and v.statement.action == "propose"]
        if bad:
            refusal += "; proposals not valid: " + "; ".join(f"{v.who} [{v.rule}] {v.reason}" for v in bad)
    return PlanVerdict(plan.plan_id, content_hash, policy.approvals_required, tuple(verdicts), refusal)
