"""Charts of the fleet view (one bar per cluster), built like :mod:`pipelines.analytics.plots`: a headless
``Figure`` and a takeaway computed from the same numbers; cluster names are escaped and cut (``plot_label``)."""

from __future__ import annotations

import pandas as pd

from pipelines.analytics.fmt import human_bytes, pct
from pipelines.analytics.plots import _BLUE, _GREY, _ORANGE, _RED, Chart, _empty, _figure, _labels, _legend, _unit

__all__ = ["plot_fleet_disk", "plot_fleet_growth", "plot_fleet_over_time", "plot_fleet_reclaimable",
           "plot_remote_beside_local"]


#: Bars per cluster chart: the largest clusters (the tables beside the charts list them all; the takeaways count
#: every cluster). One bar summing the rest would dwarf them all.
CHART_CLUSTERS = 20


def _height(rows: int) -> float:
    return max(2.5, 0.28 * rows + 1)


def _largest(df: pd.DataFrame, by: str, title: str) -> tuple[pd.DataFrame, str]:
    """The ``CHART_CLUSTERS`` rows with the largest ``by`` and the title saying so when some are left out."""
    if len(df) <= CHART_CLUSTERS:
        return df, title
    top = df.sort_values([by, "cluster"], ascending=[False, True]).head(CHART_CLUSTERS)
    return top, f"{title}: the {CHART_CLUSTERS} largest of {len(df)}"


def plot_fleet_disk(df: pd.DataFrame) -> Chart:
    """Live vs other partition-dir bytes per cluster, the largest ``CHART_CLUSTERS`` (from ``fleet_by_cluster``)."""
    title = "Disk by cluster (newest run of each)"
    if df.empty:
        return _empty("fleet_disk", title, "no crawl runs in this warehouse")
    bars, shown_title = _largest(df, "bytes", title)
    fig, ax = _figure(shown_title, height=_height(len(bars)))
    labels = _labels(bars["cluster"])[::-1]
    div, unit = _unit(bars["bytes"])
    live = (bars["live_bytes"] / div)[::-1]
    other = ((bars["bytes"] - bars["live_bytes"]) / div)[::-1]
    ax.barh(labels, live, color=_BLUE, label="live")
    ax.barh(labels, other, left=live, color=_ORANGE, label="other dirs")
    ax.set_xlabel(unit)
    _legend(ax)
    top = df.loc[df["bytes"].idxmax()]
    takeaway = (f"{len(df)} clusters hold {human_bytes(df['bytes'].sum())} in {int(df['partition_dirs'].sum()):,} "
                f"partition dirs; the largest is {top['cluster']} with {human_bytes(top['bytes'])} "
                f"({pct(top['share'])}).")
    return Chart("fleet_disk", title, fig, takeaway)


def plot_fleet_reclaimable(df: pd.DataFrame) -> Chart:
    """Reclaimable bytes per cluster, plannable part first, the largest ``CHART_CLUSTERS`` (``fleet_by_cluster``)."""
    title = "Reclaimable bytes by cluster"
    if df.empty or not df["reclaimable_bytes"].any():
        return _empty("fleet_reclaimable", title, "nothing reclaimable in any cluster")
    bars, shown_title = _largest(df, "reclaimable_bytes", title)
    fig, ax = _figure(shown_title, height=_height(len(bars)))
    labels = _labels(bars["cluster"])[::-1]
    div, unit = _unit(bars["reclaimable_bytes"])
    now = (bars["plannable_bytes"] / div)[::-1]
    later = ((bars["reclaimable_bytes"] - bars["plannable_bytes"]) / div)[::-1]
    ax.barh(labels, now, color=_BLUE, label="plannable now")
    ax.barh(labels, later, left=now, color=_ORANGE, label="waiting (grace / evidence)")
    ax.set_xlabel(unit)
    _legend(ax)
    top = df.loc[df["reclaimable_bytes"].idxmax()]
    takeaway = (f"{human_bytes(df['reclaimable_bytes'].sum())} reclaimable in {int(df['reclaimable_dirs'].sum()):,} "
                f"dirs over {int((df['reclaimable_bytes'] > 0).sum())} clusters "
                f"({human_bytes(df['plannable_bytes'].sum())} plannable now); most in {top['cluster']}: "
                f"{human_bytes(top['reclaimable_bytes'])}.")
    return Chart("fleet_reclaimable", title, fig, takeaway)


