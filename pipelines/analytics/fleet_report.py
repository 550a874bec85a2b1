"""The fleet capacity report: every cluster of a warehouse on one static HTML page (per-cluster rows and charts,
fleet totals), in the single-cluster report's style (:mod:`pipelines.analytics.report`): no scripts, no external
resources, every name escaped and cut."""

from __future__ import annotations

from datetime import datetime, timezone

from pipelines.analytics import fleet as f
from pipelines.analytics import fleet_plots, plots
from pipelines.analytics.fleet_figures import fleet_figures
from pipelines.analytics.fleet_remote import fleet_remote_view
from pipelines.analytics.fmt import human_bytes
from pipelines.analytics.remote_bytes import RemoteView
from pipelines.analytics.report import Section, page_html
from pipelines.redaction import redact_text
from pipelines.terminal_text import html_text

__all__ = ["fleet_sections", "remote_sections", "render_fleet_report"]

#: Per-cluster tables list every cluster (a fleet of a few hundred clusters is still one page).
_ALL_ROWS = 10_000


def fleet_sections(fleet: f.Fleet, remote_view: RemoteView | None = None) -> list[Section]:
    """Every section of the fleet report, in page order."""
    by_cluster = f.fleet_by_cluster(fleet)
    top = f.fleet_top_topics(fleet, 10)
    labelled = top.assign(topic=top["cluster"].astype(str) + " / " + top["topic"].astype(str))
    by_class = f.fleet_by_class(fleet)
    growth = f.fleet_growth(fleet)
    over_time = f.fleet_reclaimable_over_time(fleet)
    reclaim_columns = ["cluster", "run_id", "reclaimable_dirs", "reclaimable_bytes", "plannable_dirs",
                       "plannable_bytes", "unexplained_bytes"]
    return [
        Section("Clusters", fleet_plots.plot_fleet_disk(by_cluster), by_cluster.drop(columns=reclaim_columns[2:]),
                "Each cluster's newest crawl run."),
        Section("Reclaimable by cluster", fleet_plots.plot_fleet_reclaimable(by_cluster), by_cluster[reclaim_columns],
                "Garbage classes, not protected; unexplained = filesystem used bytes minus attributed bytes, each "
                "filesystem counted once."),
        Section("Reclaimable by class (fleet)", plots.plot_reclaimable_by_class(by_class), by_class),
        Section("Top topics across the fleet", plots.plot_top_topics(labelled), top),
        Section("Growth per cluster", fleet_plots.plot_fleet_growth(growth), growth),
        Section("Reclaimable over time", fleet_plots.plot_fleet_over_time(over_time), over_time),
        *remote_sections(fleet, remote_view),
        Section("Newest GC plan per cluster", None, f.fleet_plans(fleet),
                "Review a plan with notebooks/gc_plan_review.ipynb (cluster and plan_id parameters)."),
    ]


def remote_sections(fleet: f.Fleet, view: RemoteView | None = None) -> list[Section]:
    """The remote tier (KIP-405) beside the local bytes, per cluster, class and topic; one section saying why there
    is nothing to show when no cluster's newest run has remote segments."""
    view = view if view is not None else fleet_remote_view(fleet, 10)
    if not view.configured:
        return [Section("Remote tier (KIP-405)", None, view.by_cluster, view.note)]
    top = view.top_topics
    return [
        Section("Remote tier (KIP-405) by cluster", fleet_plots.plot_remote_beside_local(view.by_cluster),
                view.by_cluster, view.note),
        Section("Remote tier by class (fleet)", None, view.by_class),
        Section("Remote tier by cluster and class", None, view.by_cluster_class),
        Section("Remote tier: top topics across the fleet", None, top,
                "local_bytes: the topic's partition-dir bytes in the same cluster's newest run."),
    ]


def render_fleet_report(fleet: f.Fleet, *, generated_at: datetime | None = None) -> str:
    """The whole fleet report as one HTML document."""
    at = generated_at or datetime.now(timezone.utc)
    remote = fleet_remote_view(fleet, 10)  # read once: for the tiles and for the sections
    figs = fleet_figures(fleet, remote)
    tiles = [
        ("clusters", f"{figs['clusters']:,}"),
        ("partition-dir bytes", human_bytes(figs["total_bytes"])),
        ("partition dirs", f"{figs['partition_dirs']:,}"),
        ("brokers / log dirs", f"{figs['brokers']:,} / {figs['log_dirs']:,}"),
        ("reclaimable", human_bytes(figs["reclaimable_bytes"])),
        ("plannable now", human_bytes(figs["plannable_bytes"])),
        ("unexplained (per filesystem)", human_bytes(figs["unexplained_bytes"])),
    ]
    if figs["remote_bytes"] is not None:
        tiles.append(("remote tier (KIP-405)", human_bytes(figs["remote_bytes"])))
    meta = (f"newest run of each cluster · warehouse {html_text(redact_text(fleet.root), 1000)} · "
            f"generated {at:%Y-%m-%d %H:%M} UTC")
    sections = fleet_sections(fleet, remote) if figs["clusters"] else None
    heading = f"Capacity report: fleet of {figs['clusters']} clusters"
    return page_html("fleet", heading, meta, tiles, sections, _ALL_ROWS)
