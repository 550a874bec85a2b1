"""The compiled metadata-log scan (``_native_metadata.c``) against the pure-Python loop, on the same bytes.

Each case reads a buffer twice, once with ``KLGC_PURE_PYTHON=1`` and once with the compiled scan, and compares
every entry (values AND types, recursively: ``True`` is not ``1`` here), every summary attribute, and every error
(message and offset; for ``on_error="raise"`` the exception). A spy counts the batches the compiled scan took, so
a case cannot pass by silently running Python twice. Inputs: hypothesis records of every metadata type/version,
a generated multi-type log, corrupted and truncated copies of it (CRC checks off so damaged records reach the
decoders), consumers that stop early, the project's committed Kafka cluster fixture and the real metadata files
under ../shared/real-logdirs.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines import native
from pipelines.errors import DecodeError
from pipelines.kafka import metadata_log
from pipelines.kafka.compression import Compression
from pipelines.kafka.metadata_codec import (
    MetadataRecord,
    encode_control_record,
    encode_metadata_record,
    make_control_record,
    make_record,
)
from pipelines.kafka.metadata_native import MODULE, scan_context
from pipelines.kafka.metadata_schema import METADATA_RECORD_TYPES
from pipelines.kafka.record_batch import Record, encode_batch
from pipelines.kafka.uuid import Uuid
from tests.kafka.schema_strategies import struct_strategy

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "real-logdirs"
FIXTURE = REPO / "tests" / "fixtures" / "kraft-cluster"

pytestmark = pytest.mark.skipif(native.load(MODULE) is None, reason="the compiled metadata scan is not built")

TYPES_AND_VERSIONS = [
    (spec, v) for spec in METADATA_RECORD_TYPES.values() for v in range(spec.versions[0], spec.versions[1] + 1)
]


def same(a: Any, b: Any) -> bool:
    """Equal values of identical types, recursively (tuples, dicts, read-only mappings, dataclasses)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, MappingProxyType)):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b


class _Spy:
    """Wraps the compiled scan to count the batches it took."""

    def __init__(self) -> None:
        self.batches = 0

    def context(self, *args: Any) -> Any:
        found = scan_context(*args)
        if found is None:
            return None
        scan, ctx = found

        def counting(*a: Any) -> Any:
            out = scan(*a)
            self.batches += out[2]
            return out

        return counting, ctx


SUMMARY = ("last_offset", "records", "batches", "valid_bytes", "trailing_invalid_bytes", "errors", "stopped_early")


def _read(source: Any, *, raw: bool, on_error: str, verify_crc: bool, take: int | None) -> tuple:
    log = metadata_log.MetadataLog(source, verify_crc=verify_crc, on_error=on_error)
    it = log.iter_raw() if raw else iter(log)
    entries: list[Any] = []
    outcome: Any = None
    try:
        for entry in it:
            entries.append(entry)
            if take is not None and len(entries) >= take:
                break
    except DecodeError as exc:
        outcome = ("raised", str(exc), exc.offset)
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    return entries, outcome, tuple(getattr(log, name) for name in SUMMARY)


def both(monkeypatch: pytest.MonkeyPatch, source: Any, *, raw: bool = True, on_error: str = "stop",
         verify_crc: bool = True, take: int | None = None) -> int:
    """Read ``source`` with both paths, assert identical outcomes; returns the batches the compiled scan took."""
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    pure = _read(source, raw=raw, on_error=on_error, verify_crc=verify_crc, take=take)
    monkeypatch.delenv(native.PURE_PYTHON_ENV)
    spy = _Spy()
    monkeypatch.setattr(metadata_log, "scan_context", spy.context)
    compiled = _read(source, raw=raw, on_error=on_error, verify_crc=verify_crc, take=take)
    monkeypatch.setattr(metadata_log, "scan_context", scan_context)
    assert len(compiled[0]) == len(pure[0])
    for i, (c, p) in enumerate(zip(compiled[0], pure[0], strict=True)):
        assert same(c, p), (i, c, p)
    assert compiled[1] == pure[1]
    assert compiled[2] == pure[2]
    return spy.batches


def _values_log(values: list[bytes], per_batch: int = 3, base: int = 0) -> bytes:
    out = bytearray()
    for i in range(0, len(values), per_batch):
        chunk = values[i : i + per_batch]
        out += encode_batch(chunk, base + i, epoch=2, timestamp_ms=1_700_000_000_000 + i)
    return bytes(out)


