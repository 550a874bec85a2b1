"""Plan review for an approver: what a plan removes, the evidence, what changed since the cluster's previous
plan, and which policy rules pass. Nothing here changes a plan's state: :func:`decision_commands` only prints the
``logdir-gc plans approve|reject`` commands a person runs after reading the review.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from pipelines.analytics.reclaim import former_topic_names
from pipelines.analytics.warehouse import Warehouse
from pipelines.config.models import PolicyConfig
from pipelines.errors import PlanError, PolicyViolation
from pipelines.plan import approval
from pipelines.plan import policy as rules
from pipelines.plan.approval import PlanRecord
from pipelines.plan.model import GcPlan

__all__ = [
    "decision_commands",
    "plan_breakdown",
    "plan_diff",
    "plan_evidence",
    "plan_items",
    "plan_record",
    "policy_checks",
    "previous_plan",
    "review_policy",
    "review_state",
    "review_summary",
    "signature_status",
]

_ITEM_COLUMNS = ["item_id", "broker_id", "log_dir", "dir_name", "class", "bytes", "topic", "partition", "topic_id",
                 "directory_id", "fingerprint", "reason"]


def plan_record(wh: Warehouse, plan_id: str | None = None) -> PlanRecord:
    """The ``gc_plans`` record of ``plan_id``, or the cluster's newest plan.

    Raises:
        PlanError: unknown plan id, a plan of another cluster, or no plan at all.
    """
    if not wh.store.exists("gc_plans"):
        raise PlanError(f"{wh.root}: no gc_plans table")
    if plan_id is None:
        records = approval.list_plans(wh.store, wh.cluster)
        if not records:
            raise PlanError(f"{wh.root}: cluster {wh.cluster} has no plan")
        return records[-1]
    record = approval.get_plan(wh.store, plan_id)
    if record.cluster != wh.cluster:
        raise PlanError(f"plan {plan_id} belongs to cluster {record.cluster}, not {wh.cluster}")
    return record


def plan_items(plan: GcPlan) -> pd.DataFrame:
    """One row per item (the hash-verified plan JSON, not the denormalised items table)."""
    rows = [i.model_dump(by_alias=True) for i in plan.items]
    df = pd.DataFrame(rows, columns=_ITEM_COLUMNS) if rows else pd.DataFrame(columns=_ITEM_COLUMNS)
    df["partition"] = df["partition"].astype("Int64")
    df["bytes"] = df["bytes"].astype("int64")
    return df.sort_values(["broker_id", "log_dir", "dir_name"]).reset_index(drop=True)


def plan_breakdown(plan: GcPlan, by: str | list[str]) -> pd.DataFrame:
    """Items and bytes grouped by ``class``, ``broker_id``, ``log_dir`` (or several), largest first."""
    keys = [by] if isinstance(by, str) else list(by)
    out = plan_items(plan).groupby(keys, as_index=False).agg(items=("item_id", "size"), bytes=("bytes", "sum"))
    return out.sort_values(["bytes", *keys], ascending=[False] + [True] * len(keys)).reset_index(drop=True)


def plan_evidence(wh: Warehouse, plan: GcPlan) -> pd.DataFrame:
    """Per item: topic id on disk vs the controller's id for the name, metadata offset, grace clock, the names the
    id had (``metadata_events``), and the detector's evidence JSON (from the plan run's ``findings``)."""
    items = plan_items(plan)
    f = wh.frame("findings", {"run_id": plan.run_id})
    cols = ["broker_id", "log_dir", "dir_name", "controller_topic_id", "metadata_offset", "garbage_since",
            "detected_at", "plannable", "protected", "evidence"]
    out = items.merge(f[cols], how="left", on=["broker_id", "log_dir", "dir_name"])
    names = former_topic_names(wh)[["topic_id", "former_names", "removed_at"]]
    out = out.merge(names, how="left", on="topic_id")
    out["former_names"] = out["former_names"].map(lambda v: v if isinstance(v, list) else [])
    since = pd.to_datetime(out["garbage_since"], utc=True)
    out["grace_days"] = (pd.to_datetime(out["detected_at"], utc=True) - since).dt.total_seconds() / 86_400.0
    out["evidence"] = out["evidence"].map(lambda e: json.loads(e) if isinstance(e, str) and e else {})
    out["in_findings"] = out["detected_at"].notna()
    return out


def previous_plan(wh: Warehouse, plan: GcPlan) -> PlanRecord | None:
    """The cluster's plan created just before ``plan`` (by ``created_at``, then ``plan_id``), if any."""
    records = approval.list_plans(wh.store, plan.cluster)
    older = [r for r in records if (r.created_at, r.plan_id) < (plan.created_at, plan.plan_id)]
    return older[-1] if older else None


