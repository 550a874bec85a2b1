"""``logdir-gc apply | restore | purge | prestart``: the executor, run on the broker host. Dry-run by default."""

from __future__ import annotations

import sys
from typing import Any

import click

from pipelines.cli import executor_text as text
from pipelines.cli.executor_hooks import action_counts, applied, record, refusals_recorded, step
from pipelines.cli.exit_codes import FAILED, PRECONDITION
from pipelines.cli.host_config import load_host_app
from pipelines.cli.workflow_options import emit, open_store, workflow_options
from pipelines.config.duration import parse_duration_ms
from pipelines.config.models import AppConfig
from pipelines.errors import ConfigError
from pipelines.plan.render import human_bytes


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
    if not app.brokers:
        raise ConfigError("the config lists no brokers: name this host's broker under `brokers:` (with its log "
                          "dirs), or say which one with --broker ID")
    if len(app.brokers) != 1:
        raise ConfigError(f"the config lists {len(app.brokers)} brokers "
                          f"({', '.join(str(b.broker_id) for b in app.brokers)}); say which one with --broker ID")
    return [app.brokers[0].broker_id]


def _nothing_for(app: AppConfig, plan_id: str, broker: int, plan_file: str | None = None) -> bool:
    """True when the plan has no item for ``broker``: a loop over a fleet's brokers meets nothing to do, not a
    refusal. Only the plan is read: its items table first (the plan JSON, tens of MB for a fleet, only when that
    says none), so an unknown plan is still refused (exit 5) and a damaged items table never hides work."""
    from pipelines.execute.plan_source import read_plan_file
    from pipelines.plan import approval

    store = open_store(app)
    record = approval.get_plan(store, plan_id, with_json=False)
    if plan_file is None and store.exists("gc_plan_items") and store.read_rows(
            "gc_plan_items", {"plan_id": plan_id, "broker_id": broker}, columns=["item_id"]):
        return False
    plan = read_plan_file(plan_file) if plan_file is not None else record.plan()
    return not any(i.broker_id == broker for i in plan.items)


def _nothing_said(plan_id: str, broker: int, **empty: object) -> tuple[dict[str, object], str]:
    """The JSON document and the line of a command that had nothing to do for ``broker``."""
    return ({"plan_id": plan_id, "broker_id": broker, **empty, "nothing_to_do": True},
            f"nothing for broker {broker} in {plan_id}")


def _duration(text: str | None, option: str = "--older-than") -> int | None:
    if text is None:
        return None
    try:
        return parse_duration_ms(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=f"'{option}'") from None


_REMOTE = click.option("--remote", "remote", is_flag=True, default=False,
                       help="The plan's remote-tier segments (remote_tier: in the config), not a broker's dirs.")


@click.command("apply")
@click.argument("plan_id")
@click.option("--broker", "broker", type=int, default=None, help="This host's broker id (or --remote).")
@click.option("--plan-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Plan JSON; must hash to the approved content.")
@_REMOTE
@_mode
@workflow_options
def apply(plan_id: str, broker: int | None, plan_file: str | None, remote: bool, dry_run: bool, execute: bool,
          config_path: str | None, warehouse: str | None, as_json: bool) -> None:
    """Quarantine the approved items of PLAN_ID that live on broker ID, or with --remote its remote-tier
    segments (dry run unless --execute).

    Exits 9 when an item failed, 6 when an item was skipped or not reached (each line says why).
    """
    from pipelines.execute.apply import apply_plan
    from pipelines.execute.host_files import vet_named_files

    if remote == (broker is not None):
        raise click.UsageError("say --broker ID or --remote (exactly one)")
    if remote:
        from pipelines.cli.remote_execute import apply_remote_cmd

        return apply_remote_cmd(plan_id, plan_file, _execute(dry_run, execute), config_path, warehouse, as_json)
    app = load_host_app(config_path, warehouse)
    vet_named_files(app, [broker], controller=True)
    executed = _execute(dry_run, execute)
    with refusals_recorded(app, broker, executed):  # an unknown plan is a refusal, counted as before
        nothing = _nothing_for(app, plan_id, broker, plan_file)
    if nothing:
        document, line = _nothing_said(plan_id, broker, executed=executed, items=[])
        emit(as_json, document, line)
        return
    with step(f"apply plan {plan_id} on broker {broker}") as done:
        report = applied(app, broker, executed, lambda: apply_plan(app, open_store(app), plan_id, broker,
                                                                   execute=executed, plan_file=plan_file))
        done(action_counts(report.items)
             + (f"; {human_bytes(report.bytes_quarantined)} quarantined" if report.executed else ""))
    emit(as_json, report.to_dict(), "\n".join(text.apply_lines(report)))
    if report.count("failed"):
        sys.exit(FAILED)
    if report.count("skipped", "not_reached"):
        sys.exit(PRECONDITION)


