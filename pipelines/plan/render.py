"""Markdown a reviewer reads: what a plan removes, why, how many bytes per broker, and what it is bound to.

Every value of a plan is written by whoever wrote the plan (or the warehouse): each goes through
``terminal_text.md_text``/``md_code``, so no name can split a table cell, forge a row or a heading, hide text with
terminal controls or bidi overrides, or make a link, HTML or math.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from pipelines.plan.model import GcPlan
from pipelines.terminal_text import md_code, md_text

__all__ = ["MARKDOWN_ITEMS", "human_bytes", "render_disagreements", "render_plan"]

MARKDOWN_ITEMS = 2000
"""A plan with more items than this is summarised in Markdown: per broker, per class and per log dir in full, items
listed up to this many (in broker, log dir, name order); the JSON file always holds every item."""


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _cell(text: object) -> str:
    return "" if text is None else md_text(text)


def _code(text: object) -> str:
    return "" if text is None else md_code(text, in_table=True)


def render_plan(plan: GcPlan) -> str:
    """The plan's Markdown summary (the JSON file is the authoritative content)."""
    lines = [
        f"# GC plan {md_code(plan.plan_id)}",
        "",
        f"- cluster: {md_code(plan.cluster)}"
        + (f" (cluster.id {md_code(plan.cluster_id)})" if plan.cluster_id else ""),
        f"- bound to crawl run {md_code(plan.run_id)} and controller metadata offset `{plan.metadata_offset}`"
        f" (image complete: {'yes' if plan.metadata_complete else 'NO'})",
        f"- created {plan.created_at.isoformat()} by {md_code(plan.created_by)}"
        + (f"; expires {plan.expires_at.isoformat()}" if plan.expires_at else ""),
        f"- content hash: {md_code(plan.content_hash)} (approvals bind to it; any change voids them)",
        f"- {len(plan.items)} directories, {human_bytes(plan.total_bytes)} reclaimable",
        "",
    ]
    if not plan.items:
        lines += ["Nothing to reclaim: no finding of this run was plannable.", ""]
        return "\n".join(lines)
    per_broker: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for item in plan.items:
        per_broker[item.broker_id][0] += 1
        per_broker[item.broker_id][1] += item.bytes
    lines += ["## Per broker", "", "| broker | dirs | bytes |", "|---:|---:|---:|"]
    lines += [f"| {b} | {n} | {human_bytes(size)} |" for b, (n, size) in sorted(per_broker.items())]
    classes = Counter(item.class_ for item in plan.items)
    lines += ["", "## Why", "", "| class | dirs |", "|---|---:|"]
    lines += [f"| {_cell(cls)} | {n} |" for cls, n in sorted(classes.items())]
    groups: dict[tuple[int, str], list[Any]] = defaultdict(list)
    for item in plan.items:
        groups[(item.broker_id, item.log_dir)].append(item)
    paged = len(plan.items) > MARKDOWN_ITEMS
    if paged:
        lines += ["", "## Per log dir", "", "| broker | log dir | dirs | bytes |", "|---:|---|---:|---:|"]
        lines += [f"| {b} | {_code(d)} | {len(items)} | {human_bytes(sum(i.bytes for i in items))} |"
                  for (b, d), items in sorted(groups.items())]
        lines += ["", f"## Items (the first {MARKDOWN_ITEMS:,} of {len(plan.items):,}, by broker, log dir and name;"
                  f" every item is in {md_code(plan.plan_id + '.json')})"]
    else:
        lines += ["", "## Items"]
    left = MARKDOWN_ITEMS
    for (broker, log_dir), items in sorted(groups.items()):
        if paged:  # the first MARKDOWN_ITEMS by broker, log dir and name
            if left <= 0:
                break
            items = sorted(items, key=lambda i: i.dir_name)[:left]
            left -= len(items)
        lines += ["", f"### broker {broker} · {md_code(log_dir)}", "",
                  "| item | directory | class | topic id | bytes | reason |", "|---|---|---|---|---:|---|"]
        lines += [f"| {_code(i.item_id)} | {_code(i.dir_name)} | {_cell(i.class_)} | {_code(i.topic_id)} | "
                  f"{human_bytes(i.bytes)} | {_cell(i.reason)} |" for i in items]
    lines.append("")
    return "\n".join(lines)


def render_disagreements(report: Mapping[str, Any]) -> str:
    """Markdown of a refused emission: every candidate the re-check did not confirm."""
    rows = report.get("disagreements", [])
    lines = [
        "# GC plan NOT emitted: re-check disagreement",
        "",
        f"Cluster {md_code(report.get('cluster'))}, run {md_code(report.get('run_id'))}, metadata offset"
        f" {md_code(report.get('metadata_offset'))}: {len(rows)} of {report.get('candidates')} candidates refused.",
        "The detector and the independent re-check must agree on every item; investigate before re-running.",
        "",
        "| broker | log dir | directory | detector | re-check | problem |",
        "|---:|---|---|---|---|---|",
    ]
    lines += [f"| {d['broker_id']} | {_code(d['log_dir'])} | {_code(d['dir_name'])} | {_cell(d['detector_class'])} | "
              f"{_cell(d['recheck_class'])} | {_cell(d['problem'])} |" for d in rows]
    lines.append("")
    return "\n".join(lines)
