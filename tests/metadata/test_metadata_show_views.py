"""``logdir-gc metadata show``: the summary, the full listings, the streamed ``--json`` and ``--records`` on a
metadata dir with a snapshot, a segment below it, deletions, a recreation and a fenced broker."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from mdrecords import broker, did, encode_log, encode_snapshot, feature, partition, remove, tid, topic

from pipelines.cli.metadata_cmd import metadata
from pipelines.cli.metadata_stream import write_show_json
from pipelines.kafka.metadata_codec import control_to_json_dict, to_json_dict
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.metadata.summary import summarize

SNAPSHOT = "00000000000000000004-0000000001.checkpoint"


def _dir(tmp_path: Path) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    base = [feature("metadata.version", 21), broker(1, 1, log_dirs=[did(1)], fenced=False),
            broker(2, 2, log_dirs=[did(2)], fenced=True), topic("a", tid(1)), partition(tid(1), 0, [1, 2], isr=[1]),
            partition(tid(1), 1, [1], leader=-1, adding_replicas=(2,)), topic("b", tid(2)),
            partition(tid(2), 0, [2])]
    (d / f"{0:020d}.log").write_bytes(encode_log(base[:4]))
    (d / SNAPSHOT).write_bytes(encode_snapshot(base))
    later = [remove(tid(2)), topic("b", tid(3)), partition(tid(3), 0, [1]), topic("c", tid(4)),
             partition(tid(4), 0, [1]), remove(tid(4))]
    (d / f"{4:020d}.log").write_bytes(encode_log(later, start=4))
    return d


def _show(*args: str) -> str:
    result = CliRunner().invoke(metadata, ["show", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_summary_fits_a_screen_and_says_what_matters(tmp_path: Path) -> None:
    text = _show(str(_dir(tmp_path)))
    lines = text.splitlines()
    assert len(lines) <= 40
    assert f"snapshot:   {SNAPSHOT}; 1 segment(s) replayed after it" in lines
    assert "offsets:    0 .. 9 (epoch 1)" in lines and "image:      COMPLETE" in lines
    assert "brokers:    2 (1 fenced)" in lines
    assert any(line.startswith("  2: FENCED") and str(did(2)) in line for line in lines)
    assert ("topics:     2 topics, 3 partitions, 4 replicas; 1 under-replicated, 1 without leader, "
            "1 reassigning") in lines
    largest = lines.index("largest topics (partitions x replication):")
    assert lines[largest + 1].split() == ["a", "2", "x", "2"] and lines[largest + 2].split() == ["b", "1", "x", "1"]
    deletions = lines.index("deletions:  2 topic(s) deleted, most recent:")
    assert f"c {tid(4)}" in lines[deletions + 1] and f"b {tid(2)}" in lines[deletions + 2]
    assert lines[deletions + 3] == "recreations: 1 topic name(s) recreated with a new id, most recent:"
    assert lines[deletions + 4].endswith(f"b {tid(3)} (was {tid(2)})")


def test_listings_are_complete(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    result = load_metadata(str(d))
    topics = _show(str(d), "--topics").splitlines()
    assert topics[0] == "topics (2):" and len(topics) == 3
    parts = _show(str(d), "--partitions").splitlines()
    assert parts[0] == "partitions of 2 topics:" and len(parts) == 1 + 3
    assert any(line.startswith(f"  b-0 ({tid(3)}): leader=1 replicas=[1]") for line in parts)
    both = _show(str(d), "--topics", "--events").splitlines()
    assert both[:3] == topics and both[3] == f"events ({len(result.events)}):"
    assert len(both) == 3 + 1 + len(result.events)


def test_json_is_one_document_with_the_former_keys_and_a_summary(tmp_path: Path) -> None:
    doc = json.loads(_show(str(_dir(tmp_path)), "--json"))
    assert {"complete", "incomplete_reasons", "last_offset", "last_epoch", "last_timestamp_ms", "source", "features",
            "topics", "brokers", "configs", "counts", "events", "errors", "notes", "files", "summary"} == set(doc)
    assert [t["name"] for t in doc["topics"]] == ["a", "b"]
    assert doc["topics"][1]["partitions"][0]["directories"] == ["AAAAAAAAAAAAAAAAAAAAAA"]
    assert doc["summary"]["deletions"] == 2
    assert doc["summary"]["recent_recreations"][0]["previous_topic_id"] == str(tid(2))


class _Writes(io.RawIOBase):
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.data = bytearray()

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.sizes.append(len(b))
        self.data += b
        return len(b)


def test_json_is_written_a_chunk_at_a_time(tmp_path: Path) -> None:
    records = [feature("metadata.version", 21), broker(1, 1, log_dirs=[did(1)])]
    for n in range(3000):
        records += [topic(f"topic-{n:04d}", tid(100 + n))] + [partition(tid(100 + n), p, [1]) for p in range(4)]
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(encode_log(records, batch_size=500))
    result = load_metadata(str(log))
    out = _Writes()
    write_show_json(out, result, summarize(result))
    doc = json.loads(bytes(out.data))
    assert len(doc["topics"]) == 3000 and len(doc["events"]) == 1 + 3000 * 5  # broker_registered + the topics
    assert max(out.sizes) < len(out.data) / 4  # never the whole document (nor most of it) in one piece


def test_records_of_a_dir_newest_snapshot_then_segments_as_before(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    lines = _show(str(d), "--records").splitlines()
    expected = []
    for name in (SNAPSHOT, f"{0:020d}.log", f"{4:020d}.log"):
        for e in iter_metadata_log(d / name):
            payload = ({"type": e.record.type_name, "data": control_to_json_dict(e.record)} if e.is_control
                       else to_json_dict(e.record))
            expected.append(json.dumps({"file": name, "offset": e.offset, "baseOffset": e.batch_base_offset,
                                        "epoch": e.epoch, "timestamp": e.batch_timestamp_ms,
                                        "isControl": e.is_control, "payload": payload}, default=str))
    assert lines == expected  # byte for byte what the former per-record json.dumps printed


def test_records_does_not_combine_with_views(tmp_path: Path) -> None:
    result = CliRunner().invoke(metadata, ["show", str(_dir(tmp_path)), "--records", "--json"])
    assert result.exit_code == 2 and "--records" in result.output


def test_a_real_process_flushes_everything_before_it_leaves(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "metadata", "show", str(_dir(tmp_path))],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines()[-1].startswith("events: ")
