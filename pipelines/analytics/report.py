"""The capacity report: headline figures, every chart with its takeaway and the tables behind them, as one
static HTML page (charts inlined as base64 PNGs; no scripts, no external resources). Every name from the warehouse
is escaped (``terminal_text.html_text``: HTML, controls and bidi characters) and cut."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from pipelines.analytics import capacity, ledger, plots, reclaim, remote_bytes, review, trends
from pipelines.analytics.fmt import human_bytes, pct
from pipelines.analytics.warehouse import Warehouse
from pipelines.errors import PlanError
from pipelines.redaction import redact_text
from pipelines.terminal_text import html_text

__all__ = ["PAGE_CSS", "Section", "key_figures", "page_html", "render_report", "report_sections", "table_html"]


@dataclass(frozen=True)
class Section:
    title: str
    chart: plots.Chart | None
    table: pd.DataFrame
    note: str = ""


def key_figures(wh: Warehouse, run_id: str | None = None) -> dict[str, Any]:
    """The headline numbers of one run (default: the newest), JSON-ready."""
    run = wh.run_or_latest(run_id)
    by_broker = capacity.disk_by_broker(wh, run)
    by_class = reclaim.reclaimable_by_class(wh, run)
    led = ledger.unexplained_ledger(wh, run)
    fs = ledger.filesystem_ledger(wh, run)
    over_time = trends.reclaimable_over_time(wh)
    topics = capacity.top_topics(wh, 1, run)
    return {
        "cluster": wh.cluster,
        "run_id": run,
        "runs": len(wh.runs()),
        "brokers": len(by_broker),
        "log_dirs": len(led),
        "partition_dirs": int(by_broker["partition_dirs"].sum()),
        "total_bytes": int(by_broker["bytes"].sum()),
        "biggest_topic": None if topics.empty else str(topics["topic"].iloc[0]),
        "reclaimable_dirs": int(by_class["dirs"].sum()),
        "reclaimable_bytes": int(by_class["bytes"].sum()),
        "plannable_bytes": int(by_class["plannable_bytes"].sum()),
        "reclaimable_by_class": {str(k): int(v) for k, v in zip(by_class["class"], by_class["bytes"], strict=True)},
        "unexplained_bytes": int(fs["unexplained_bytes"].sum()) if len(fs) else None,
        "reclaimable_first_run": int(over_time["reclaimable_bytes"].iloc[0]) if len(over_time) else None,
        **remote_bytes.remote_figures(wh, run),
    }


def _plan_section(wh: Warehouse) -> Section | None:
    try:
        record = review.plan_record(wh)
    except PlanError:
        return None
    plan = record.plan()
    table = review.plan_breakdown(plan, ["class", "broker_id"])
    note = (f"Newest plan {record.plan_id}: {record.status}, {len(plan.items)} items, "
            f"{human_bytes(plan.total_bytes)}, created {plan.created_at:%Y-%m-%d %H:%M} UTC by {plan.created_by}. "
            "Review it with notebooks/gc_plan_review.ipynb.")
    return Section("Newest GC plan", None, table, note)


def report_sections(wh: Warehouse, run_id: str | None = None) -> list[Section]:
    """Every section of the report, in page order."""
    run = wh.run_or_latest(run_id)
    specs: list[tuple[str, Callable[[], pd.DataFrame], Callable[[pd.DataFrame], plots.Chart], str]] = [
        ("Disk by broker", lambda: capacity.disk_by_broker(wh, run), plots.plot_disk_by_broker, ""),
        ("Log dirs (JBOD skew)", lambda: capacity.disk_by_log_dir(wh, run), plots.plot_jbod_skew, ""),
        ("Top topics", lambda: capacity.top_topics(wh, 10, run), plots.plot_top_topics, ""),
        ("Partitions per broker", lambda: capacity.partitions_per_broker(wh, run), plots.plot_partitions_per_broker,
         ""),
        ("Reclaimable by class", lambda: reclaim.reclaimable_by_class(wh, run), plots.plot_reclaimable_by_class, ""),
        ("Reclaimable by broker", lambda: reclaim.reclaimable_by_broker(wh, run), plots.plot_reclaimable_by_broker,
         ""),
        ("Unexplained-bytes ledger", lambda: ledger.unexplained_ledger(wh, run), plots.plot_ledger,
         "Filesystem used bytes (statvfs during the crawl) minus the bytes the crawl attributed to partition dirs "
         "and Kafka's known files."),
        ("Growth per topic", lambda: trends.growth_by_topic(wh), plots.plot_growth, ""),
        ("Growth per broker", lambda: trends.growth_by_broker(wh),
         lambda df: plots.plot_growth(df, "broker_id"), ""),
        ("Reclaimable over time", lambda: trends.reclaimable_over_time(wh), plots.plot_reclaimable_over_time, ""),
    ]
    sections = []
    for title, table, chart, note in specs:
        df = table()
        sections.append(Section(title, chart(df), df, note))
    garbage = reclaim.garbage_dirs(wh, run)
    sections.insert(6, Section("Garbage directories", None, garbage.drop(columns=["reason"]),
                               "Former names come from the durable metadata_events history; garbage_days is the "
                               "grace clock (days since the metadata event that made the dir garbage)."))
    remote = remote_bytes.remote_by_class(wh, run)
    if not remote.empty:  # a tiered cluster with remote_tier: configured
        sections.append(Section("Remote tier (KIP-405) by class", None, remote,
                                "Bytes of the run's remote segments as listed in the tier (remote_ok included); "
                                "plannable_bytes: segments a plan may hold."))
        sections.append(Section("Remote tier: top topics", None, remote_bytes.remote_view(wh, run).top_topics,
                                "local_bytes: the topic's partition-dir bytes in the same run."))
    plan = _plan_section(wh)
    if plan is not None:
        sections.append(plan)
    return sections


def _cell(column: str, value: Any) -> str:
    if isinstance(value, np.generic):  # a nullable (Int64) column yields numpy scalars, not Python ones
        value = value.item()
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, int | float) and ("bytes" in column or column.startswith("run-")):
        return human_bytes(value)
    if isinstance(value, float) and ("share" in column):
        return pct(value)
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, pd.Timestamp | datetime):
        return f"{value:%Y-%m-%d %H:%M}"
    return str(value)


def table_html(df: pd.DataFrame, max_rows: int = 40) -> str:
    if df.empty:
        return '<p class="empty">no rows</p>'
    head = "".join(f"<th>{html_text(c)}</th>" for c in df.columns)
    body = []
    for row in df.head(max_rows).itertuples(index=False):
        cells = "".join(f"<td>{html_text(_cell(str(c), v), 1000)}</td>" for c, v in zip(df.columns, row, strict=True))
        body.append(f"<tr>{cells}</tr>")
    more = f'<p class="more">{len(df) - max_rows} more rows not shown</p>' if len(df) > max_rows else ""
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            f"</div>{more}")


PAGE_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;
color:#222;background:#fff}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:13px} .figures{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.figure{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:150px}
.figure b{display:block;font-size:20px} .figure span{color:#666;font-size:12px}
figure{margin:8px 0} figure img{max-width:100%} figcaption{font-weight:600;margin:4px 0 8px}
table{border-collapse:collapse;font-size:12px;margin:6px 0} th,td{border:1px solid #ddd;padding:3px 6px;
text-align:left;vertical-align:top} th{background:#f4f4f4} .note{color:#444;font-size:13px}
.scroll{overflow-x:auto} .empty{color:#888}
"""


