"""Every KRaft metadata file in ../shared/real-logdirs decodes, and re-encodes byte for byte.

The corpus is real broker output (read in place, never copied). The MANIFEST marks no truncated
metadata files, so zero errors and zero trailing bytes are expected everywhere.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from pipelines.kafka.metadata_codec import ControlRecord, encode_control_record, encode_metadata_record
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.record_batch import iter_raw_records, read_batches

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"


def _metadata_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    files = [
        p
        for p in CORPUS.rglob("*")
        if p.is_file()
        and (p.name == "bootstrap.checkpoint" or (p.parent.name == "__cluster_metadata-0" and _is_log_or_snapshot(p)))
    ]
    return _distinct(files)


def _distinct(paths: list[Path]) -> list[Path]:
    """One path per distinct content (snapshots of the same broker repeat across repository states)."""
    seen: dict[str, Path] = {}
    for p in paths:
        seen.setdefault(hashlib.sha1(p.read_bytes()).hexdigest(), p)
    return sorted(seen.values())


def _is_log_or_snapshot(p: Path) -> bool:
    return p.name.endswith(".log") or ".checkpoint" in p.name


FILES = _metadata_files()
needs_corpus = pytest.mark.skipif(not FILES, reason=f"real log dirs not available at {CORPUS}")


@needs_corpus
def test_every_real_metadata_file_decodes_and_round_trips() -> None:
    types: Counter[str] = Counter()
    checked: set[tuple[bytes | None, bytes | None]] = set()  # identical raw records are re-encoded once
    for path in FILES:
        log = iter_metadata_log(path)
        raw_values = [
            (k, v)
            for batch in read_batches(path, strict=True).batches
            for _o, _t, k, v, _h in iter_raw_records(batch)
        ]
        entries = list(log)
        assert log.ok, (path, log.errors, log.trailing_invalid_bytes)
        assert len(entries) == len(raw_values)
        for entry, (key, value) in zip(entries, raw_values, strict=True):
            rec = entry.record
            is_control = isinstance(rec, ControlRecord)
            types[f"control:{rec.type_name}" if is_control else rec.name] += 1
            if (key, value) in checked:
                continue
            checked.add((key, value))
            if is_control:
                assert encode_control_record(rec) == (key, value), (path, entry.offset)
            else:
                assert encode_metadata_record(rec) == value, (path, entry.offset)
    # Facts sheet errata: types and versions seen in this corpus.
    for name in ("PartitionRecord", "PartitionChangeRecord", "RegisterBrokerRecord", "NoOpRecord", "TopicRecord"):
        assert types[name] > 0
    assert types["control:SNAPSHOT_HEADER"] == types["control:SNAPSHOT_FOOTER"] > 0


@needs_corpus
def test_snapshots_start_with_header_and_end_with_footer() -> None:
    snapshots = [p for p in FILES if p.name.endswith(".checkpoint")]
    assert snapshots
    for path in snapshots:
        entries = list(iter_metadata_log(path))
        assert entries[0].record.type_name == "SNAPSHOT_HEADER", path
        assert entries[-1].record.type_name == "SNAPSHOT_FOOTER", path
        assert [e.offset for e in entries] == list(range(len(entries)))  # offsets restart at 0


@needs_corpus
@pytest.mark.parametrize("path", FILES[:: max(1, len(FILES) // 25)], ids=lambda p: p.name)
def test_kafka_python_sees_the_same_offsets_and_values(path: Path) -> None:
    """Cross-check against kafka-python's independent v2 reader on a sample of the real files."""
    dr = pytest.importorskip("kafka.record.default_records")
    data = path.read_bytes()
    theirs = []
    pos = 0
    while len(data) - pos >= 61:
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        if size > len(data) - pos:
            break
        batch = dr.DefaultRecordBatch(bytearray(data[pos : pos + size]))
        assert batch.validate_crc()
        theirs.extend((r.offset, bytes(r.value)) for r in batch)
        pos += size
    ours = [(b.base_offset + o, v) for b in read_batches(path).batches for o, _t, _k, v, _h in iter_raw_records(b)]
    assert ours == theirs
