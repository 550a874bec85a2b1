"""``logdir-gc plans``: list, show, register, propose, approve, reject and verify GC plans (state kept in Delta,
signatures checked with OpenSSH)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.cli.exit_codes import POLICY
from pipelines.cli.workflow_options import emit, load_app, open_store, workflow_options
from pipelines.config.models import AppConfig
from pipelines.errors import PlanError
from pipelines.plan import approval
from pipelines.plan.approval import PlanRecord
from pipelines.plan.render import render_plan
from pipelines.terminal_text import md_text, shown

if TYPE_CHECKING:
    from pipelines.signing.decision import PlanVerdict
    from pipelines.signing.records import SignatureRow
    from pipelines.signing.review_state import ReviewState, ReviewTrust, SignedReview


def _summary(r: PlanRecord, state: ReviewState | None = None) -> dict[str, Any]:
    """A plan as JSON. With ``state`` (its review state), ``status``/``approvals``/``superseded_by`` are the
    derived ones, beside ``recorded_status``, ``review_state_from`` and ``unverified_decisions``."""
    data = {"plan_id": r.plan_id, "cluster": r.cluster, "status": r.status, "created_at": r.created_at.isoformat(),
            "created_by": r.created_by, "content_hash": r.content_hash, "items": r.item_count,
            "bytes": r.total_bytes, "approvals": list(r.approvals), "superseded_by": r.superseded_by,
            "expires_at": r.expires_at.isoformat() if r.expires_at else None}
    if state is not None:
        data |= state.to_dict()
        data["superseded_by"] = state.superseded_by or (r.superseded_by if state.status == r.status else None)
    return data


def _unverified_note(state: ReviewState) -> str:
    """``unverified: recorded approved; approve by mallory, ...`` (empty when everything recorded verifies)."""
    parts = [f"recorded {shown(state.recorded_status)}"] if state.unverified_status else []
    parts += [shown(u.short(), 80) for u in state.unverified[:_NOTED]]
    if len(state.unverified) > _NOTED:
        parts.append(f"{len(state.unverified) - _NOTED} more (plans show)")
    return f"unverified: {'; '.join(parts)}" if parts else ""


#: unverified decisions named on a ``plans list`` line (``plans show`` and ``--json`` list them all)
_NOTED = 3


def _line(r: PlanRecord, state: ReviewState) -> str:
    """One plan in ``plans list``; every value from the warehouse escaped (``terminal_text``)."""
    note = _unverified_note(state)
    return (f"{shown(r.plan_id)}  {shown(state.status):<17} {r.created_at:%Y-%m-%d %H:%M}  {r.item_count:>5} items "
            f"{r.total_bytes:>15,} bytes  {shown(r.content_hash[:19])}" + (f"  [{note}]" if note else ""))


def _markdown(r: PlanRecord, audit: list[dict[str, Any]], state: ReviewState) -> str:
    """The plan's own Markdown (the file the plan job writes) followed by its review state and audit trail, every
    value from the warehouse escaped for Markdown (``terminal_text``)."""
    review = ["## Review", "", f"- status: **{md_text(state.status)}**",
              f"- approvals: {', '.join(md_text(a) for a in state.approvals) or 'none'}"]
    if state.source == "signatures":
        review.append(f"- recorded status: {md_text(state.recorded_status)}"
                      + (" (unverified)" if state.unverified_status else ""))
        review += [f"- unverified: {md_text(u.short())} ({md_text(u.source)}: {md_text(u.reason, 500)})"
                   for u in state.unverified]
    review += ["", "## Audit", ""]
    review += [f"- {a['at']:%Y-%m-%d %H:%M:%S} {md_text(a['actor'])}: {md_text(a['action'])} "
               f"({md_text(a['from_status'])} → {md_text(a['to_status'])}) {md_text(a['comment'] or '', 1000)}".rstrip()
               for a in audit]
    return render_plan(r.plan()) + "\n".join(review) + "\n"


def _review_trust(app: AppConfig) -> ReviewTrust | None:
    """The reviewers' trust (None: signatures not required)."""
    from pipelines.signing.review_state import load_review_trust

    return load_review_trust(app)


def _warn_untrusted(trust: ReviewTrust | None) -> None:
    """Say so when signatures are required and no reviewers' trust file is configured (shown with a state)."""
    if trust is not None and trust.host is None:
        click.echo("logdir-gc plans: warning: executor.require_signatures is on but no reviewers' trust file is set "
                   "(signing.allowed_signers): no decision can be verified, each is shown unverified", err=True)


