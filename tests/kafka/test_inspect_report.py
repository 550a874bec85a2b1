"""inspect_json / render_text over synthetic log dirs."""

from __future__ import annotations

import json
from pathlib import Path

from logdir_factory import PartitionSpec, make_log_dir

from pipelines.kafka.inspect_report import inspect_json, render_text
from pipelines.kafka.logdir import scan_log_dir

KINDS = {"live", "delete", "future", "stray", "metadata", "unparseable"}


def _inventory(tmp_path: Path):
    root = make_log_dir(
        tmp_path / "logs",
        partitions=[
            PartitionSpec("orders", 0),
            PartitionSpec("old", 1, kind="delete"),
            PartitionSpec("s", 2, kind="stray"),
        ],
        cluster_metadata=True,
        extra_dirs=["lost+found"],
    )
    return scan_log_dir(str(root))


def test_json_contract(tmp_path: Path) -> None:
    inv = _inventory(tmp_path)
    doc = json.loads(json.dumps(inspect_json(inv)))  # JSON-serialisable
    assert {"log_dir", "meta_properties", "checkpoints", "problems", "partition_dirs"} <= set(doc)
    assert doc["log_dir"] == inv.log_dir
    assert doc["meta_properties"]["node_id"] == 1 and doc["meta_properties"]["version"] == 1
    assert doc["checkpoints"]["recovery-point-offset-checkpoint"]["partitions"] == ["orders-0"]
    by_name = {d["name"]: d for d in doc["partition_dirs"]}
    assert set(by_name) == {d.name for d in inv.partition_dirs}
    for d in doc["partition_dirs"]:
        assert {"name", "kind", "topic", "partition", "topic_id", "files", "bytes", "problems"} <= set(d)
        assert d["kind"] in KINDS
        assert d["topic_id"] is None or len(d["topic_id"]) == 22
    assert by_name["lost+found"]["kind"] == "unparseable" and by_name["lost+found"]["topic_id"] is None
    assert by_name["__cluster_metadata-0"]["topic_id"] == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert by_name["orders-0"]["topic_id"] == str(PartitionSpec("orders", 0).resolved_topic_id)
    assert any(p["severity"] == "fatal" for p in by_name["lost+found"]["problems"])
    assert doc["would_block_startup"] is True


def test_text_is_loud_about_fatal(tmp_path: Path) -> None:
    text = render_text(_inventory(tmp_path))
    assert "KAFKA WOULD FAIL TO START" in text
    assert "lost+found" in text
    assert "delete: old-1." in text and "stray: s-2." in text
