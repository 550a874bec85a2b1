"""``logdir-gc apply | restore | purge | prestart``: the executor, run on the broker host. Dry-run by default."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from pipelines.cli.exit_codes import FAILED
from pipelines.cli.workflow_options import emit, load_app, open_store, workflow_options
from pipelines.config.duration import parse_duration_ms
from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError, ExecutorBusy, PipelinesError

if TYPE_CHECKING:
    from pipelines.execute.restore import RestoreReport


def _mode(fn: Any) -> Any:
    fn = click.option("--execute", "execute", is_flag=True, default=False,
                      help="Really change the disk (default: dry run).")(fn)
    return click.option("--dry-run", "dry_run", is_flag=True, default=False,
                        help="Only report what would be done (the default).")(fn)


def _execute(dry_run: bool, execute: bool) -> bool:
    if dry_run and execute:
        raise click.UsageError("--dry-run and --execute are exclusive")
    return execute


def _brokers(app: AppConfig, broker: int | None) -> list[int]:
    if broker is not None:
        return [broker]
    if len(app.brokers) != 1:
        raise ConfigError("the config lists several brokers; say which one with --broker ID")
    return [app.brokers[0].broker_id]


def _duration(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_duration_ms(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("apply")
@click.argument("plan_id")
@click.option("--broker", "broker", type=int, required=True, help="This host's broker id.")
@click.option("--plan-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Plan JSON; must hash to the approved content.")
@_mode
@workflow_options
def apply(plan_id: str, broker: int, plan_file: str | None, dry_run: bool, execute: bool, config_path: str | None,
          warehouse: str | None, as_json: bool) -> None:
    """Quarantine the approved items of PLAN_ID that live on broker ID (dry run unless --execute)."""
    from pipelines.execute.apply import apply_plan

    app = load_app(config_path, warehouse, need_config=True)
    report = apply_plan(app, open_store(app), plan_id, broker, execute=_execute(dry_run, execute),
                        plan_file=plan_file)
    lines = [f"{'APPLY' if report.executed else 'DRY RUN'} plan {plan_id} on broker {broker}"]
    lines += [f"  {i.action:<16} {i.path}" + (f"  ({i.reason})" if i.reason else "") for i in report.items]
    if report.executed:
        lines.append(f"  status: {report.status}; {report.bytes_quarantined:,} bytes quarantined; "
                     f"journal mirror: {report.journal_mirrored}")
    emit(as_json, report.to_dict(), "\n".join(lines))
    if report.count("failed"):
        sys.exit(FAILED)


@click.command("restore")
@click.argument("plan_id")
@click.option("--item", "item_id", default=None, help="Only this item.")
@click.option("--broker", "broker", type=int, default=None)
@_mode
@workflow_options
def restore(plan_id: str, item_id: str | None, broker: int | None, dry_run: bool, execute: bool,
            config_path: str | None, warehouse: str | None, as_json: bool) -> None:
    """Move quarantined items of PLAN_ID back to their original paths (dry run unless --execute)."""
    from pipelines.execute.restore import restore as do_restore

    app = load_app(config_path, warehouse, need_config=True)
    executed = _execute(dry_run, execute)
    reports = []
    lines: list[str] = []
    for b in _brokers(app, broker):
        report = do_restore(app, b, plan_id, item_id=item_id, execute=executed)
        marked = (executed and item_id is None and bool(report.restored) and not report.skipped
                  and _mark_restored(app, plan_id, b))
        reports.append(report)
        lines += _restore_lines(report, marked)
    emit(as_json, [r.to_dict() for r in reports], "\n".join(lines))
    if any(r.executed and r.skipped for r in reports):
        sys.exit(FAILED)


def _restore_lines(report: RestoreReport, marked: bool) -> list[str]:
    """The human report of one broker's restore, laid out like ``apply``'s."""
    done, skip = ("restored", "skipped") if report.executed else ("would_restore", "would_skip")
    lines = [f"{'RESTORE' if report.executed else 'DRY RUN restore'} plan {report.plan_id} "
             f"on broker {report.broker_id}"]
    lines += [f"  {done:<16} {report.paths[i]}" for i in report.restored]
    lines += [f"  {skip:<16} {report.paths[i]}  ({why})" for i, why in report.skipped.items()]
    if not report.paths:
        lines.append("  nothing quarantined for this plan")
    elif report.executed:
        lines.append(f"  status: {len(report.restored)} restored, {len(report.skipped)} skipped"
                     + ("; plan marked restored" if marked else ""))
    return lines


def _mark_restored(app: AppConfig, plan_id: str, broker: int) -> bool:
    from pipelines.plan import approval

    try:
        approval.set_status(open_store(app), plan_id, approval.RESTORED, actor=f"executor@broker-{broker}",
                            comment="restore")
    except (OSError, PipelinesError) as exc:
        click.echo(f"logdir-gc restore: warning: plan status not updated: {exc}", err=True)
        return False
    return True


@click.command("purge")
@click.option("--older-than", "older_than", default=None, help="Override the retention (e.g. 7d, 12h).")
@click.option("--broker", "broker", type=int, default=None)
@_mode
@workflow_options
def purge(older_than: str | None, broker: int | None, dry_run: bool, execute: bool, config_path: str | None,
          warehouse: str | None, as_json: bool) -> None:
    """Delete quarantined items past retention, paced; reports expected and statvfs-measured bytes."""
    from pipelines.execute.purge import purge as do_purge

    app = load_app(config_path, warehouse, need_config=True)
    reports = [do_purge(app, b, older_than_ms=_duration(older_than), execute=_execute(dry_run, execute))
               for b in _brokers(app, broker)]
    text = "\n".join(f"broker {r.broker_id}: {'purged' if r.executed else 'would purge'} {len(r.items)} items, "
                     f"expected {r.expected_bytes:,} bytes, measured {r.measured_bytes}, kept {r.kept}"
                     for r in reports)
    emit(as_json, [r.to_dict() for r in reports], text)


@click.command("prestart")
@click.option("--broker", "broker", type=int, required=True)
@click.option("--budget", default=None, help="Time budget (default executor.prestart_time_budget_ms).")
@workflow_options
def prestart(broker: int, budget: str | None, config_path: str | None, warehouse: str | None,
             as_json: bool) -> None:
    """Broker pre-start hook: apply approved plans' items for this broker within a time budget, then exit 0.

    Never blocks the broker: an unreachable warehouse, a refused plan or a held lock is reported, not fatal.
    """
    from pipelines.execute.apply import apply_plan
    from pipelines.plan import approval

    app = load_app(config_path, warehouse, need_config=True)
    budget_ms = app.executor.prestart_time_budget_ms if budget is None else _duration(budget) or 0
    deadline = time.monotonic() + budget_ms / 1000
    results: list[dict[str, Any]] = []
    try:
        store = open_store(app)
        candidates = [r for r in approval.list_plans(store, app.cluster) if r.status in approval.EXECUTABLE
                      and r.status != approval.APPLIED]
    except (OSError, PipelinesError) as exc:
        emit(as_json, {"error": f"warehouse unreachable: {exc}"}, f"prestart: warehouse unreachable: {exc}")
        return
    for record in candidates:
        if time.monotonic() > deadline:
            results.append({"plan_id": record.plan_id, "skipped": "time budget exhausted"})
            continue
        if not any(i.broker_id == broker for i in record.plan().items):
            continue
        try:
            report = apply_plan(app, store, record.plan_id, broker, execute=True, deadline=deadline)
            results.append(report.to_dict())
        except ExecutorBusy as exc:
            results.append({"plan_id": record.plan_id, "refused": str(exc)})
            break
        except (PipelinesError, OSError) as exc:  # reported, never fatal: the broker must start
            results.append({"plan_id": record.plan_id, "refused": str(exc)})
    emit(as_json, results, "\n".join(str(r) for r in results) or "prestart: nothing to apply")