def plan_diff(plan: GcPlan, previous: GcPlan | None) -> pd.DataFrame:
    """Items compared by (broker, log dir, dir name): ``change`` is ``added``, ``removed``, ``changed`` (bytes,
    fingerprint or class differ) or ``same``; with ``bytes_before``/``bytes_after``/``class_before``/``class_after``.
    """
    key = ["broker_id", "log_dir", "dir_name"]
    now = plan_items(plan)[[*key, "class", "bytes", "fingerprint"]]
    before = plan_items(previous)[[*key, "class", "bytes", "fingerprint"]] if previous else now.iloc[0:0]
    out = before.merge(now, how="outer", on=key, suffixes=("_before", "_after"), indicator=True)

    def change(row: pd.Series) -> str:
        if row["_merge"] == "right_only":
            return "added"
        if row["_merge"] == "left_only":
            return "removed"
        same = (row["bytes_before"] == row["bytes_after"] and row["fingerprint_before"] == row["fingerprint_after"]
                and row["class_before"] == row["class_after"])
        return "same" if same else "changed"

    out["change"] = out.apply(change, axis=1) if len(out) else pd.Series(dtype=str)
    out = out.drop(columns=["_merge", "fingerprint_before", "fingerprint_after"])
    out[["bytes_before", "bytes_after"]] = out[["bytes_before", "bytes_after"]].astype("Int64")
    order = {"added": 0, "removed": 1, "changed": 2, "same": 3}
    return out.sort_values(["change", *key], key=lambda s: s.map(order) if s.name == "change" else s).reset_index(
        drop=True)


_BUDGETS = ("max_plan_items", "max_plan_bytes", "max_broker_items", "max_broker_bytes")


def _rule_of(exc: PolicyViolation) -> str:
    text = str(exc)
    return text[1:text.index("]")] if text.startswith("[") and "]" in text else "policy"


def policy_checks(plan: GcPlan, policy: PolicyConfig, *, now: datetime | None = None,
                  detect_grace_ms: int | None = None, approver: str | None = None,
                  existing_approvals: tuple[str, ...] = ()) -> pd.DataFrame:
    """Every policy rule that applies, each evaluated on its own by ``pipelines.plan.policy``.

    ``status`` is ``pass``, ``fail`` (with the refusal message) or ``not_configured`` (a budget left unset, no
    grace or approver given). The approval workflow enforces the same functions; this only shows them up front.
    """
    at = now or datetime.now(timezone.utc)
    rows: list[dict[str, str]] = []

    def run(rule: str, check) -> None:
        try:
            check()
        except PolicyViolation as exc:
            rows.append({"rule": rule, "status": "fail", "message": str(exc)})
        else:
            rows.append({"rule": rule, "status": "pass", "message": ""})

    unset = {b: None for b in _BUDGETS}
    bare = policy.model_copy(update={**unset, "protected_topic_patterns": ()})
    for budget in _BUDGETS:
        if getattr(policy, budget) is None:
            rows.append({"rule": budget, "status": "not_configured", "message": ""})
            continue
        only = bare.model_copy(update={budget: getattr(policy, budget)})
        run(budget, lambda only=only: _budget_only(plan, only))
    run("protected_topic", lambda: rules.check_plan(plan, policy.model_copy(update=unset)))
    if detect_grace_ms is None:
        rows.append({"rule": "min_grace", "status": "not_configured", "message": "detector grace not given"})
    else:
        run("min_grace", lambda: rules.check_plan(plan.model_copy(update={"items": ()}), bare,
                                                  detect_grace_ms=detect_grace_ms))
    run("plan_expiry", lambda: rules.check_unexpired(plan, policy, at))
    if approver is None:
        rows.append({"rule": "approver", "status": "not_configured", "message": "no approver given"})
    else:
        run("approver", lambda: rules.check_approver(plan, policy, approver, existing_approvals))
    rows.append({"rule": "approvals_required", "status": "pass" if len(existing_approvals) >= policy.approvals_required
                 else "pending", "message": f"{len(existing_approvals)} of {policy.approvals_required}"})
    return pd.DataFrame(rows, columns=["rule", "status", "message"])