def _review(app: AppConfig) -> SignedReview | None:
    """The state machine's review view when signatures are required, else None."""
    from pipelines.signing.review_state import SignedReview

    trust = _review_trust(app)
    return SignedReview(trust, app.policy) if trust is not None else None


def _state(app: AppConfig, store: Any, record: PlanRecord, review: SignedReview | None,
           cluster_id: str | None = None) -> ReviewState:
    from pipelines.signing.review_state import state_of

    _warn_untrusted(review.trust if review else None)
    return state_of(store, record, review.trust if review else None, app.policy, cluster_id=cluster_id)


def _fresh_warning(review: SignedReview | None, row: SignatureRow | None) -> None:
    """Warn when the signature just made does not verify under the reviewers' trust: it is recorded, not counted."""
    from pipelines.signing.review_state import check_fresh

    if review is None or row is None:
        return
    check = check_fresh(review.trust, row.statement, row.signature, row.signer)
    if not check.ok:
        click.echo(f"logdir-gc plans: warning: {shown(row.signer)}'s signature does not verify under "
                   f"{review.trust.describe()}: [{check.rule}] {shown(check.reason, 500)}; it is recorded and shown "
                   "unverified, and counts for no one who trusts that file", err=True)


@click.group("plans")
def plans() -> None:
    """Review and decide GC plans."""


@plans.command("list")
@workflow_options
@click.option("--cluster", default=None, help="Only this cluster's plans.")
def list_cmd(config_path: str | None, warehouse: str | None, as_json: bool, cluster: str | None) -> None:
    """Every plan with status, creation time, content hash, item count and bytes."""
    from pipelines.signing.review_state import plan_states

    app = load_app(config_path, warehouse)
    store = open_store(app)
    records = approval.list_plans(store, cluster) if store.exists("gc_plans") else []
    trust = _review_trust(app) if records else None
    _warn_untrusted(trust)
    states = plan_states(store, records, trust, app.policy)
    emit(as_json, [_summary(r, s) for r, s in zip(records, states, strict=True)],
         "\n".join(_line(r, s) for r, s in zip(records, states, strict=True)) or "no plans")


@plans.command("show")
@click.argument("plan_id")
@workflow_options
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
def show(plan_id: str, config_path: str | None, warehouse: str | None, as_json: bool, fmt: str) -> None:
    """One plan: its items and its audit trail (Markdown or JSON)."""
    from pipelines.signing.review_state import SignedReview

    app = load_app(config_path, warehouse)
    store = open_store(app)
    if not store.exists("gc_plans"):
        raise PlanError(f"no plan {plan_id!r}: {store.table_uri('gc_plans')} does not exist")
    record = approval.get_plan(store, plan_id)
    plan = record.plan()
    trust = _review_trust(app)
    state = _state(app, store, record, None if trust is None else SignedReview(trust, app.policy), plan.cluster_id)
    audit = approval.audit_rows(store, plan_id)
    if as_json or fmt == "json":
        data = {**_summary(record, state), "plan": plan.model_dump(mode="json", by_alias=True),
                "audit": [{**a, "at": a["at"].isoformat()} for a in audit]}
        emit(True, data, "")
    else:
        emit(False, None, _markdown(record, audit, state))


@plans.command("register")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True))
@workflow_options
@click.option("--by", "actor", default=None, help="Who registers it, its author (default: the plan's created_by).")
@click.option("--key", "key", type=click.Path(dir_okay=False), default=None,
              help="Sign the proposal as --by with this SSH key (private key, or a .pub whose key is in ssh-agent); "
                   "executors requiring signatures apply only a plan whose author signed it.")
def register(plan_file: str, config_path: str | None, warehouse: str | None, as_json: bool, actor: str | None,
             key: str | None) -> None:
    """Load a plan JSON file (emitted elsewhere) into the tables as proposed; with --key, signed by its author."""
    from pipelines.execute.plan_source import read_plan_file
    from pipelines.signing.workflow import register_signed

    app = load_app(config_path, warehouse)
    store = open_store(app)
    plan = read_plan_file(Path(plan_file))
    by = actor or plan.created_by
    row = None
    review = _review(app)
    if key is None:
        record = approval.register_plan(store, plan, actor=by, policy=app.policy, review=review)
        if app.executor.require_signatures:
            click.echo(f"logdir-gc plans: warning: {record.plan_id} registered without a signed proposal; executors "
                       "that require signatures refuse it [author_unsigned] until its author signs it (plans "
                       "propose, or plans register --key)", err=True)
    else:
        record, row = register_signed(store, plan, by=by, policy=app.policy, key=key, review=review)
    record = approval.get_plan(store, plan.plan_id, with_json=False)  # as stored: its state is derived
    state = _state(app, store, record, review, plan.cluster_id)
    emit(as_json, {**_summary(record, state), "signature": _row(row)},
         f"registered {record.plan_id}: {state.status} ({record.content_hash}){_signed_line(row)}")