def plot_fleet_growth(df: pd.DataFrame, n: int = CHART_CLUSTERS) -> Chart:
    """Bytes gained per cluster between its first and newest run, top ``n`` (from ``fleet_growth``)."""
    title = "Growth per cluster since its first run"
    if df.empty:
        return _empty("fleet_growth", title, "no crawl runs yet")
    top = df.reindex(df["growth_bytes"].abs().sort_values(ascending=False).index).head(n)
    fig, ax = _figure(title, height=_height(len(top)))
    div, unit = _unit(top["growth_bytes"])
    ax.barh(_labels(top["cluster"])[::-1], (top["growth_bytes"] / div)[::-1],
            color=[_BLUE if g >= 0 else _ORANGE for g in top["growth_bytes"]][::-1])
    ax.axvline(0, color=_GREY, linewidth=1)
    ax.set_xlabel(unit)
    best = df.loc[df["growth_bytes"].idxmax()]
    takeaway = (f"Fastest growing cluster: {best['cluster']}, {human_bytes(best['growth_bytes'])} over "
                f"{int(best['runs'])} run(s); net change over the fleet {human_bytes(df['growth_bytes'].sum())}.")
    return Chart("fleet_growth", title, fig, takeaway)


def plot_fleet_over_time(df: pd.DataFrame) -> Chart:
    """The fleet's reclaimable and plannable bytes per crawl day (from ``fleet_reclaimable_over_time``)."""
    title = "Fleet reclaimable bytes over time"
    if df.empty:
        return _empty("fleet_over_time", title, "no crawl runs yet")
    fig, ax = _figure(title)
    x = [f"{d:%Y-%m-%d}" for d in df["day"]]
    div, unit = _unit(df["reclaimable_bytes"])
    ax.plot(x, df["reclaimable_bytes"] / div, marker="o", color=_RED, label="reclaimable")
    ax.plot(x, df["plannable_bytes"] / div, marker="o", color=_BLUE, label="plannable")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    _legend(ax)
    first, last = df.iloc[0], df.iloc[-1]
    takeaway = (f"Reclaimable went from {human_bytes(first['reclaimable_bytes'])} ({x[0]}) to "
                f"{human_bytes(last['reclaimable_bytes'])} ({x[-1]}, {int(last['clusters'])} clusters), "
                f"{pct(last['reclaimable_share'])} of the fleet's partition-dir bytes.")
    return Chart("fleet_over_time", title, fig, takeaway)


def plot_remote_beside_local(df: pd.DataFrame) -> Chart:
    """Local partition-dir bytes and remote-tier bytes per cluster, side by side, the largest ``CHART_CLUSTERS``
    (``RemoteView.by_cluster``, of the fleet or of one cluster); clusters without a remote figure count as local
    only in the takeaway."""
    title = "Local and remote (KIP-405) bytes by cluster"
    tiered = df[df["remote_bytes"].notna()] if len(df) else df
    if tiered.empty:
        return _empty("remote_beside_local", title, "no cluster has remote segments in its newest run")
    both = tiered.assign(total=tiered["local_bytes"] + tiered["remote_bytes"].astype("int64"))
    bars, shown_title = _largest(both, "total", title)
    fig, ax = _figure(shown_title, height=_height(2 * len(bars)))
    labels = _labels(bars["cluster"])[::-1]
    remote = bars["remote_bytes"].astype("int64")
    div, unit = _unit(bars["local_bytes"], remote)
    y = list(range(len(bars)))
    ax.barh([i + 0.2 for i in y], list((bars["local_bytes"] / div)[::-1]), height=0.4, color=_BLUE,
            label="local (broker disks)")
    ax.barh([i - 0.2 for i in y], list((remote / div)[::-1]), height=0.4, color=_ORANGE, label="remote tier")
    ax.set_yticks(y, labels)
    ax.set_xlabel(unit)
    _legend(ax)
    local, far = int(tiered["local_bytes"].sum()), int(tiered["remote_bytes"].sum())
    top = both.loc[both["remote_bytes"].astype("int64").idxmax()]
    takeaway = (f"{len(tiered)} tiered cluster(s) hold {human_bytes(far)} in the remote tier beside "
                f"{human_bytes(local)} on broker disks ({pct(far / (far + local) if far + local else 0.0)} remote); "
                f"the most remote: {top['cluster']} with {human_bytes(top['remote_bytes'])}.")
    return Chart("remote_beside_local", title, fig, takeaway)