def _budget_only(plan: GcPlan, policy: PolicyConfig) -> None:
    """``check_plan`` with one budget set; a protected-topic refusal is not this budget's verdict."""
    try:
        rules.check_plan(plan, policy)
    except PolicyViolation as exc:
        if _rule_of(exc) != "protected_topic":
            raise


def review_policy(config_path: str | None) -> tuple[PolicyConfig, int | None]:
    """The policy and detector grace to review against: from ``--config``'s file, else the defaults (no grace)."""
    if not config_path:
        return PolicyConfig(), None
    from pipelines.config.load import load_config

    app = load_config(config_path)
    return app.policy, app.detect.grace_ms


def review_state(wh: Warehouse, record: PlanRecord, *, config_path: str | None = None,
                 allowed_signers: str | None = None) -> dict[str, Any]:
    """The plan's review state exactly as ``logdir-gc plans list``/``show`` derive it: with
    ``executor.require_signatures`` on (the default), ``status`` and ``approvals`` from the signatures that verify
    under the reviewers' ``allowed_signers`` (this argument, else the config's ``signing.allowed_signers``, else its
    ``executor.allowed_signers``), beside ``recorded_status`` and ``unverified_decisions`` (decisions recorded in
    the warehouse that no such signature bears out); under ``require_signatures: false``, the recorded state."""
    from pipelines.signing.review_state import load_review_trust, state_of

    app = _review_app(wh, config_path, allowed_signers)
    state = state_of(wh.store, record, load_review_trust(app), app.policy, cluster_id=record.plan().cluster_id)
    return state.to_dict()


def _review_app(wh: Warehouse, config_path: str | None, allowed_signers: str | None) -> Any:
    from pipelines.config.load import config_from_dict, load_config

    app = load_config(config_path) if config_path else config_from_dict(
        {"cluster": wh.cluster or "-", "warehouse": wh.root}, origin="review notebook")
    if allowed_signers:
        app = app.model_copy(update={"signing": app.signing.model_copy(update={"allowed_signers": allowed_signers,
                                                                               "revoked_keys": None})})
    return app


