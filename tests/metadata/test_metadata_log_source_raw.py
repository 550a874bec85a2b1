"""``load_metadata`` reads segments and snapshots through ``MetadataLog.iter_raw``: the outcome must be the one of
replaying the public ``LogEntry`` objects by the documented rules (records below the snapshot end skipped, a
repeated offset skipped, a gap passed over), on a directory with overlapping segments, a gap and a truncated tail."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from pathlib import Path

import pytest
from mdrecords import (
    broker,
    broker_change,
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

from pipelines.kafka.metadata_codec import make_control_record
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.snapshot_names import format_snapshot_name
from pipelines.metadata.image import TOPIC_RESOURCE
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.metadata_log_source import load_metadata

T1, T2, T3, T4 = tid(1), tid(2), tid(3), tid(4)
NOOP = named("NoOpRecord")
SNAP = [feature("metadata.version", 21), broker(1, 5, log_dirs=[did(1)], fenced=False),
        broker(2, 6, log_dirs=[did(2)], fenced=False), topic("a", T1), partition(T1, 0, [1, 2])]
SNAPSHOT_END = 10
SEG_A = [NOOP, NOOP,  # offsets 8 and 9: below the snapshot end
         topic("b", T2), partition(T2, 0, [1, 2]), partition(T2, 1, [2, 1]), change(T1, 0, isr=(1,)),
         make_control_record("LEADER_CHANGE", leader_id=1, voters=(), granting_voters=()),
         named("BeginTransactionRecord", name="t"), topic("c", T3), partition(T3, 0, [2]),
         named("EndTransactionRecord"), change(T4, 0, leader=1)]  # unknown topic: a replay problem
SEG_B = [change(T2, 0, leader=2), change(T2, 1, leader=-1), config(TOPIC_RESOURCE, "b", "retention.ms", "5"),
         broker_change(2, 6, fenced=1), NOOP, change(T3, 0, isr=(2,))]
SEG_C = [remove(T1), topic("d", T4), partition(T4, 0, [1]), change(T2, 1, leader=1), NOOP, change(T4, 0, isr=(1,))]
OVERLAP, GAP, TRUNCATE = 3, 5, 7


def make_dir(tmp_path: Path) -> tuple[Path, list[Path]]:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / format_snapshot_name(SNAPSHOT_END, 1)).write_bytes(encode_snapshot(SNAP))
    base_a = SNAPSHOT_END - 2
    base_b = base_a + len(SEG_A) - OVERLAP  # its first OVERLAP offsets repeat the end of segment A
    base_c = base_b + len(SEG_B) + GAP
    segments = []
    for base, records, cut in ((base_a, SEG_A, 0), (base_b, SEG_B, 0), (base_c, SEG_C, TRUNCATE)):
        data = encode_log(records, start=base, batch_size=2)
        path = d / f"{base:020d}.log"
        path.write_bytes(data[: len(data) - cut])
        segments.append(path)
    return d, segments


def object_replay(d: Path, segments: list[Path]) -> tuple[MetadataLoader, list[int]]:
    """The reference: LogEntry objects through ``load_snapshot``/``replay``, filtered here by the rules."""
    loader = MetadataLoader(source=str(d))
    snapshot = next(d.glob("*.checkpoint"))
    assert loader.load_snapshot(list(iter_metadata_log(snapshot)), last_offset=SNAPSHOT_END - 1, epoch=1).ok
    kept, repeated = [], []
    expected = SNAPSHOT_END
    for path in segments:
        for entry in iter_metadata_log(path):
            if entry.offset < SNAPSHOT_END:
                continue
            if entry.offset < expected:
                repeated.append(entry.offset)
                continue
            kept.append(entry)
            expected = entry.offset + 1
    loader.replay(kept)
    loader.finish()
    return loader, repeated


def test_load_metadata_equals_the_object_path_with_overlap_gap_and_truncated_tail(tmp_path: Path) -> None:
    d, segments = make_dir(tmp_path)
    result = load_metadata(str(d))
    reference, repeated = object_replay(d, segments)
    ref_image = reference.image
    assert result.image == ref_image.with_completeness(False, result.image.incomplete_reasons)
    assert result.image.same_state(ref_image) and result.image.last_offset == ref_image.last_offset
    assert list(result.events) == reference.events and reference.events
    replay_errors = tuple(str(p) for p in ref_image.replay_errors)
    assert replay_errors and result.errors[-len(replay_errors):] == replay_errors
    assert len(repeated) == OVERLAP
    repeat_errors = result.errors[: -len(replay_errors)]
    assert len(repeat_errors) == OVERLAP and all(str(o) in e for o, e in zip(repeated, repeat_errors, strict=True))
    reasons = result.image.incomplete_reasons
    assert any("gap" in r for r in reasons) and any("trailing invalid bytes" in r for r in reasons)
    assert {"b", "c", "d"} <= set(result.image.topics.by_name) and "a" not in result.image.topics.by_name
    used = [f for f in result.files if f.kind == "log"]
    assert [f.first_offset for f in used] == [SNAPSHOT_END, repeated[-1] + 1, segments_first_offset(segments[2])]
    assert sum(f.records for f in used) == reference.records_seen


def segments_first_offset(path: Path) -> int:
    return next(iter(iter_metadata_log(path))).offset


def test_load_metadata_of_a_lone_truncated_segment_equals_the_object_path(tmp_path: Path) -> None:
    path = tmp_path / f"{0:020d}.log"
    data = encode_log([*SNAP, *SEG_A[2:], *SEG_B], batch_size=3)
    path.write_bytes(data[: len(data) - TRUNCATE])
    result = load_metadata(str(path))
    reference = MetadataLoader(source=str(path))
    reference.replay(list(iter_metadata_log(path)))
    reference.finish()
    assert result.image == reference.image.with_completeness(False, result.image.incomplete_reasons)
    assert list(result.events) == reference.events
    assert result.errors == tuple(str(p) for p in reference.image.replay_errors)
    assert result.files[0].records == reference.records_seen


def test_load_metadata_replays_with_the_cyclic_gc_paused_and_restores_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A spy around the real ``replay_raw`` (it runs unchanged) records whether GC was on during the replay."""
    d, _segments = make_dir(tmp_path)
    seen: list[bool] = []
    real = MetadataLoader.replay_raw

    def spy(self: MetadataLoader, items: Iterable[tuple]) -> None:
        seen.append(gc.isenabled())
        real(self, items)

    monkeypatch.setattr(MetadataLoader, "replay_raw", spy)
    assert gc.isenabled()
    result = load_metadata(str(d))
    assert seen == [False, False, False] and gc.isenabled()
    assert {"b", "c", "d"} <= set(result.image.topics.by_name)