def _empty_batch(base: int) -> bytes:
    """A valid batch holding no record (what compaction can leave), made from a one-record batch."""
    header = bytearray(encode_batch([b"x"], base, epoch=2, timestamp_ms=7)[:61])
    header[8:12] = (61 - 12).to_bytes(4, "big")
    header[57:61] = (0).to_bytes(4, "big")
    header[17:21] = crc32c(bytes(header[21:])).to_bytes(4, "big")
    return bytes(header)


def _mixed_log(seed: int = 3, n: int = 400) -> bytes:
    """Every record type, with a control batch, a compressed batch and an empty batch in the middle."""
    rng = random.Random(seed)
    topic = Uuid(rng.getrandbits(64), rng.getrandbits(64))
    values = [encode_metadata_record(make_record("TopicRecord", name="t", topic_id=topic))]
    for p in range(n):
        values.append(encode_metadata_record(make_record(
            "PartitionChangeRecord", partition_id=p % 7, topic_id=topic, isr=(1, 2, 3)[: 1 + p % 3],
            leader=p % 4 - 1, directories=(Uuid(7, p),) if p % 5 == 0 else None)))
        if p % 9 == 0:
            values.append(encode_metadata_record(make_record("NoOpRecord")))
        if p % 13 == 0:
            values.append(encode_metadata_record(make_record(
                "RegisterBrokerRecord", broker_id=p, rack=None if p % 2 else "r", log_dirs=(Uuid(1, p),))))
        if p % 17 == 0:
            values.append(encode_metadata_record(make_record(
                "ConfigRecord", resource_type=2, resource_name="t", name="x", value=None if p % 2 else "ü\udcff")))
    data = bytearray(_values_log(values, per_batch=4))
    n_off = len(values)
    key, value = encode_control_record(make_control_record("LEADER_CHANGE", leader_id=1))
    data += encode_batch([(key, value)], n_off, epoch=2, timestamp_ms=5, is_control=True)
    data += encode_batch(values[:5], n_off + 1, epoch=2, timestamp_ms=6, compression=Compression.GZIP)
    data += _empty_batch(n_off + 6)
    data += _values_log(values[:30], per_batch=5, base=n_off + 6)
    return bytes(data)


# -- hypothesis: every type and version -----------------------------------------------------------------


