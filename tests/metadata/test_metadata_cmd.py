"""``logdir-gc metadata show`` through click's CliRunner over a generated metadata dir."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from mdrecords import broker, encode_log, feature, partition, tid, topic

from pipelines.cli.metadata_cmd import metadata

T1 = tid(1)


def _dir(tmp_path: Path) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    records = [feature("metadata.version", 21), broker(1, 1), topic("orders", T1), partition(T1, 0, [1])]
    (d / f"{0:020d}.log").write_bytes(encode_log(records))
    return d


def test_show_json_keys_and_values(tmp_path: Path) -> None:
    result = CliRunner().invoke(metadata, ["show", str(_dir(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {"complete", "incomplete_reasons", "last_offset", "topics", "brokers", "events"} <= set(doc)
    assert doc["complete"] is True and doc["last_offset"] == 3
    part = doc["topics"][0]["partitions"][0]
    assert set(part) >= {"partition", "replicas", "isr", "leader", "leader_epoch", "directories",
                         "adding_replicas", "removing_replicas"}
    assert doc["topics"][0]["topic_id"] == str(T1) and part["replicas"] == [1]


def test_show_text_and_records(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    text = CliRunner().invoke(metadata, ["show", str(d)])
    assert text.exit_code == 0 and "COMPLETE" in text.output and "orders" in text.output
    dump = CliRunner().invoke(metadata, ["show", str(d), "--records"])
    lines = [json.loads(x) for x in dump.output.splitlines()]
    assert [x["payload"]["type"] for x in lines] == ["FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD",
                                                     "TOPIC_RECORD", "PARTITION_RECORD"]


def test_bad_path_is_one_line_and_exit_3(tmp_path: Path) -> None:
    result = CliRunner().invoke(metadata, ["show", str(tmp_path / "missing")])
    assert result.exit_code == 3
    assert "cannot read" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
