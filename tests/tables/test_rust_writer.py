"""How delta-rs writes the tables it owns: the Parquet settings that keep a fleet plan's registration small."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from pipelines.tables import open_store
from pipelines.tables.rust_engine import ROW_GROUP_ROWS


def _files(table_dir: Path) -> list[pq.ParquetFile]:
    return [pq.ParquetFile(p) for p in sorted(table_dir.glob("**/*.parquet"))]


def test_plan_json_is_written_without_statistics_or_dictionary_and_items_in_bounded_row_groups(tmp_path: Path) -> None:
    """A 50 MB ``plan_json`` cell with Parquet min/max statistics and a dictionary is encoded three times over; a
    100k-item ``gc_plan_items`` write in one row group is held encoded whole until it is flushed."""
    store = open_store("rust", str(tmp_path / "wh"))
    store.ensure_tables(["gc_plans", "gc_plan_items"])
    plan_json = '{"items": [' + ",".join(['{"x": 1}'] * 20_000) + "]}"
    store.append("gc_plans", [{"plan_id": "p1", "cluster": "c", "run_id": "r1", "content_hash": "sha256:x",
                               "status": "proposed", "plan_json": plan_json}])
    items = ROW_GROUP_ROWS * 2 + 1
    store.overwrite_partition("gc_plan_items", {"plan_id": "p1"},
                              [{"plan_id": "p1", "item_id": f"{n:016x}", "cluster": "c", "dir_name": f"t-{n}"}
                               for n in range(items)])

    [plans] = _files(tmp_path / "wh" / "gc_plans")
    names = plans.schema_arrow.names
    group = plans.metadata.row_group(0)
    document = group.column(names.index("plan_json"))
    assert document.statistics is None or not document.statistics.has_min_max
    assert not any("DICTIONARY" in e for e in document.encodings)
    assert group.column(names.index("status")).statistics.has_min_max  # other columns keep theirs
    assert document.compression == "SNAPPY"

    [item_file] = _files(tmp_path / "wh" / "gc_plan_items")
    assert item_file.metadata.num_rows == items
    assert item_file.metadata.num_row_groups == 3
    assert store.read_rows("gc_plans", {"plan_id": "p1"}, columns=("plan_json",)) == [{"plan_json": plan_json}]
