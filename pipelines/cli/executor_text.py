"""The text reports of ``apply``, ``restore``, ``purge`` and ``prestart``.

Paths, item ids, plan ids and reasons come from a plan (written by whoever wrote the warehouse) or from directory
names on the disk: each is escaped and cut by ``terminal_text.shown`` so none can move the cursor, clear a line or
forge one on the operator's terminal. ``--json`` prints the reports' dicts as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pipelines.plan.render import human_bytes
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

if TYPE_CHECKING:
    from pipelines.execute.apply import ApplyReport
    from pipelines.execute.purge import PurgeReport
    from pipelines.execute.restore import RestoreReport

__all__ = ["apply_lines", "prestart_lines", "purge_lines", "restore_lines"]

PATH = 1024
"""Characters of a path or a message shown before it is cut."""


def apply_lines(report: ApplyReport) -> list[str]:
    lines = [f"{'APPLY' if report.executed else 'DRY RUN'} plan {shown(report.plan_id)} on broker {report.broker_id}"]
    lines += [f"  {i.action:<16} {shown(i.path, PATH)}" + (f"  ({shown(i.reason, PATH)})" if i.reason else "")
              for i in report.items]
    lines += [f"  problem: {shown(p, PATH)}" for p in report.problems]
    if report.executed:
        lines.append(f"  status: {report.status}; {report.bytes_quarantined:,} bytes quarantined; "
                     f"journal mirror: {shown(report.journal_mirrored, PATH)}")
    return lines


def restore_lines(report: RestoreReport) -> list[str]:
    """The human report of one broker's restore, laid out like ``apply``'s."""
    done, skip = ("restored", "skipped") if report.executed else ("would_restore", "would_skip")
    lines = [f"{'RESTORE' if report.executed else 'DRY RUN restore'} plan {shown(report.plan_id)} "
             f"on broker {report.broker_id}"]
    lines += [f"  {done:<16} {shown(report.paths[i], PATH)}" for i in report.restored]
    lines += [f"  {skip:<16} {shown(report.paths[i], PATH)}  ({shown(why, PATH)})" for i, why in report.skipped.items()]
    lines += [f"  {'failed':<16} {shown(report.paths[i], PATH)}  ({shown(why, PATH)})"
              for i, why in report.failed.items()]
    lines += [f"  problem: {shown(p, PATH)}" for p in report.problems]
    if not report.paths:
        lines.append("  nothing quarantined for this plan")
    elif report.executed:
        lines.append(f"  status: {len(report.restored)} restored, {len(report.skipped)} skipped, "
                     f"{len(report.failed)} failed" + (f"; plan {report.status}" if report.status else ""))
    return lines


def _measured(measured: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{shown(k, PATH)}: {v:,}" for k, v in measured.items()) + "}"


def purge_lines(reports: Sequence[PurgeReport]) -> list[str]:
    lines: list[str] = []
    for r in reports:
        lines.append(f"broker {r.broker_id}: {'purged' if r.executed else 'would purge'} {len(r.items)} items, "
                     f"expected {r.expected_bytes:,} bytes, measured {_measured(r.measured_bytes)}, kept {r.kept}")
        lines += [f"  failed {shown(key, PATH)}: {shown(why, PATH)}" for key, why in r.failed.items()]
        lines += [f"  problem: {shown(p, PATH)}" for p in r.problems]
    return lines


def _outcome(result: Mapping[str, Any]) -> str:
    """One line of a prestart outcome: an apply report's dict, a plan not started or refused, or an error."""
    if "error" in result:
        return f"prestart: {shown(redact_text(str(result['error'])).removeprefix('prestart: '), PATH)}"
    plan = shown(result.get("plan_id", "?"))
    if "skipped" in result:
        return f"plan {plan}: not started ({shown(result['skipped'], PATH)})"
    if "refused" in result:
        return f"plan {plan}: refused: {shown(result['refused'], PATH)}"
    items = result.get("items") or []
    counts = ", ".join(f"{n} {shown(a)}" for a, n in Counter(i.get("action", "?") for i in items).items())
    moved = human_bytes(int(result.get("bytes_quarantined") or 0))
    problems = result.get("problems") or []
    return (f"plan {plan} on broker {result.get('broker_id')}: {counts or 'no items'}; {moved} quarantined; "
            f"status {shown(result.get('status') or '-')}"
            + (f"; {len(problems)} problem(s): {shown(problems[0], PATH)}" if problems else ""))


def prestart_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """``prestart``'s text: one line per plan applied, not started or refused, and per error."""
    return [_outcome(r) if isinstance(r, Mapping) else f"prestart: {shown(r, PATH)}" for r in results] or [
        "prestart: nothing to apply"]