@click.command("restore")
@click.argument("plan_id")
@click.option("--item", "item_id", default=None, help="Only this item.")
@click.option("--broker", "broker", type=int, default=None)
@_REMOTE
@_mode
@workflow_options
def restore(plan_id: str, item_id: str | None, broker: int | None, remote: bool, dry_run: bool, execute: bool,
            config_path: str | None, warehouse: str | None, as_json: bool) -> None:
    """Move quarantined items of PLAN_ID back to their original paths (dry run unless --execute).

    Exits 9 when an item was refused (or, with --execute, skipped), 5 when the plan is unknown.
    """
    from pipelines.execute.host_files import vet_named_files

    if remote:
        if broker is not None:
            raise click.UsageError("--broker and --remote are exclusive")
        from pipelines.cli.remote_execute import restore_remote_cmd

        return restore_remote_cmd(plan_id, item_id, _execute(dry_run, execute), config_path, warehouse, as_json)
    from pipelines.execute.restore import restore as do_restore
    from pipelines.metrics import executor_metrics as em

    app = load_host_app(config_path, warehouse)
    vet_named_files(app, _brokers(app, broker), controller=False)
    executed = _execute(dry_run, execute)
    if broker is not None and _nothing_for(app, plan_id, broker):
        document, line = _nothing_said(plan_id, broker, executed=executed, restored=[], skipped=[], failed=[])
        emit(as_json, [document], line)
        return
    store = open_store(app)
    reports = []
    for b in _brokers(app, broker):
        with step(f"restore plan {plan_id} on broker {b}") as done:
            r = do_restore(app, store, plan_id, b, item_id=item_id, execute=executed)
            done(f"{len(r.restored)} {'restored' if r.executed else 'to restore'}, {len(r.skipped)} skipped")
        if r.executed and r.restored:
            record(em.record_restore, app, b, [r.paths[i] for i in r.restored])
        reports.append(r)
    lines = [line for r in reports for line in text.restore_lines(r)]
    emit(as_json, [r.to_dict() for r in reports], "\n".join(lines))
    if any(r.failed or (r.executed and r.skipped) for r in reports):
        sys.exit(FAILED)


@click.command("purge")
@click.option("--older-than", "older_than", default=None,
              help="Override the retention (e.g. 7d, 12h); never below executor.purge_retention_floor_ms.")
@click.option("--broker", "broker", type=int, default=None)
@_REMOTE
@_mode
@workflow_options
def purge(older_than: str | None, broker: int | None, remote: bool, dry_run: bool, execute: bool,
          config_path: str | None, warehouse: str | None, as_json: bool) -> None:
    """Delete quarantined items past retention, paced; reports expected and statvfs-measured bytes.

    Exits 9 when an item was left alone because a check refused it (each is listed with the reason).
    """
    if remote:
        if broker is not None:
            raise click.UsageError("--broker and --remote are exclusive")
        from pipelines.cli.remote_execute import purge_remote_cmd

        return purge_remote_cmd(_duration(older_than), _execute(dry_run, execute), config_path, warehouse, as_json)
    from pipelines.execute.host_files import vet_named_files
    from pipelines.execute.purge import purge as do_purge
    from pipelines.metrics import executor_metrics as em

    app = load_host_app(config_path, warehouse)
    vet_named_files(app, _brokers(app, broker), controller=False)
    store = open_store(app)
    reports = []
    for b in _brokers(app, broker):
        with step(f"purge on broker {b}") as done:
            r = do_purge(app, b, older_than_ms=_duration(older_than), execute=_execute(dry_run, execute),
                         store=store)
            done(f"{len(r.items)} items {'purged' if r.executed else 'due'}, {human_bytes(r.expected_bytes)}")
        if r.executed and r.items:
            record(em.record_purge, app, b, len(r.items), r.expected_bytes)
        reports.append(r)
    emit(as_json, [r.to_dict() for r in reports], "\n".join(text.purge_lines(reports)))
    if any(r.failed for r in reports):
        sys.exit(FAILED)


@click.command("prestart")
@click.option("--broker", "broker", type=int, required=True)
@click.option("--budget", default=None, help="Time budget (default executor.prestart_time_budget_ms).")
@click.option("--worker-deadline", "worker_deadline", type=float, default=None, hidden=True)
@workflow_options
def prestart(broker: int, budget: str | None, worker_deadline: float | None, config_path: str | None,
             warehouse: str | None, as_json: bool) -> None:
    """Broker pre-start hook: apply approved plans' items for this broker within a time budget, then exit 0.

    Never blocks the broker: the work runs in a child process that is killed when the budget is spent (every step
    is journalled, so a killed apply resumes next time); a bad config, an unreachable warehouse, a refused plan or
    a held lock is reported, never fatal.
    """
    from pipelines.cli.prestart import run_worker, supervise

    try:
        if worker_deadline is not None:
            results = run_worker(config_path, warehouse, broker, worker_deadline)
        else:
            results = supervise(config_path, warehouse, broker, budget)
    except Exception as exc:  # the broker must start: whatever went wrong is reported, and the exit code is 0
        results = [{"error": f"prestart: {type(exc).__name__}: {exc}"}]
    lines = text.prestart_lines(results) if results else [f"nothing for broker {broker} in any approved plan"]
    emit(as_json, results, "\n".join(lines))