def render_report(wh: Warehouse, run_id: str | None = None, *, generated_at: datetime | None = None) -> str:
    """The whole report as one HTML document."""
    at = generated_at or datetime.now(timezone.utc)
    figs = key_figures(wh, run_id)
    tiles = [
        ("partition-dir bytes", human_bytes(figs["total_bytes"])),
        ("partition dirs", f"{figs['partition_dirs']:,}"),
        ("brokers / log dirs", f"{figs['brokers']} / {figs['log_dirs']}"),
        ("reclaimable", human_bytes(figs["reclaimable_bytes"])),
        ("plannable now", human_bytes(figs["plannable_bytes"])),
        ("unexplained (per filesystem)", human_bytes(figs["unexplained_bytes"])),
    ]
    meta = (f'run {html_text(figs["run_id"])} of {figs["runs"]} · warehouse {html_text(redact_text(wh.root), 1000)} · '
            f"generated {at:%Y-%m-%d %H:%M} UTC")
    sections = None if figs["run_id"] is None else report_sections(wh, run_id)
    return page_html(html_text(wh.cluster), f"Capacity report: {html_text(wh.cluster)}", meta, tiles, sections)


def page_html(title: str, heading: str, meta: str, tiles: list[tuple[str, str]], sections: list[Section] | None,
              max_rows: int = 40) -> str:
    """A report page (the per-cluster one and the fleet's): heading, tiles of key figures, then each section's
    note, chart and table; ``sections`` None says there is no crawl run yet. ``title``, ``heading`` and ``meta``
    are HTML already."""
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>logdir-gc capacity report: {title}</title>", f"<style>{PAGE_CSS}</style></head><body>",
        f"<h1>{heading}</h1>", f'<p class="meta">{meta}</p>', '<div class="figures">',
        *[f'<div class="figure"><b>{html.escape(v)}</b><span>{html.escape(k)}</span></div>' for k, v in tiles],
        "</div>",
    ]
    if sections is None:
        out.append('<p class="empty">No crawl runs in this warehouse yet.</p>')
    for s in sections or ():
        out.append(f"<h2>{html.escape(s.title)}</h2>")
        if s.note:
            out.append(f'<p class="note">{html_text(s.note, 2000)}</p>')
        if s.chart is not None:
            out.append(s.chart.html())
            s.chart.figure.clear()
        out.append(table_html(s.table, max_rows))
    out.append("</body></html>")
    return "\n".join(out) + "\n"