def review_summary(record: PlanRecord, diff: pd.DataFrame, checks: pd.DataFrame,
                   state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The figures an approver reads last, JSON-ready: size, changes since the previous plan, failed rules; with
    ``state`` (:func:`review_state`), the status and approvals the signatures bear out, and what they do not."""
    plan = record.plan()
    changes = diff["change"].value_counts() if len(diff) else pd.Series(dtype=int)
    verified = {} if state is None else {"status": state["status"], "approvals": state["approvals"],
                                         "recorded_status": state["recorded_status"],
                                         "unverified_decisions": state["unverified_decisions"]}
    return {
        "plan_id": record.plan_id, "cluster": record.cluster, "status": record.status,
        "content_hash": record.content_hash, "items": len(plan.items), "bytes": plan.total_bytes,
        "brokers": sorted({i.broker_id for i in plan.items}),
        "classes": dict(sorted(Counter(i.class_ for i in plan.items).items())),
        "added": int(changes.get("added", 0)), "removed": int(changes.get("removed", 0)),
        "changed": int(changes.get("changed", 0)), "unchanged": int(changes.get("same", 0)),
        "failed_rules": sorted(checks.loc[checks["status"] == "fail", "rule"]),
        "approvals": list(record.approvals),
        **verified,
    }


def decision_commands(record: PlanRecord, warehouse: str, *, approver: str = "YOUR_NAME",
                      config_path: str | None = None, key: str | None = None) -> dict[str, str]:
    """The exact ``logdir-gc plans approve`` and ``reject`` command lines for this plan (never run here); they sign
    with ``key``, or with the approver's ssh-agent key when ``key`` is None."""
    where = ["--config", config_path] if config_path else ["--warehouse", warehouse]
    where += ["--key", key] if key else []
    base = ["logdir-gc", "plans"]
    approve = [*base, "approve", record.plan_id, "--by", approver, *where]
    reject = [*base, "reject", record.plan_id, "--by", approver, "--reason", "REASON", *where]
    return {"approve": shlex.join(approve), "reject": shlex.join(reject)}


_SIGNATURE_COLUMNS = ["at", "action", "signer", "key_fingerprint", "brokers", "expires_at", "status", "rule",
                      "reason"]


def signature_status(wh: Warehouse, record: PlanRecord, *, config_path: str | None = None,
                     allowed_signers: str | None = None) -> pd.DataFrame:
    """Per approval (and proposal, rejection): who signed what, and whether a broker host trusting
    ``allowed_signers`` (default: the config's ``executor.allowed_signers``) would count it.

    ``status`` is ``counted``, ``author``, ``veto`` or ``not_counted`` (with the rule and reason) as the executor
    judges it (cluster id and broker coverage taken from the plan, not from a broker's disk); ``unchecked`` when no
    allowed_signers is known (the signature is then only checked to be an SSHSIG over its statement); ``unsigned``
    for a recorded approval without any signature, which no executor requiring signatures counts.
    """
    from pipelines.config.models import ExecutorConfig
    from pipelines.signing.decision import HostFacts, judge
    from pipelines.signing.records import read_signatures
    from pipelines.signing.trust import load_host_trust

    plan = record.plan()
    policy, _ = review_policy(config_path)
    if allowed_signers is None and config_path:
        from pipelines.config.load import load_config

        allowed_signers = load_config(config_path).executor.allowed_signers
    rows = read_signatures(wh.store, record.plan_id)
    out: list[dict[str, Any]] = []
    if allowed_signers:
        trust = load_host_trust(ExecutorConfig(allowed_signers=allowed_signers))
        verdict = judge(plan, rows, trust, HostFacts(plan.cluster, None, None), policy, datetime.now(timezone.utc))
        out = [_signature_row(v.to_dict()) for v in verdict.signatures]
    else:
        out = [_unchecked_row(r) for r in rows]
    signed = {r["signer"] for r in out if r["action"] == "approve"}
    out += [{"at": None, "action": "approve", "signer": name, "key_fingerprint": None, "brokers": None,
             "expires_at": None, "status": "unsigned", "rule": None, "reason": "approval recorded without a signature"}
            for name in record.approvals if name not in signed]
    return pd.DataFrame(out, columns=_SIGNATURE_COLUMNS)


def _signature_row(d: dict[str, Any]) -> dict[str, Any]:
    st = d["statement"] or {}
    return {"at": d["at"], "action": d["action"], "signer": d["signer"], "key_fingerprint": d["key_fingerprint"],
            "brokers": st.get("brokers"), "expires_at": st.get("expires_at"), "status": d["status"],
            "rule": d["rule"], "reason": d["reason"]}


def _unchecked_row(row: Any) -> dict[str, Any]:
    from pipelines.signing.statement import Statement, StatementError
    from pipelines.signing.verify import check_novalidate

    try:
        st = Statement.parse(row.statement)
    except StatementError as exc:
        return {"at": row.at.isoformat(), "action": row.action, "signer": row.signer, "key_fingerprint":
                row.key_fingerprint, "brokers": None, "expires_at": None, "status": "not_counted",
                "rule": "statement_invalid", "reason": str(exc)}
    good = check_novalidate(st.to_bytes(), row.signature)
    return {"at": row.at.isoformat(), "action": st.action, "signer": st.signer, "key_fingerprint": row.key_fingerprint,
            "brokers": list(st.brokers), "expires_at": st.to_dict()["expires_at"],
            "status": "unchecked" if good else "not_counted", "rule": None if good else "signature_invalid",
            "reason": "signature matches its statement; signer not checked (no allowed_signers)" if good
            else "the signature does not match the statement"}
