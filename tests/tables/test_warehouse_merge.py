"""``logdir-gc warehouse merge SRC --into DST``: two per-cluster warehouses merged hold each cluster's rows exactly as
each alone; a rerun changes nothing; a run or plan the destination holds with other rows is refused with one line
before anything is written; an interrupted merge completes on rerun; a unit that does not read back is reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipelines import analytics as a
from pipelines.cli.main import main
from pipelines.tables import warehouse_merge
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import ALL_TABLES
from tests.analytics.fleet_warehouses import add_cluster


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = Path(tmp_path_factory.mktemp("merge"))
    add_cluster(root / "east", root / "east-wh", "east", seed=3, runs=("east-1", "east-2"))
    add_cluster(root / "west", root / "west-wh", "west", seed=5, runs=("west-1",), brokers=3)
    # the same cluster, run id and simulated cluster as east's first run, crawled a day later: as many rows, other
    # values (crawl times): a clash
    add_cluster(root / "again", root / "again-wh", "east", seed=3, runs=("east-1",))
    # another cluster whose run ids (so plan ids) are east's: the plan id clashes across clusters
    add_cluster(root / "north", root / "north-wh", "north", seed=13, runs=("east-1",))
    return {name: root / f"{name}-wh" for name in ("east", "west", "again", "north")}


def _merge(*argv: str) -> int:
    with pytest.raises(SystemExit) as info:
        main(["warehouse", "merge", *argv])
    return int(info.value.code or 0)


def _rows(store: RustTableStore, table: str, cluster: str) -> list[str]:
    """A cluster's rows of ``table`` as a sorted list (audit and signature rows by the cluster's plan ids)."""
    if not store.exists(table):
        return []
    if "cluster" in ALL_TABLES[table].column_names:
        rows = store.read_rows(table, {"cluster": cluster})
    else:
        plans = [r["plan_id"] for r in store.read_rows("gc_plans", {"cluster": cluster}, columns=["plan_id"])]
        rows = store.read_rows(table, {"plan_id": plans})
    return sorted(repr(sorted(r.items())) for r in rows)


def _versions(path: Path) -> dict[str, int]:
    store = RustTableStore(str(path))
    return {t: store.version(t) for t in ALL_TABLES if store.exists(t)}


def test_merged_warehouse_holds_each_cluster_as_alone_and_a_rerun_changes_nothing(
        sources: dict[str, Path], tmp_path: Path, capsys) -> None:
    fleet = tmp_path / "fleet"
    assert _merge(str(sources["east"]), "--into", str(fleet)) == 0
    assert _merge(str(sources["west"]), "--into", str(fleet)) == 0
    merged = RustTableStore(str(fleet))
    for cluster in ("east", "west"):
        alone = RustTableStore(str(sources[cluster]))
        tables = [t for t in ALL_TABLES if alone.exists(t)]
        assert {"findings", "partition_dirs", "gc_plans", "gc_plan_audit", "metadata_events"} <= set(tables)
        for table in tables:
            assert _rows(merged, table, cluster) == _rows(alone, table, cluster), (cluster, table)
        assert (a.key_figures(a.open_warehouse(str(fleet), cluster))
                == a.key_figures(a.open_warehouse(str(sources[cluster]))))
    assert set(a.fleet_figures(a.open_fleet(str(fleet)))["by_cluster"]) == {"east", "west"}
    capsys.readouterr()

    before = _versions(fleet)
    assert _merge(str(sources["east"]), "--into", str(fleet)) == 0
    assert _merge(str(sources["west"]), "--into", str(fleet)) == 0
    assert _versions(fleet) == before
    out = capsys.readouterr().out
    assert out.count("appended 0 row(s) of cluster(s)") == 2


def test_a_run_or_plan_the_destination_holds_with_other_rows_is_refused(
        sources: dict[str, Path], tmp_path: Path, capsys) -> None:
    fleet = tmp_path / "fleet"
    assert _merge(str(sources["east"]), "--into", str(fleet)) == 0
    capsys.readouterr()
    before = _versions(fleet)
    assert _merge(str(sources["again"]), "--into", str(fleet)) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"logdir-gc: error: [merge_clash] {fleet} already holds run east-1 "
                                               "of cluster east in ")
    assert _merge(str(sources["north"]), "--into", str(fleet)) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"logdir-gc: error: [merge_clash] {fleet} already holds plan "
                                               "plan-east-1 of cluster east with hash ")
    assert _versions(fleet) == before  # nothing written by either refusal


def test_bad_arguments_are_one_line(sources: dict[str, Path], tmp_path: Path, capsys) -> None:
    assert _merge(str(sources["east"]), "--into", str(sources["east"])) == 4
    assert _merge(str(sources["east"]), "--into", str(tmp_path / "f"), "--cluster", "west") == 4
    assert _merge(str(tmp_path / "nothing"), "--into", str(tmp_path / "f")) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(": ")[-1] for line in err] == [
        "cannot merge a warehouse into itself", "holds no cluster west (it holds east)",
        "holds no cluster's rows (not a warehouse?)"]


def test_an_interrupted_merge_completes_on_rerun(sources: dict[str, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = tmp_path / "fleet"
    real = warehouse_merge._append_units

    def dies_at_the_audit(src: Any, dst: Any, table: str, units: Any) -> int:
        if table == "gc_plan_audit":
            raise OSError("killed")
        return real(src, dst, table, units)

    monkeypatch.setattr(warehouse_merge, "_append_units", dies_at_the_audit)
    with pytest.raises(OSError):
        warehouse_merge.merge_warehouse(RustTableStore(str(sources["east"])),
                                        RustTableStore(str(fleet), allow_foreign_tables=True))
    monkeypatch.setattr(warehouse_merge, "_append_units", real)
    assert _merge(str(sources["east"]), "--into", str(fleet)) == 0
    merged, alone = RustTableStore(str(fleet)), RustTableStore(str(sources["east"]))
    for table in ("gc_plans", "gc_plan_items", "gc_plan_audit", "findings"):
        assert _rows(merged, table, "east") == _rows(alone, table, "east"), table


class _LosesPartitionDirs(RustTableStore):
    """A destination whose ``partition_dirs`` commits vanish (another writer overwrote them)."""

    def append(self, table: Any, rows: Any) -> None:
        if table != "partition_dirs":
            super().append(table, rows)


def test_a_unit_that_does_not_read_back_is_reported(sources: dict[str, Path], tmp_path: Path) -> None:
    dst = _LosesPartitionDirs(str(tmp_path / "fleet"), allow_foreign_tables=True)
    with pytest.raises(warehouse_merge.MergeLost, match=r"^partition_dirs .*east-1.*: 0 rows read back"):
        warehouse_merge.merge_warehouse(RustTableStore(str(sources["east"])), dst)
