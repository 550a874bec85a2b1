"""The fleet view, ``logdir-gc report`` without ``--cluster`` and the capacity notebook with ``cluster = None`` on a
warehouse of three small clusters: each cluster's figures are the ones its own rows give (independent arithmetic
here), the fleet's are their sums, and one cluster's name is hostile markup."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pipelines import analytics as a
from pipelines.cli.main import main
from pipelines.detect.classes import GARBAGE_CLASSES
from tests.analytics.fleet_warehouses import add_cluster

EVIL = "evil<script>alert(1)</script>"
NEWEST = {"east": "east-2", "west": "west-1", EVIL: "evil-1"}


@pytest.fixture(scope="module")
def fleet_wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(tmp_path_factory.mktemp("fleet"))
    add_cluster(root, root / "warehouse", "east", seed=3, runs=("east-1", "east-2"))
    add_cluster(root, root / "warehouse", "west", seed=5, runs=("west-1",), brokers=3)
    add_cluster(root, root / "warehouse", EVIL, seed=9, runs=("evil-1",))
    return root / "warehouse"


def _expected(warehouse: Path) -> dict[str, dict[str, int]]:
    """Per cluster, from its newest run's raw rows: dirs, bytes, reclaimable and plannable bytes."""
    store = a.open_fleet(str(warehouse)).store
    out = {}
    for cluster, run in NEWEST.items():
        dirs = store.read_rows("partition_dirs", {"cluster": cluster, "run_id": run})
        garbage = [r for r in store.read_rows("findings", {"cluster": cluster, "run_id": run})
                   if r["class"] in GARBAGE_CLASSES and not r["protected"]]
        out[cluster] = {"partition_dirs": len(dirs), "total_bytes": sum(r["bytes"] for r in dirs),
                        "reclaimable_bytes": sum(r["bytes"] for r in garbage),
                        "plannable_bytes": sum(r["bytes"] for r in garbage if r["plannable"])}
    return out


def test_fleet_figures_are_each_clusters_and_their_sums(fleet_wh: Path) -> None:
    expected = _expected(fleet_wh)
    figs = a.fleet_figures(a.open_fleet(str(fleet_wh)))
    assert figs["clusters"] == 3 and set(figs["by_cluster"]) == set(NEWEST)
    assert len({e["total_bytes"] for e in expected.values()}) == 3  # the clusters differ, so a mix-up would show
    for cluster, want in expected.items():
        got = figs["by_cluster"][cluster]
        assert got["run_id"] == NEWEST[cluster]
        assert {k: got[k] for k in want} == want
        own = a.key_figures(a.open_warehouse(str(fleet_wh), cluster))  # the single-cluster view agrees
        assert {k: own[k] for k in (*want, "unexplained_bytes", "brokers", "log_dirs")} == {
            k: got[k] for k in (*want, "unexplained_bytes", "brokers", "log_dirs")}
    for key in ("partition_dirs", "total_bytes", "reclaimable_bytes", "plannable_bytes"):
        assert figs[key] == sum(e[key] for e in expected.values())
    assert sum(figs["reclaimable_by_class"].values()) == figs["reclaimable_bytes"]


