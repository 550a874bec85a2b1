"""``logdir-gc report``: the capacity figures and charts as one static HTML page (no Spark, no Jupyter), for one
cluster or, when the warehouse holds several and none is named, for the fleet."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from pipelines.analytics.fleet import Fleet


def _write(out: str, page: str) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _cluster_of_run(fleet: Fleet, run_id: str) -> str:
    """The one cluster with a crawl run ``run_id``.

    Raises:
        ConfigError: no cluster, or several (run ids from before they were unique), have that run.
    """
    from pipelines.analytics.fleet import fleet_runs
    from pipelines.errors import ConfigError
    from pipelines.terminal_text import shown

    runs = fleet_runs(fleet)
    owners = sorted(set(runs.loc[runs["run_id"] == run_id, "cluster"]))
    if len(owners) != 1:
        found = "no cluster has it" if not owners else f"clusters {shown(', '.join(owners))} have it: name one"
        raise ConfigError(f"run {shown(run_id)}: {found} (--cluster)")
    return str(owners[0])


@click.command("report")
@click.option("--warehouse", required=True, help="Root of the Delta tables (a directory or an s3:// URL).")
@click.option("--cluster", default=None,
              help="Cluster to report on; without it, the fleet (every cluster) when the warehouse holds several.")
@click.option("--run-id", default=None, help="Crawl run to report on (default: the newest); names its cluster.")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="HTML file to write.")
def report(warehouse: str, cluster: str | None, run_id: str | None, out: str) -> None:
    """Write a static HTML capacity report (inline PNG charts) for one cluster or for the fleet."""
    from pipelines.analytics.fleet import open_fleet
    from pipelines.analytics.fleet_figures import fleet_figures
    from pipelines.analytics.fleet_report import render_fleet_report
    from pipelines.analytics.report import key_figures, render_report
    from pipelines.analytics.warehouse import clusters_in, open_warehouse
    from pipelines.terminal_text import shown

    if cluster is None:
        fleet = open_fleet(warehouse)
        if len(clusters_in(fleet.store)) > 1:
            if run_id is None:
                page = render_fleet_report(fleet)
                path = _write(out, page)
                figs = fleet_figures(fleet)
                click.echo(f"wrote {shown(str(path), 1000)} ({len(page):,} bytes): fleet of {figs['clusters']} "
                           f"clusters, {figs['reclaimable_dirs']} reclaimable dirs")
                return
            cluster = _cluster_of_run(fleet, run_id)
    wh = open_warehouse(warehouse, cluster)
    if cluster is not None and cluster not in (held := clusters_in(wh.store)):
        from pipelines.errors import ConfigError

        raise ConfigError(f"{shown(wh.root, 1000)}: no cluster {shown(cluster)!r} in this warehouse (it holds: "
                          f"{shown(', '.join(held)) or 'none'}); check --cluster and --warehouse")
    page = render_report(wh, run_id)
    path = _write(out, page)
    figs = key_figures(wh, run_id)
    click.echo(f"wrote {shown(str(path), 1000)} ({len(page):,} bytes): cluster {shown(wh.cluster)}, "
               f"{'run ' + shown(figs['run_id']) if figs['run_id'] else 'no crawl run yet'}, "
               f"{figs['reclaimable_dirs']} reclaimable dirs")