def _signing_options(fn: Any) -> Any:
    return click.option("--key", "key", type=click.Path(dir_okay=False), default=None,
                        help="SSH key to sign with: a private key file, or a .pub whose key is in ssh-agent or on a "
                             "FIDO authenticator (default: the one key ssh-agent holds).")(fn)


def _unsigned(app: AppConfig, key: str | None) -> bool:
    """Decide without a signature only when no --key is given and this config does not require signatures."""
    if key is None and not app.executor.require_signatures:
        click.echo("logdir-gc plans: warning: unsigned decision (executor.require_signatures is false in this "
                   "config); executors that require signatures will not count it", err=True)
        return True
    return False


def _signed_line(row: SignatureRow | None) -> str:
    return f"; signed by {shown(row.signer)} with {shown(row.key_fingerprint)}" if row else ""


@plans.command("propose")
@click.argument("plan_id")
@click.option("--by", "by", default=None, help="The author who signs (default: the plan's created_by).")
@_signing_options
@workflow_options
def propose(plan_id: str, by: str | None, key: str | None, config_path: str | None, warehouse: str | None,
            as_json: bool) -> None:
    """Sign PLAN_ID as an author; the author's key and name then never count as an approval."""
    from pipelines.signing.workflow import propose_signed

    app = load_app(config_path, warehouse)
    store = open_store(app)
    review = _review(app)
    record, row = propose_signed(store, plan_id, policy=app.policy, key=key, by=by, review=review)
    record = approval.get_plan(store, plan_id, with_json=False)  # as stored: its state is derived
    state = _state(app, store, record, review)
    emit(as_json, {**_summary(record, state), "signature": _row(row)}, f"{plan_id}: proposed{_signed_line(row)}")


@plans.command("approve")
@click.argument("plan_id")
@click.option("--by", "by", required=True, help="Approver name (must differ from the plan's author by default).")
@click.option("--comment", default="", help="Why.")
@click.option("--broker", "brokers", type=int, multiple=True,
              help="Approve only for these brokers (repeatable; default: every broker of the plan).")
@click.option("--valid-for", "valid_for", default=None,
              help="The approval expires this long after signing (e.g. 24h; default: when the plan expires).")
@_signing_options
@workflow_options
def approve(plan_id: str, by: str, comment: str, brokers: tuple[int, ...], valid_for: str | None, key: str | None,
            config_path: str | None, warehouse: str | None, as_json: bool) -> None:
    """Approve PLAN_ID's current content by signing it (the approval is bound to its content hash)."""
    from pipelines.cli.execute_cmd import _duration
    from pipelines.signing.workflow import approve_signed

    app = load_app(config_path, warehouse)
    store = open_store(app)
    grace = app.detect.grace_ms if config_path else None
    row = None
    review = None
    if _unsigned(app, key):
        record = approval.approve(store, plan_id, by=by, policy=app.policy, comment=comment, detect_grace_ms=grace)
    else:
        review = _review(app)
        record, row = approve_signed(store, plan_id, by=by, policy=app.policy, key=key, comment=comment,
                                     brokers=brokers, valid_for_ms=_duration(valid_for, "--valid-for"),
                                     detect_grace_ms=grace, review=review)
        _fresh_warning(review, row)
    record = approval.get_plan(store, plan_id, with_json=False)  # as stored: its state is derived
    state = _state(app, store, record, review)
    emit(as_json, {**_summary(record, state), "signature": _row(row)},
         f"{shown(plan_id)}: {shown(state.shown_status)} (approvals: {', '.join(shown(a) for a in state.approvals)})"
         f"{_signed_line(row)}")


