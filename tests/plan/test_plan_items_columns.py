"""``gc_plan_items`` carries each item's ``kind``, ``segment_id`` and ``start_offset`` (issue 28 point 4), also in a
warehouse whose table an older version created without those columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from pipelines.config.models import PolicyConfig
from pipelines.plan import approval
from pipelines.plan.model import REMOTE_BROKER_ID
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import GC_PLAN_ITEMS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute_remote"))
from remote_world import build_remote_world

NEW = ("kind", "segment_id", "start_offset")


def test_remote_items_land_with_kind_and_segment_in_a_table_made_before_those_columns(tmp_path: Path) -> None:
    world = build_remote_world(tmp_path, approve_plan=False)
    warehouse = tmp_path / "fleet-warehouse"
    old_schema = pa.schema([f for f in GC_PLAN_ITEMS.to_arrow() if f.name not in NEW])
    old_row = {f.name: None for f in old_schema} | {"plan_id": "old-plan", "item_id": "i0", "cluster": "c1",
                                                    "broker_id": 1, "dir_name": "t-0", "bytes": 5}
    write_deltalake(str(warehouse / "gc_plan_items"), pa.Table.from_pylist([old_row], schema=old_schema),
                    partition_by=["plan_id"])

    store = RustTableStore(str(warehouse))
    approval.register_plan(store, world.plan, actor="detector", policy=PolicyConfig())

    rows = DeltaTable(str(warehouse / "gc_plan_items")).to_pyarrow_table().to_pylist()
    remote = [r for r in rows if r["plan_id"] == world.plan.plan_id]
    assert len(remote) == len(world.plan.items) > 0
    assert {r["kind"] for r in remote} == {"remote_segment"}
    assert {r["broker_id"] for r in remote} == {REMOTE_BROKER_ID}
    assert {(r["segment_id"], r["start_offset"]) for r in remote} == {
        (i.segment_id, i.start_offset) for i in world.plan.items}
    (old,) = [r for r in rows if r["plan_id"] == "old-plan"]
    assert (old["kind"], old["segment_id"], old["start_offset"], old["bytes"]) == (None, None, None, 5)
