"""Charts with a one-line takeaway computed from the same numbers, headless-safe.

Figures are built with ``matplotlib.figure.Figure`` directly (no ``pyplot``, no global backend): they render to
PNG anywhere (CI, a broker host) and show inline in Jupyter through :meth:`Chart._repr_html_`. Every ``plot_*``
function takes the DataFrame of its analytics function, so a notebook can print the table and the chart of the
same numbers.

Topic names, log dirs and run ids are chosen by whoever creates them: every label is escaped and cut by
``terminal_text.plot_label`` (no control or bidi character, and a ``$`` never starts matplotlib's mathtext, which
would fail on ``$\\foo$`` or render a formula), and the takeaway by ``shown``/``html_text`` where it is printed.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from pipelines.analytics.fmt import human_bytes, pct
from pipelines.terminal_text import html_text, plot_label, shown

__all__ = [
    "Chart",
    "plot_disk_by_broker",
    "plot_growth",
    "plot_jbod_skew",
    "plot_ledger",
    "plot_partitions_per_broker",
    "plot_reclaimable_by_broker",
    "plot_reclaimable_by_class",
    "plot_reclaimable_over_time",
    "plot_top_topics",
]

_BLUE, _ORANGE, _GREY, _RED = "#3b6ea5", "#e69138", "#b7b7b7", "#c0392b"


@dataclass(frozen=True)
class Chart:
    """A titled figure and the sentence that says what it shows."""

    name: str
    title: str
    figure: Figure
    takeaway: str

    def png(self, dpi: int = 100) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        return buf.getvalue()

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png()).decode("ascii")

    def html(self) -> str:
        return (f'<figure id="{html.escape(self.name)}"><img alt="{html.escape(self.title)}" src="{self.data_uri()}">'
                f'<figcaption>{html_text(self.takeaway, 2000)}</figcaption></figure>')

    def _repr_html_(self) -> str:
        return self.html()

    def __str__(self) -> str:
        return f"{self.title}: {shown(self.takeaway, 2000)}"


def _figure(title: str, width: float = 7.5, height: float = 3.6) -> tuple[Figure, object]:
    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot()
    ax.set_title(title, loc="left", fontsize=11, pad=22)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _empty(name: str, title: str, why: str) -> Chart:
    fig, ax = _figure(title, height=1.6)
    ax.axis("off")
    ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=10, color="#555555")
    return Chart(name, title, fig, why)


def _unit(*series: pd.Series) -> tuple[float, str]:
    """The binary unit that keeps the largest value of ``series`` between 1 and 1024."""
    peak = max((float(x.abs().max()) for x in series if len(x)), default=0.0)
    for power, label in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if peak >= 1024**power:
            return float(1024**power), label
    return 1.0, "bytes"


def _legend(ax) -> None:
    ax.legend(frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8)


def _short(log_dir: str) -> str:
    parts = str(log_dir).rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else parts[0]


def _labels(values: Iterable[object]) -> list[str]:
    """Safe, distinct category labels (two names cut to the same text would share one bar)."""
    out: list[str] = []
    seen: set[str] = set()
    for v in values:
        label = plot_label(v)
        while label in seen:
            label += "'"
        seen.add(label)
        out.append(label)
    return out


def plot_disk_by_broker(df: pd.DataFrame) -> Chart:
    """Stacked bars: live vs other partition-dir bytes per broker (from ``disk_by_broker``)."""
    title = "Disk by broker"
    if df.empty:
        return _empty("disk_by_broker", title, "no partition directories crawled")
    fig, ax = _figure(title)
    labels = [f"broker {b}" for b in df["broker_id"]]
    div, unit = _unit(df["bytes"])
    live = df["live_bytes"] / div
    other = (df["bytes"] - df["live_bytes"]) / div
    ax.bar(labels, live, color=_BLUE, label="live")
    ax.bar(labels, other, bottom=live, color=_ORANGE, label="other dirs")
    ax.set_ylabel(unit)
    _legend(ax)
    top = df.loc[df["bytes"].idxmax()]
    low = df["bytes"].min()
    spread = f"{top['bytes'] / low:.2f}x the smallest" if low > 0 else "others hold nothing"
    takeaway = (f"Broker {int(top['broker_id'])} holds the most: {human_bytes(top['bytes'])} "
                f"({pct(top['share'])} of {human_bytes(df['bytes'].sum())}), {spread}.")
    return Chart("disk_by_broker", title, fig, takeaway)


def plot_jbod_skew(df: pd.DataFrame) -> Chart:
    """Bars of each log dir's bytes relative to its broker's mean (from ``disk_by_log_dir``)."""
    title = "JBOD skew: log-dir bytes / broker mean"
    if df.empty:
        return _empty("jbod_skew", title, "no log dirs crawled")
    fig, ax = _figure(title)
    labels = _labels(f"b{b} {_short(d)}" for b, d in zip(df["broker_id"], df["log_dir"], strict=True))
    colors = [_RED if s >= 1.25 else _BLUE for s in df["skew"]]
    ax.bar(labels, df["skew"], color=colors)
    ax.axhline(1.0, color=_GREY, linestyle="--", linewidth=1)
    ax.set_ylabel("x broker mean")
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    top = df.loc[df["skew"].idxmax()]
    takeaway = (f"Most loaded log dir: broker {int(top['broker_id'])} {top['log_dir']} at {top['skew']:.2f}x its "
                f"broker's mean ({pct(top['share_of_broker'])} of the broker's bytes).")
    return Chart("jbod_skew", title, fig, takeaway)


def plot_top_topics(df: pd.DataFrame) -> Chart:
    """Horizontal bars of the biggest topics (from ``top_topics``)."""
    title = "Top topics by bytes"
    if df.empty:
        return _empty("top_topics", title, "no topics crawled")
    fig, ax = _figure(title, height=max(2.5, 0.35 * len(df) + 1))
    div, unit = _unit(df["bytes"])
    ax.barh(_labels(df["topic"])[::-1], df["bytes"][::-1] / div, color=_BLUE)
    ax.set_xlabel(unit)
    first = df.iloc[0]
    top3 = df["share"].head(3).sum()
    takeaway = (f"{first['topic']} is the biggest topic: {human_bytes(first['bytes'])} ({pct(first['share'])}); "
                f"the top {min(3, len(df))} hold {pct(top3)} of all partition-dir bytes.")
    return Chart("top_topics", title, fig, takeaway)


def plot_partitions_per_broker(df: pd.DataFrame) -> Chart:
    """Live dirs on disk vs replicas the controller assigns, per broker (from ``partitions_per_broker``)."""
    title = "Partition dirs per broker: on disk vs assigned"
    if df.empty:
        return _empty("partitions_per_broker", title, "no partition directories crawled")
    fig, ax = _figure(title)
    x = range(len(df))
    ax.bar([i - 0.2 for i in x], df["live"], width=0.4, color=_BLUE, label="live dirs on disk")
    ax.bar([i + 0.2 for i in x], df["assigned"], width=0.4, color=_GREY, label="assigned by controller")
    ax.set_xticks(list(x), [f"broker {b}" for b in df["broker_id"]])
    _legend(ax)
    extra = df[df["unaccounted_live"] != 0]
    if extra.empty:
        takeaway = "Every broker has exactly as many live dirs as the controller assigns it."
    else:
        worst = extra.loc[extra["unaccounted_live"].abs().idxmax()]
        takeaway = (f"{len(extra)} broker(s) differ from their assignment; broker {int(worst['broker_id'])} has "
                    f"{int(worst['live'])} live dirs for {int(worst['assigned'])} assigned replicas.")
    return Chart("partitions_per_broker", title, fig, takeaway)


def _reclaim_bars(df: pd.DataFrame, key: str, labels: list[str], name: str, title: str) -> Chart:
    fig, ax = _figure(title, height=max(2.5, 0.4 * len(df) + 1))
    div, unit = _unit(df["bytes"])
    now = df["plannable_bytes"] / div
    later = (df["bytes"] - df["plannable_bytes"]) / div
    ax.barh(labels[::-1], now[::-1], color=_BLUE, label="plannable now")
    ax.barh(labels[::-1], later[::-1], left=now[::-1], color=_ORANGE, label="waiting (grace / evidence)")
    ax.set_xlabel(unit)
    _legend(ax)
    top = df.loc[df["bytes"].idxmax()]
    what = top[key] if key == "class" else f"broker {int(top[key])}"
    takeaway = (f"{human_bytes(df['bytes'].sum())} reclaimable in {int(df['dirs'].sum())} dirs "
                f"({human_bytes(df['plannable_bytes'].sum())} plannable now); largest: {what} with "
                f"{human_bytes(top['bytes'])}.")
    return Chart(name, title, fig, takeaway)


def plot_reclaimable_by_class(df: pd.DataFrame) -> Chart:
    """Reclaimable bytes per finding class, plannable part highlighted (from ``reclaimable_by_class``)."""
    title = "Reclaimable bytes by finding class"
    if df.empty:
        return _empty("reclaimable_by_class", title, "nothing reclaimable: no garbage directories found")
    return _reclaim_bars(df, "class", _labels(df["class"]), "reclaimable_by_class", title)


def plot_reclaimable_by_broker(df: pd.DataFrame) -> Chart:
    """Reclaimable bytes per broker (from ``reclaimable_by_broker``)."""
    title = "Reclaimable bytes by broker"
    if df.empty:
        return _empty("reclaimable_by_broker", title, "nothing reclaimable: no garbage directories found")
    return _reclaim_bars(df, "broker_id", [f"broker {b}" for b in df["broker_id"]], "reclaimable_by_broker", title)


def plot_ledger(df: pd.DataFrame) -> Chart:
    """Per log dir: attributed vs unexplained bytes of the filesystem's used bytes (from ``unexplained_ledger``)."""
    title = "Unexplained-bytes ledger (filesystem used vs attributed)"
    known = df[df["fs_used_bytes"].notna()] if not df.empty else df
    if known.empty:
        return _empty("ledger", title, "no filesystem totals recorded (the backend could not run statvfs)")
    fig, ax = _figure(title)
    labels = _labels(f"b{b} {_short(d)}" for b, d in zip(known["broker_id"], known["log_dir"], strict=True))
    div, unit = _unit(known["fs_used_bytes"].astype(float), known["attributed_bytes"].astype(float))
    attributed = known["attributed_bytes"].astype(float) / div
    gap = known["unexplained_bytes"].astype(float) / div
    ax.bar(labels, attributed, color=_BLUE, label="attributed (partitions + known files)")
    ax.bar(labels, gap.clip(lower=0), bottom=attributed, color=_RED, label="unexplained")
    ax.set_ylabel(unit)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    _legend(ax)
    top = known.loc[known["unexplained_bytes"].astype(float).idxmax()]
    note = " (log dirs share a filesystem: see the per-filesystem ledger)" if bool(known["shared_fs"].any()) else ""
    takeaway = (f"Largest gap: broker {int(top['broker_id'])} {top['log_dir']}, {human_bytes(top['unexplained_bytes'])}"
                f" unexplained ({pct(float(top['unexplained_share']))} of its {human_bytes(top['fs_used_bytes'])} "
                f"used){note}.")
    return Chart("ledger", title, fig, takeaway)


