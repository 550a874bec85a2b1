"""``logdir-gc plans``: list, show, register, approve and reject GC plans (state kept in Delta)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pipelines.cli.workflow_options import emit, load_app, open_store, workflow_options
from pipelines.errors import PlanError
from pipelines.plan import approval
from pipelines.plan.approval import PlanRecord


def _summary(r: PlanRecord) -> dict[str, Any]:
    return {"plan_id": r.plan_id, "cluster": r.cluster, "status": r.status, "created_at": r.created_at.isoformat(),
            "created_by": r.created_by, "content_hash": r.content_hash, "items": r.item_count,
            "bytes": r.total_bytes, "approvals": list(r.approvals), "superseded_by": r.superseded_by,
            "expires_at": r.expires_at.isoformat() if r.expires_at else None}


def _line(r: PlanRecord) -> str:
    return (f"{r.plan_id}  {r.status:<17} {r.created_at:%Y-%m-%d %H:%M}  {r.item_count:>5} items "
            f"{r.total_bytes:>15,} bytes  {r.content_hash[:19]}")


def _markdown(r: PlanRecord, audit: list[dict[str, Any]]) -> str:
    plan = r.plan()
    out = [f"# GC plan {r.plan_id}", "",
           f"- cluster: {plan.cluster} (cluster.id {plan.cluster_id})", f"- status: **{r.status}**",
           f"- created: {plan.created_at.isoformat()} by {plan.created_by} (run {plan.run_id})",
           f"- content hash: `{r.content_hash}`", f"- approvals: {', '.join(r.approvals) or 'none'}",
           f"- items: {len(plan.items)}, bytes: {plan.total_bytes:,}", "",
           "| item | broker | log dir | directory | topic-partition | class | bytes | reason |",
           "|---|---|---|---|---|---|---|---|"]
    for i in sorted(plan.items, key=lambda i: (i.broker_id, i.log_dir, i.dir_name)):
        tp = f"{i.topic}-{i.partition}" if i.topic is not None else ""
        out.append(f"| {i.item_id} | {i.broker_id} | {i.log_dir} | {i.dir_name} | {tp} | {i.class_} | "
                   f"{i.bytes:,} | {i.reason} |")
    out += ["", "## Audit", ""]
    out += [f"- {a['at']:%Y-%m-%d %H:%M:%S} {a['actor']}: {a['action']} "
            f"({a['from_status']} → {a['to_status']}) {a['comment'] or ''}".rstrip() for a in audit]
    return "\n".join(out) + "\n"


@click.group("plans")
def plans() -> None:
    """Review and decide GC plans."""


@plans.command("list")
@workflow_options
@click.option("--cluster", default=None, help="Only this cluster's plans.")
def list_cmd(config_path: str | None, warehouse: str | None, as_json: bool, cluster: str | None) -> None:
    """Every plan with status, creation time, content hash, item count and bytes."""
    store = open_store(load_app(config_path, warehouse))
    records = approval.list_plans(store, cluster) if store.exists("gc_plans") else []
    emit(as_json, [_summary(r) for r in records], "\n".join(_line(r) for r in records) or "no plans")


@plans.command("show")
@click.argument("plan_id")
@workflow_options
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
def show(plan_id: str, config_path: str | None, warehouse: str | None, as_json: bool, fmt: str) -> None:
    """One plan: its items and its audit trail (Markdown or JSON)."""
    store = open_store(load_app(config_path, warehouse))
    if not store.exists("gc_plans"):
        raise PlanError(f"no plan {plan_id!r}: {store.table_uri('gc_plans')} does not exist")
    record = approval.get_plan(store, plan_id)
    audit = approval.audit_rows(store, plan_id)
    if as_json or fmt == "json":
        data = {**_summary(record), "plan": record.plan().model_dump(mode="json", by_alias=True),
                "audit": [{**a, "at": a["at"].isoformat()} for a in audit]}
        emit(True, data, "")
    else:
        emit(False, None, _markdown(record, audit))


@plans.command("register")
@click.argument("plan_file", type=click.Path(dir_okay=False, exists=True))
@workflow_options
@click.option("--by", "actor", default=None, help="Who registers it (default: the plan's author).")
def register(plan_file: str, config_path: str | None, warehouse: str | None, as_json: bool, actor: str | None) -> None:
    """Load a plan JSON file (emitted elsewhere) into the tables as proposed."""
    from pipelines.execute.plan_source import read_plan_file

    app = load_app(config_path, warehouse)
    store = open_store(app)
    plan = read_plan_file(Path(plan_file))
    record = approval.register_plan(store, plan, actor=actor or plan.created_by, policy=app.policy)
    emit(as_json, _summary(record), f"registered {record.plan_id}: {record.status} ({record.content_hash})")


@plans.command("approve")
@click.argument("plan_id")
@click.option("--by", "by", required=True, help="Approver name (must differ from the plan's author by default).")
@click.option("--comment", default="", help="Why.")
@workflow_options
def approve(plan_id: str, by: str, comment: str, config_path: str | None, warehouse: str | None,
            as_json: bool) -> None:
    """Approve PLAN_ID's current content (the approval is bound to its content hash)."""
    app = load_app(config_path, warehouse)
    store = open_store(app)
    record = approval.approve(store, plan_id, by=by, policy=app.policy, comment=comment,
                              detect_grace_ms=app.detect.grace_ms if config_path else None)
    emit(as_json, _summary(record), f"{plan_id}: {record.status} (approvals: {', '.join(record.approvals)})")


@plans.command("reject")
@click.argument("plan_id")
@click.option("--by", "by", required=True)
@click.option("--reason", required=True)
@workflow_options
def reject(plan_id: str, by: str, reason: str, config_path: str | None, warehouse: str | None,
           as_json: bool) -> None:
    """Reject PLAN_ID (final)."""
    store = open_store(load_app(config_path, warehouse))
    record = approval.reject(store, plan_id, by=by, reason=reason)
    emit(as_json, _summary(record), f"{plan_id}: {record.status}")
