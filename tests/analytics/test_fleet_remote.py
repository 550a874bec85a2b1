"""The remote tier (KIP-405) in the fleet view: each cluster's remote bytes of its newest run beside its local
bytes, in ``fleet_figures`` (the notebook's JSON), the fleet report and the capacity notebook's remote cell.

The warehouse lies the ways a fleet's does: an older run of ``east`` holds a huge remote tier (it must not show as
current), a row labelled ``west`` carries ``east``'s newest run id (it belongs to neither newest run), and
``plain`` has no remote rows at all (its remote figure is unknown, not 0). Expected figures are summed here from
the classifier's own findings, not from the warehouse."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipelines import analytics as a
from pipelines.analytics import fleet_report
from pipelines.cli.main import main
from pipelines.remote_tier.classify import RemoteFinding
from tests.analytics.fleet_warehouses import add_cluster
from tests.analytics.remote_fleet import Segment, add_remote_findings

MiB, GiB = 2**20, 2**30
NEWEST = {"east": "east-2", "west": "west-1", "plain": "plain-1"}
RETIRED = "west.retired"


def _expected(findings: list[RemoteFinding]) -> dict[str, object]:
    by_class: Counter[str] = Counter()
    for f in findings:
        by_class[f.class_name] += f.bytes
    return {"remote_bytes": sum(f.bytes for f in findings),
            "remote_plannable_bytes": sum(f.bytes for f in findings if f.plannable),
            "remote_bytes_by_class": dict(by_class)}


@pytest.fixture(scope="module")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, dict[str, object]]]:
    """(warehouse with remote rows, the same warehouse before them, expected remote figures per tiered cluster)."""
    root = Path(tmp_path_factory.mktemp("remote-fleet"))
    wh = root / "warehouse"
    add_cluster(root, wh, "east", seed=3, runs=("east-1", "east-2"))
    add_cluster(root, wh, "west", seed=5, runs=("west-1",), brokers=3)
    add_cluster(root, wh, "plain", seed=7, runs=("plain-1",))
    local_only = root / "local-only"
    shutil.copytree(wh, local_only)
    east = add_remote_findings(wh, "east", "east-2", [Segment("orders", 5 * MiB), Segment("orders", 3 * MiB),
                                                       Segment("gone.topic", 7 * MiB, live=False)])
    west = add_remote_findings(wh, "west", "west-1", [Segment("orders", 11 * MiB),
                                                       Segment(RETIRED, 2 * MiB, live=False)])
    add_remote_findings(wh, "east", "east-1", [Segment("orders", 400 * GiB)])  # east's older run
    add_remote_findings(wh, "west", "east-2", [Segment("orders", 900 * GiB)])  # a run id that is not west's
    return wh, local_only, {"east": _expected(east), "west": _expected(west)}


def test_fleet_figures_carry_each_clusters_remote_bytes_of_its_newest_run(fleets) -> None:
    wh, _, expected = fleets
    figs = a.fleet_figures(a.open_fleet(str(wh)))
    assert expected["east"]["remote_bytes"] != expected["west"]["remote_bytes"]  # a mix-up would show
    assert {c for c, e in expected.items() if e["remote_plannable_bytes"]} == {"east", "west"}
    for cluster, want in expected.items():
        got = figs["by_cluster"][cluster]
        assert {k: got[k] for k in want} == want, cluster
        own = a.key_figures(a.open_warehouse(str(wh), cluster))  # the single-cluster view agrees
        assert {k: own[k] for k in want} == want
    assert figs["by_cluster"]["plain"]["remote_bytes"] is None  # no remote rows: unknown, not 0
    assert a.key_figures(a.open_warehouse(str(wh), "plain"))["remote_bytes"] is None
    assert figs["remote_bytes"] == sum(e["remote_bytes"] for e in expected.values())
    assert figs["remote_plannable_bytes"] == sum(e["remote_plannable_bytes"] for e in expected.values())
    classes: Counter[str] = Counter()
    for e in expected.values():
        classes.update(e["remote_bytes_by_class"])
    assert figs["remote_bytes_by_class"] == dict(classes)
    assert figs["by_cluster"]["east"]["total_bytes"] > 0  # the local figures stay beside the remote ones


def test_remote_top_topics_carry_the_same_clusters_local_bytes(fleets) -> None:
    wh, _, _ = fleets
    view = a.fleet_remote_view(a.open_fleet(str(wh)), 10)
    store = a.open_fleet(str(wh)).store
    top = {(r.cluster, r.topic): r for r in view.top_topics.itertuples(index=False)}
    assert set(top) == {("east", "orders"), ("east", "gone.topic"), ("west", "orders"), ("west", RETIRED)}
    assert top[("east", "orders")].bytes == 3 * 8 * MiB and top[("west", "orders")].bytes == 3 * 11 * MiB
    for cluster, run in (("east", "east-2"), ("west", "west-1")):
        dirs = store.read_rows("partition_dirs", {"cluster": cluster, "run_id": run})
        assert top[(cluster, "orders")].local_bytes == sum(r["bytes"] for r in dirs if r["topic"] == "orders") > 0
    assert top[("west", RETIRED)].local_bytes == 0


def _report(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(["report", *argv])
    return int(info.value.code or 0)


def _section(page: str, title: str) -> str:
    assert f"<h2>{title}</h2>" in page, f"no section {title!r}"
    return page.split(f"<h2>{title}</h2>")[1].split("<h2>")[0]


def test_fleet_report_shows_each_clusters_remote_bytes_beside_its_local_ones(fleets, tmp_path: Path) -> None:
    wh, _, expected = fleets
    out = tmp_path / "fleet.html"
    assert _report(["--warehouse", str(wh), "--out", str(out)]) == 0
    page = out.read_text()
    figs = a.fleet_figures(a.open_fleet(str(wh)))
    section = _section(page, "Remote tier (KIP-405) by cluster")
    for cluster, run in NEWEST.items():
        row = re.search(rf"<tr><td>{cluster}</td><td>{run}</td>(.*?)</tr>", section)
        assert row is not None, cluster
        cells = re.findall(r"<td>(.*?)</td>", row.group(1))
        assert cells[0] == a.human_bytes(figs["by_cluster"][cluster]["total_bytes"])  # local_bytes
        want = expected.get(cluster)
        assert cells[3] == (a.human_bytes(want["remote_bytes"]) if want else "")
        assert cells[4] == (a.human_bytes(want["remote_plannable_bytes"]) if want else "")
    assert 'id="remote_beside_local"' in section
    remote_total = sum(e["remote_bytes"] for e in expected.values())
    assert f"<b>{a.human_bytes(remote_total)}</b><span>remote tier (KIP-405)</span>" in page
    assert "remote_deleted_topic" in _section(page, "Remote tier by class (fleet)")
    assert f"<td>west</td><td>{RETIRED}</td>" in _section(page, "Remote tier: top topics across the fleet")


def test_fleet_report_without_a_remote_tier_says_it_is_not_configured(fleets, tmp_path: Path, capsys) -> None:
    _, local_only, _ = fleets
    out = tmp_path / "fleet.html"
    assert _report(["--warehouse", str(local_only), "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    page = out.read_text()
    assert ("The remote tier is not configured, or was not listed: no cluster&#x27;s newest crawl run has "
            "remote_findings rows.") in _section(page, "Remote tier (KIP-405)")  # the tables exist, empty
    assert "remote tier (KIP-405)</span>" not in page
    figs = a.fleet_figures(a.open_fleet(str(local_only)))
    assert figs["remote_bytes"] is None and figs["by_cluster"]["east"]["remote_bytes"] is None
    for table in ("remote_objects", "remote_log_segments", "remote_findings"):  # a warehouse from before the tier
        shutil.rmtree(local_only / table, ignore_errors=True)
    sections = fleet_report.remote_sections(a.open_fleet(str(local_only)))
    assert [(s.title, s.note) for s in sections] == [
        ("Remote tier (KIP-405)", "The remote tier is not configured: this warehouse has no remote_findings table.")]
    assert a.fleet_figures(a.open_fleet(str(local_only)))["by_cluster"]["west"]["remote_bytes"] is None


def test_capacity_notebook_shows_the_fleets_remote_tier(fleets, tmp_path: Path) -> None:
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from tests.analytics.notebook_runner import html_outputs, run_notebook, stream_text

    wh, _, expected = fleets
    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    out = tmp_path / "fleet.json"
    nb = run_notebook(notebooks / "capacity_analysis.ipynb",
                      {"warehouse": str(wh), "cluster": None, "run_id": None, "figures_out": str(out)})
    figures = json.loads(out.read_text())
    for cluster, want in expected.items():
        assert {k: figures["by_cluster"][cluster][k] for k in want} == want
    assert figures["by_cluster"]["plain"]["remote_bytes"] is None
    assert "2 of 3 clusters have remote segments in their newest run" in stream_text(nb)
    html = html_outputs(nb)
    charts = [re.match(r'<figure id="(\w+)"', h).group(1) for h in html if h.startswith("<figure")]
    assert "remote_beside_local" in charts
    tables = [h for h in html if "remote_plannable_bytes" in h and "local_bytes" in h]
    assert tables, "the remote cell showed no table of remote bytes per cluster"
    east = re.search(r"<th>\d+</th>\s*<td>east</td>\s*<td>east-2</td>((?:\s*<td>.*?</td>)+)", tables[0])
    assert east is not None
    cells = re.findall(r"<td>(.*?)</td>", east.group(1))
    assert int(cells[3]) == expected["east"]["remote_bytes"]