@plans.command("reject")
@click.argument("plan_id")
@click.option("--by", "by", required=True)
@click.option("--reason", required=True)
@_signing_options
@workflow_options
def reject(plan_id: str, by: str, reason: str, key: str | None, config_path: str | None, warehouse: str | None,
           as_json: bool) -> None:
    """Reject PLAN_ID (final); the signed rejection stops every executor that requires signatures."""
    from pipelines.signing.workflow import reject_signed

    app = load_app(config_path, warehouse)
    store = open_store(app)
    row = None
    review = None
    if _unsigned(app, key):
        record = approval.reject(store, plan_id, by=by, reason=reason)
    else:
        review = _review(app)
        record, row = reject_signed(store, plan_id, by=by, reason=reason, policy=app.policy, key=key, review=review)
        _fresh_warning(review, row)
    record = approval.get_plan(store, plan_id, with_json=False)  # as stored: its state is derived
    state = _state(app, store, record, review)
    emit(as_json, {**_summary(record, state), "signature": _row(row)},
         f"{plan_id}: {state.shown_status}{_signed_line(row)}")


@plans.command("verify")
@click.argument("plan_id")
@click.option("--broker", "broker", type=int, default=None,
              help="Judge as this broker's host: its id and the cluster.id in its log dirs' meta.properties "
                   "(default: the plan's cluster.id, every broker).")
@click.option("--allowed-signers", "allowed_signers", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Use this allowed_signers file instead of executor.allowed_signers.")
@workflow_options
def verify(plan_id: str, broker: int | None, allowed_signers: str | None, config_path: str | None,
           warehouse: str | None, as_json: bool) -> None:
    """Per signature of PLAN_ID: who signed what, and whether this host accepts it (no Spark, no JVM).

    Exits 5 with the refusal on stderr when this host would not apply the plan.
    """
    from pipelines.cli.host_config import load_host_app
    from pipelines.execute.plan_source import host_cluster_id, refusal_of, signature_verdict
    from pipelines.signing.decision import HostFacts

    app = load_host_app(config_path, warehouse, need_config=False)
    if allowed_signers:
        app = app.model_copy(update={"executor": app.executor.model_copy(update={"allowed_signers": allowed_signers})})
    store = open_store(app)
    record = approval.get_plan(store, plan_id)
    plan = record.plan()
    cluster = app.cluster if config_path else plan.cluster
    host = HostFacts(cluster, host_cluster_id(app, broker) if broker is not None else None, broker)
    now = datetime.now(timezone.utc)
    verdict = signature_verdict(app, store, plan, host, now)
    refusal = refusal_of(app, store, record, plan, host, now, verdict)
    data = {**verdict.to_dict(), "status": record.status, "would_apply": refusal is None, "refusal": refusal,
            "host": {"cluster": cluster, "cluster_id": host.cluster_id or plan.cluster_id,
                     "cluster_id_from": "meta.properties" if broker is not None else "plan", "broker_id": broker,
                     "allowed_signers": app.executor.allowed_signers}}
    emit(as_json, data, _verify_text(plan_id, record.status, verdict, data))
    if refusal is not None:
        click.echo(f"logdir-gc: error: {shown(refusal, 2000)}", err=True)
        sys.exit(POLICY)


def _verify_text(plan_id: str, status: str, verdict: PlanVerdict, data: dict[str, Any]) -> str:
    host = data["host"]
    where = f"broker {host['broker_id']}" if host["broker_id"] is not None else "any broker"
    lines = [f"plan {shown(plan_id)} ({shown(status)}), content {shown(verdict.content_hash)}",
             f"host: cluster {host['cluster']}, cluster.id {host['cluster_id']} (from {host['cluster_id_from']}), "
             f"{where}; allowed_signers {host['allowed_signers']}; {verdict.required} approval(s) required"]
    for v in verdict.signatures:
        st = v.statement
        what = (f"{shown(st.action):<8} {shown(st.signer):<16} brokers {','.join(map(str, st.brokers))} until "
                f"{st.expires_at:%Y-%m-%d %H:%M}Z" if st else f"{'?':<8} {shown(v.who):<16}")
        outcome = v.status.upper() if v.rule is None else f"NOT COUNTED [{v.rule}] {shown(v.reason, 1000)}"
        lines.append(f"  {what}  key {shown(v.key_fingerprint or '-')}  {outcome}")
    if not verdict.signatures:
        lines.append("  no signatures")
    lines.append("this host would apply it" if data["would_apply"]
                 else f"this host would refuse: {shown(data['refusal'], 1000)}")
    return "\n".join(lines)


def _row(row: SignatureRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"signer": row.signer, "action": row.action, "key_fingerprint": row.key_fingerprint,
            "content_hash": row.content_hash, "statement": row.statement, "at": row.at.isoformat()}

