"""load_metadata over generated metadata directories: snapshot choice, offsets, completeness, events."""

from __future__ import annotations

from pathlib import Path

import pytest
from mdrecords import (
    broker,
    change,
    config,
    did,
    encode_log,
    encode_snapshot,
    feature,
    named,
    partition,
    remove,
    tid,
    topic,
)

from pipelines.kafka.snapshot_names import format_snapshot_name
from pipelines.metadata.image import TOPIC_RESOURCE
from pipelines.metadata.metadata_log_source import load_metadata

T1, T2, T3 = tid(1), tid(2), tid(3)
SNAP = [feature("metadata.version", 21), broker(1, 5, log_dirs=[did(1)]), topic("a", T1), partition(T1, 0, [1])]
TAIL = [topic("b", T2), partition(T2, 0, [1]), partition(T2, 1, [1]), named("NoOpRecord"),
        change(T1, 0, isr=[1], leader=1), remove(T1), config(TOPIC_RESOURCE, "b", "retention.ms", "5")]


def make_dir(tmp_path: Path, *, snapshot_end: int | None = 10, log_start: int = 8, tail=TAIL) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    if snapshot_end is not None:
        (d / format_snapshot_name(snapshot_end, 1)).write_bytes(encode_snapshot(SNAP))
    # the segment starts before the snapshot end: records below it must be skipped
    filler = [named("NoOpRecord")] * (max(0, (snapshot_end or 0) - log_start))
    (d / f"{log_start:020d}.log").write_bytes(encode_log([*filler, *tail], start=log_start))
    return d


def test_snapshot_then_log_from_its_end_offset(tmp_path: Path) -> None:
    result = load_metadata(str(make_dir(tmp_path)))
    image = result.image
    assert image.complete, image.incomplete_reasons
    assert set(image.topics.by_name) == {"b"} and len(image.topics.by_name["b"].partitions) == 2
    assert image.last_offset == 10 + len(TAIL) - 1
    assert image.topic_config("b", "retention.ms") == "5"
    assert next(f.name for f in result.files if f.used).endswith(".checkpoint")
    events = [(e.event, e.topic, e.partition) for e in result.events]
    assert ("topic_removed", "a", None) in events and ("partition_added", "b", 1) in events
    created = [e for e in result.events if e.event == "topic_created" and e.topic == "a"]
    assert created[0].detail == {"from_snapshot": True} and created[0].timestamp_ms == 1_600_000_000_000
    removed = next(e for e in result.events if e.event == "topic_removed")
    assert removed.topic_id == T1 and removed.offset == 10 + 5


def test_file_url_and_lone_files(tmp_path: Path) -> None:
    d = make_dir(tmp_path)
    assert load_metadata(d.as_uri()).image.complete
    snap = load_metadata(str(next(d.glob("*.checkpoint"))))
    assert snap.image.complete and set(snap.image.topics.by_name) == {"a"} and snap.image.last_offset == 9
    seg = load_metadata(str(next(d.glob("*.log"))))
    assert not seg.image.complete and "lone segment" in seg.image.incomplete_reasons[0]


def test_lone_segment_from_offset_zero_is_complete(tmp_path: Path) -> None:
    d = make_dir(tmp_path, snapshot_end=None, log_start=0, tail=[*SNAP, *TAIL])
    assert load_metadata(str(next(d.glob("*.log")))).image.complete
    assert load_metadata(str(d)).image.complete


def test_newest_invalid_snapshot_falls_back_and_partial_is_ignored(tmp_path: Path) -> None:
    d = make_dir(tmp_path)
    good = encode_snapshot(SNAP)
    (d / format_snapshot_name(12, 1)).write_bytes(good[:-10])  # truncated: no footer
    (d / (format_snapshot_name(14, 1)[:-len(".checkpoint")] + "-abc.checkpoint.part")).write_bytes(b"junk")
    (d / (format_snapshot_name(16, 1) + ".deleted")).write_bytes(b"junk")
    result = load_metadata(str(d))
    assert result.image.complete, result.image.incomplete_reasons
    assert any("00000000000000000012-0000000001.checkpoint: invalid snapshot" in e for e in result.errors)
    assert {f.kind for f in result.files if f.name.endswith((".part", ".deleted"))} == {"ignored"}


def test_gap_after_snapshot_is_incomplete(tmp_path: Path) -> None:
    d = make_dir(tmp_path, log_start=13)  # snapshot ends at 10: offsets 10..12 missing
    image = load_metadata(str(d)).image
    assert not image.complete
    assert any("offsets 10 to 12 are missing" in r for r in image.incomplete_reasons)


def test_missing_log_with_index_present_is_incomplete(tmp_path: Path) -> None:
    d = make_dir(tmp_path)
    (d / f"{100:020d}.index").write_bytes(b"")
    (d / f"{100:020d}.timeindex").write_bytes(b"")
    image = load_metadata(str(d)).image
    assert not image.complete
    assert any("00000000000000000100.log is missing" in r for r in image.incomplete_reasons)


def test_missing_segment_below_the_snapshot_is_only_a_note(tmp_path: Path) -> None:
    d = make_dir(tmp_path)
    (d / f"{2:020d}.index").write_bytes(b"")
    result = load_metadata(str(d))
    assert result.image.complete and any("below the replay start" in n for n in result.notes)


def test_producer_snapshot_and_leader_epoch_beyond_end_are_incomplete(tmp_path: Path) -> None:
    d = make_dir(tmp_path)
    end = 10 + len(TAIL)
    (d / f"{end:020d}.snapshot").write_bytes(b"")
    assert load_metadata(str(d)).image.complete  # a producer snapshot AT the log end is normal
    (d / f"{end + 5:020d}.snapshot").write_bytes(b"")
    assert not load_metadata(str(d)).image.complete
    (d / f"{end + 5:020d}.snapshot").unlink()
    (d / "leader-epoch-checkpoint").write_text(f"0\n2\n1 0\n2 {end + 3}\n")
    reasons = load_metadata(str(d)).image.incomplete_reasons
    assert len(reasons) == 1 and "epoch 2" in reasons[0]


def test_trailing_invalid_bytes_and_snapshot_without_log(tmp_path: Path) -> None:
    d = make_dir(tmp_path)
    log = next(d.glob("*.log"))
    data = log.read_bytes()
    log.write_bytes(data + data[:40])  # a batch cut short: does not fit in the file
    assert any("40 trailing invalid bytes" in r for r in load_metadata(str(d)).image.incomplete_reasons)
    log.write_bytes(data + b"\x00" * 30)  # a batch size below 14: corruption
    assert any("could not decode past offset" in r for r in load_metadata(str(d)).image.incomplete_reasons)
    log.unlink()
    image = load_metadata(str(d)).image
    assert not image.complete and "no .log segment" in image.incomplete_reasons[0]


def test_replay_errors_make_the_image_incomplete(tmp_path: Path) -> None:
    d = make_dir(tmp_path, tail=[remove(T3)])
    result = load_metadata(str(d))
    assert not result.image.complete and result.image.replay_errors[0].offset == 10
    assert any("could not be replayed" in r for r in result.image.incomplete_reasons)


def test_open_transaction_at_the_end_is_not_applied(tmp_path: Path) -> None:
    d = make_dir(tmp_path, tail=[named("BeginTransactionRecord", name="x"), topic("c", T3)])
    image = load_metadata(str(d)).image
    assert "c" not in image.topics.by_name and not image.complete
    assert image.last_offset == 9


def test_missing_path_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_metadata(str(tmp_path / "nope"))
