"""``logdir-gc report``: the capacity figures and charts as one static HTML page (no Spark, no Jupyter)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.option("--warehouse", required=True, help="Root of the Delta tables (a directory or an s3:// URL).")
@click.option("--cluster", default=None, help="Cluster name (needed when the warehouse holds several).")
@click.option("--run-id", default=None, help="Crawl run to report on (default: the newest).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="HTML file to write.")
def report(warehouse: str, cluster: str | None, run_id: str | None, out: str) -> None:
    """Write a static HTML capacity report (inline PNG charts) for one cluster."""
    from pipelines.analytics.report import key_figures, render_report
    from pipelines.analytics.warehouse import open_warehouse
    from pipelines.terminal_text import shown

    wh = open_warehouse(warehouse, cluster)
    page = render_report(wh, run_id)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    figs = key_figures(wh, run_id)
    click.echo(f"wrote {shown(str(path), 1000)} ({len(page):,} bytes): cluster {shown(wh.cluster)}, "
               f"run {shown(figs['run_id'])}, {figs['reclaimable_dirs']} reclaimable dirs")