def plot_growth(df: pd.DataFrame, key: str = "topic", n: int = 10) -> Chart:
    """Bytes gained between the first and the last run, top ``n`` (from ``growth_by_topic``/``growth_by_broker``)."""
    what = "topic" if key == "topic" else "broker"
    title = f"Growth per {what} since the first run"
    name = f"growth_by_{what}"
    if df.empty or "growth_bytes" not in df:
        return _empty(name, title, "no crawl runs yet")
    runs = [c for c in df.columns if c not in {key, "first_bytes", "last_bytes", "growth_bytes", "last_step_bytes",
                                               "growth_pct"}]
    top = df.reindex(df["growth_bytes"].abs().sort_values(ascending=False).index).head(n)
    fig, ax = _figure(title, height=max(2.5, 0.35 * len(top) + 1))
    labels = _labels(str(v) if key == "topic" else f"broker {v}" for v in top[key])
    colors = [_BLUE if g >= 0 else _ORANGE for g in top["growth_bytes"]]
    div, unit = _unit(top["growth_bytes"])
    ax.barh(labels[::-1], (top["growth_bytes"] / div)[::-1], color=colors[::-1])
    ax.axvline(0, color=_GREY, linewidth=1)
    ax.set_xlabel(unit)
    if len(runs) < 2:
        return Chart(name, title, fig, f"Only one crawl run ({runs[0] if runs else 'none'}): no growth to show yet.")
    best = df.loc[df["growth_bytes"].idxmax()]
    label = best[key] if key == "topic" else f"broker {int(best[key])}"
    takeaway = (f"Fastest growing {what}: {label}, +{human_bytes(best['growth_bytes'])} "
                f"({best['growth_pct']:+.1f}%) from {runs[0]} to {runs[-1]}; net change over all "
                f"{what}s {human_bytes(df['growth_bytes'].sum())}.")
    return Chart(name, title, fig, takeaway)


def plot_reclaimable_over_time(df: pd.DataFrame) -> Chart:
    """Reclaimable and plannable bytes per crawl run (from ``reclaimable_over_time``)."""
    title = "Reclaimable bytes over time"
    if df.empty:
        return _empty("reclaimable_over_time", title, "no crawl runs yet")
    fig, ax = _figure(title)
    x = _labels(str(r) for r in df["run_id"])
    div, unit = _unit(df["reclaimable_bytes"])
    ax.plot(x, df["reclaimable_bytes"] / div, marker="o", color=_RED, label="reclaimable")
    ax.plot(x, df["plannable_bytes"] / div, marker="o", color=_BLUE, label="plannable")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    _legend(ax)
    first, last = df.iloc[0], df.iloc[-1]
    takeaway = (f"Reclaimable went from {human_bytes(first['reclaimable_bytes'])} ({first['run_id']}) to "
                f"{human_bytes(last['reclaimable_bytes'])} ({last['run_id']}), {pct(last['reclaimable_share'])} "
                f"of the bytes crawled in the last run.")
    return Chart("reclaimable_over_time", title, fig, takeaway)