def _report(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(["report", *argv])
    return int(info.value.code or 0)


def test_report_without_cluster_is_the_fleet(fleet_wh: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "fleet.html"
    assert _report(["--warehouse", str(fleet_wh), "--out", str(out)]) == 0
    expected = _expected(fleet_wh)
    assert "fleet of 3 clusters" in capsys.readouterr().out
    page = out.read_text()
    assert "<h1>Capacity report: fleet of 3 clusters</h1>" in page
    total = a.human_bytes(sum(e["total_bytes"] for e in expected.values()))
    assert f"<b>{total}</b><span>partition-dir bytes</span>" in page
    clusters = page.split("<h2>Clusters</h2>")[1].split("<h2>")[0]
    for cluster, want in expected.items():
        name = "evil&lt;script&gt;alert(1)&lt;/script&gt;" if cluster == EVIL else cluster
        row = re.search(rf"<tr><td>{re.escape(name)}</td><td>{NEWEST[cluster]}</td>.*?</tr>", clusters)
        assert row is not None, cluster
        assert f"<td>{a.human_bytes(want['total_bytes'])}</td>" in row.group(0)
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 6
    assert "<script" not in page


def test_report_for_one_cluster_or_its_run(fleet_wh: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "one.html"
    assert _report(["--warehouse", str(fleet_wh), "--cluster", "west", "--out", str(out)]) == 0
    assert "cluster west, run west-1" in capsys.readouterr().out
    assert "<h1>Capacity report: west</h1>" in out.read_text()
    assert _report(["--warehouse", str(fleet_wh), "--run-id", "east-1", "--out", str(out)]) == 0
    assert "cluster east, run east-1" in capsys.readouterr().out
    assert _report(["--warehouse", str(fleet_wh), "--run-id", "nope", "--out", str(out)]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["logdir-gc: error: run nope: no cluster has it (--cluster)"]


def test_capacity_notebook_without_cluster_is_the_fleet(fleet_wh: Path, tmp_path: Path) -> None:
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from tests.analytics.notebook_runner import html_outputs, run_notebook, stream_text

    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    out = tmp_path / "fleet.json"
    nb = run_notebook(notebooks / "capacity_analysis.ipynb",
                      {"warehouse": str(fleet_wh), "cluster": None, "run_id": None, "figures_out": str(out)})
    figures = json.loads(out.read_text())
    expected = _expected(fleet_wh)
    assert figures["clusters"] == 3
    for cluster, want in expected.items():
        assert {k: figures["by_cluster"][cluster][k] for k in want} == want
    assert figures["total_bytes"] == sum(e["total_bytes"] for e in expected.values())
    charts = [h for h in html_outputs(nb) if h.startswith("<figure")]
    assert [re.match(r'<figure id="(\w+)"', h).group(1) for h in charts] == [
        "fleet_disk", "fleet_reclaimable", "reclaimable_by_class", "fleet_growth", "fleet_over_time"]
    assert "fleet of 3 clusters" in stream_text(nb)
    assert "<script>" not in "".join(html_outputs(nb))


def test_clusters_stay_apart_when_their_run_ids_coincide(tmp_path: Path) -> None:
    """Run ids from before they were unique: ``run-2`` is A's newest run and B's older one (merged warehouses)."""
    from pipelines.tables.rust_engine import RustTableStore
    from pipelines.tables.warehouse_merge import merge_warehouse

    fleet = RustTableStore(str(tmp_path / "fleet"), allow_foreign_tables=True)
    for name, seed, runs, brokers in (("a", 3, ("run-1", "run-2"), 2), ("b", 5, ("run-2", "run-3"), 3)):
        add_cluster(tmp_path / name, tmp_path / f"{name}-wh", name, seed=seed, runs=runs, brokers=brokers)
        for table in ("gc_plans", "gc_plan_items", "gc_plan_audit"):  # the demo's plan ids are run ids: they would
            shutil.rmtree(tmp_path / f"{name}-wh" / table, ignore_errors=True)  # clash (the pipeline's do not)
        merge_warehouse(RustTableStore(str(tmp_path / f"{name}-wh")), fleet)
    figs = a.fleet_figures(a.open_fleet(str(tmp_path / "fleet")))
    for cluster, run in (("a", "run-2"), ("b", "run-3")):
        dirs = fleet.read_rows("partition_dirs", {"cluster": cluster, "run_id": run})
        assert figs["by_cluster"][cluster]["run_id"] == run
        assert figs["by_cluster"][cluster]["partition_dirs"] == len(dirs)
        assert figs["by_cluster"][cluster]["total_bytes"] == sum(r["bytes"] for r in dirs)


def test_cluster_charts_draw_the_largest_clusters_and_count_them_all() -> None:
    import pandas as pd

    df = pd.DataFrame({"cluster": [f"c{i:02d}" for i in range(25)], "bytes": [1000 * (i + 1) for i in range(25)],
                       "live_bytes": [900 * (i + 1) for i in range(25)], "partition_dirs": [10] * 25})
    df["share"] = df["bytes"] / df["bytes"].sum()
    chart = a.plot_fleet_disk(df)
    assert chart.title == "Disk by cluster (newest run of each)"
    assert chart.figure.axes[0].get_title(loc="left") == "Disk by cluster (newest run of each): the 20 largest of 25"
    labels = [t.get_text() for t in chart.figure.axes[0].get_yticklabels()]
    assert sorted(labels) == [f"c{i:02d}" for i in range(5, 25)]
    assert chart.takeaway.startswith(f"25 clusters hold {a.human_bytes(df['bytes'].sum())} in 250 partition dirs; "
                                     "the largest is c24")
