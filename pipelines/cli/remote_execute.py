"""``apply PLAN --remote``, ``restore PLAN --remote``, ``purge --remote``: the remote executor behind the same
commands, exit codes and dry-run default as the local one (``execute_cmd``). Keys are shown through
``terminal_text.shown`` like every path (``executor_text``)."""

from __future__ import annotations

import sys

from pipelines.cli import executor_text as text
from pipelines.cli.executor_hooks import action_counts, step
from pipelines.cli.exit_codes import FAILED, PRECONDITION
from pipelines.cli.host_config import load_host_app
from pipelines.cli.workflow_options import emit, open_store
from pipelines.plan.render import human_bytes

__all__ = ["apply_remote_cmd", "purge_remote_cmd", "restore_remote_cmd"]


def apply_remote_cmd(plan_id: str, plan_file: str | None, executed: bool, config_path: str | None,
                     warehouse: str | None, as_json: bool) -> None:
    from pipelines.execute.host_files import vet_named_files
    from pipelines.execute_remote.apply import apply_remote

    app = load_host_app(config_path, warehouse)
    vet_named_files(app, [], controller=True)
    with step(f"apply plan {plan_id} on the remote tier") as done:
        report = apply_remote(app, open_store(app), plan_id, execute=executed, plan_file=plan_file)
        done(action_counts(report.items)
             + (f"; {human_bytes(report.bytes_quarantined)} quarantined" if report.executed else ""))
    emit(as_json, report.to_dict(), "\n".join(text.apply_lines(report)).replace(
        f"on broker {report.broker_id}", "on the remote tier", 1))
    if report.count("failed"):
        sys.exit(FAILED)
    if report.count("skipped", "not_reached"):
        sys.exit(PRECONDITION)


def restore_remote_cmd(plan_id: str, item_id: str | None, executed: bool, config_path: str | None,
                       warehouse: str | None, as_json: bool) -> None:
    from pipelines.execute_remote.restore_purge import restore_remote

    app = load_host_app(config_path, warehouse)
    with step(f"restore plan {plan_id} on the remote tier") as done:
        r = restore_remote(app, open_store(app), plan_id, item_id=item_id, execute=executed)
        done(f"{len(r.restored)} {'restored' if r.executed else 'to restore'}, {len(r.skipped)} skipped")
    emit(as_json, [r.to_dict()], "\n".join(text.restore_lines(r)).replace(
        f"on broker {r.broker_id}", "on the remote tier", 1))
    if r.failed or (r.executed and r.skipped):
        sys.exit(FAILED)


def purge_remote_cmd(older_than_ms: int | None, executed: bool, config_path: str | None, warehouse: str | None,
                     as_json: bool) -> None:
    from pipelines.execute_remote.restore_purge import purge_remote

    app = load_host_app(config_path, warehouse)
    with step("purge on the remote tier") as done:
        r = purge_remote(app, older_than_ms=older_than_ms, execute=executed, store=open_store(app))
        done(f"{len(r.items)} items {'purged' if r.executed else 'due'}, {human_bytes(r.expected_bytes)}")
    emit(as_json, [r.to_dict()], "\n".join(text.purge_lines([r])).replace(
        f"broker {r.broker_id}:", "remote tier:", 1))
    if r.failed:
        sys.exit(FAILED)