def _every_type_and_version(monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
    values = []
    for _ in range(data.draw(st.integers(1, 4))):
        spec, version = data.draw(st.sampled_from(TYPES_AND_VERSIONS))
        fields = data.draw(struct_strategy(spec.fields, version))
        record = make_record(spec.name, version, **fields)
        values.append(encode_metadata_record(record))
    per_batch = data.draw(st.integers(1, 4))
    source = _values_log(values, per_batch=per_batch)
    # the pure run goes first and fills the tiny-record cache: every batch is then compiled-path material
    assert both(monkeypatch, source, raw=data.draw(st.booleans())) == -(-len(values) // per_batch)


_FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@settings(max_examples=60, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(data=st.data())
def test_every_type_and_version_decodes_the_same(monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
    _every_type_and_version(monkeypatch, data)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(data=st.data())
def test_every_type_and_version_decodes_the_same_long(monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
    _every_type_and_version(monkeypatch, data)


def test_the_compiled_scan_takes_plain_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _mixed_log()
    assert both(monkeypatch, source) > 100  # all the plain batches; the control and compressed ones go to Python


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("on_error", ["stop", "skip", "raise"])
def test_mixed_log_in_every_mode(monkeypatch: pytest.MonkeyPatch, raw: bool, on_error: str) -> None:
    assert both(monkeypatch, _mixed_log(seed=5), raw=raw, on_error=on_error) > 0


@pytest.mark.parametrize("take", [1, 2, 4, 5, 8, 50, 333])
def test_consumer_stopping_early_leaves_the_same_summary(monkeypatch: pytest.MonkeyPatch, take: int) -> None:
    source = _mixed_log(seed=7)  # 4 records a batch at first: 4 and 8 end a batch
    assert both(monkeypatch, source, take=take) > 0
    both(monkeypatch, source, raw=False, take=take)


# -- damaged bytes ---------------------------------------------------------------------------------------


_DAMAGE = {
    "flips": st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=4),
    "cut": st.one_of(st.none(), st.integers(0, 10**9)),
    "on_error": st.sampled_from(["stop", "skip", "raise"]),
    "raw": st.booleans(),
}


def _damaged(monkeypatch: pytest.MonkeyPatch, flips: list[tuple[int, int]], cut: int | None, on_error: str,
             raw: bool) -> None:
    data = bytearray(_mixed_log(seed=11, n=60))
    for where, byte in flips:
        data[where % len(data)] = byte
    if cut is not None:
        data = data[: cut % len(data)]
    both(monkeypatch, bytes(data), raw=raw, on_error=on_error, verify_crc=False)
    both(monkeypatch, bytes(data), raw=raw, on_error=on_error, verify_crc=True)


@settings(max_examples=80, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(**_DAMAGE)
def test_corrupted_and_truncated_bytes_give_the_same_errors(
    monkeypatch: pytest.MonkeyPatch, flips: list[tuple[int, int]], cut: int | None, on_error: str, raw: bool
) -> None:
    _damaged(monkeypatch, flips, cut, on_error, raw)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(**_DAMAGE)
def test_corrupted_and_truncated_bytes_give_the_same_errors_long(
    monkeypatch: pytest.MonkeyPatch, flips: list[tuple[int, int]], cut: int | None, on_error: str, raw: bool
) -> None:
    _damaged(monkeypatch, flips, cut, on_error, raw)


def test_odd_encodings_go_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-canonical frames the compiled scan leaves to Python: multi-byte frame varints, a 5-byte length,
    garbage after the body, a bad frame version, an unknown type and version, a header on a record."""
    good = encode_metadata_record(make_record("TopicRecord", name="abc", topic_id=Uuid(1, 2)))
    odd = [
        b"\x81\x00" + good[1:],  # frame version 1 in two bytes
        good + b"\x00",  # garbage after the body
        b"\x02" + good[1:],  # unknown frame version
        b"\x01\x7f\x00" + good[3:],  # unknown apiKey
        b"\x01\x02\x05" + good[3:],  # unknown version
        good[:-3],  # truncated
    ]
    for value in odd:
        source = _values_log([good, value, good], per_batch=3)
        for on_error in ("stop", "skip", "raise"):
            both(monkeypatch, source, on_error=on_error)
    with_header = encode_batch([Record(0, 1, None, good, (("h", b"v"),))], 0, epoch=1, timestamp_ms=1)
    assert both(monkeypatch, with_header) == 0
    big = _values_log([good] * 3, per_batch=3)
    both(monkeypatch, big)
    assert both(monkeypatch, big) == 1


# -- committed fixture and real files --------------------------------------------------------------------


def _fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURE.rglob("__cluster_metadata-0/*") if p.suffix in (".log", ".checkpoint"))


def test_committed_cluster_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    files = _fixture_files()
    assert files
    taken = 0
    for path in files:
        taken += both(monkeypatch, path)
        both(monkeypatch, path, raw=False)
    assert taken > 0


def _real_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(
        p for p in CORPUS.rglob("*")
        if p.is_file() and (p.name == "bootstrap.checkpoint" or (
            p.parent.name == "__cluster_metadata-0" and (p.suffix == ".log" or ".checkpoint" in p.name)))
    )


def test_real_metadata_files(monkeypatch: pytest.MonkeyPatch) -> None:
    files = _real_files()
    if not files:
        pytest.skip(f"real log dirs not available at {CORPUS}")
    seen: set[int] = set()
    taken = 0
    for path in files:
        data = path.read_bytes()
        if hash(data) in seen:
            continue
        seen.add(hash(data))
        taken += both(monkeypatch, data)
        both(monkeypatch, data, raw=False)
    assert taken > 0


def test_tiny_records_are_the_cached_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    noop = encode_metadata_record(make_record("NoOpRecord"))
    source = _values_log([noop] * 6, per_batch=2)
    both(monkeypatch, source)
    assert both(monkeypatch, source) == 3
    entries = list(metadata_log.MetadataLog(source).iter_raw())
    assert all(type(e[4]) is MetadataRecord and e[4].name == "NoOpRecord" for e in entries)
