"""The on-host journal: fsynced append-only records, torn tails, sequence numbers, and the Delta mirror."""

from __future__ import annotations

import json
from pathlib import Path

from pipelines.execute.journal import DONE, INTENT, Journal, mirror_to_store
from pipelines.tables.rust_engine import RustTableStore


def test_torn_last_line_is_ignored_and_truncated(tmp_path: Path) -> None:
    j = Journal(tmp_path, "c1", 1)
    j.write("p", "i1", "rename", INTENT, src="a")
    with open(j.path, "ab") as f:
        f.write(b'{"seq": 2, "step": "rena')  # crash mid-write
    assert [(r.seq, r.step, r.state) for r in Journal(tmp_path, "c1", 1).records()] == [(1, "rename", INTENT)]
    j2 = Journal(tmp_path, "c1", 1)
    j2.write("p", "i1", "rename", DONE)
    lines = j2.path.read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]
    assert j2.last_by_item("p")["i1"][-1].state == DONE


def test_mirror_appends_each_record_once(tmp_path: Path) -> None:
    store = RustTableStore(str(tmp_path / "wh"))
    j = Journal(tmp_path, "c1", 1)
    j.write("p", "i1", "item", INTENT)
    j.write("p", "i1", "item", DONE)
    assert mirror_to_store(j, store) == 2
    assert mirror_to_store(j, store) == 0
    j.write("p", "", "run", DONE)
    assert mirror_to_store(j, store) == 1
    rows = sorted(store.read_rows("gc_journal"), key=lambda r: r["seq"])
    assert [r["seq"] for r in rows] == [1, 2, 3] and rows[0]["cluster"] == "c1" and rows[0]["broker_id"] == 1
