"""The compiled writers of ``metadata show`` (``_native_json.c``) against the Python text they replace, byte for byte.

Each case writes the same log entries twice: with the compiled ``lines`` and with ``metadata_records._line`` (the
reference). A spy on the fallback counts the entries the compiled code handed back to Python, so a case cannot pass
by running Python twice. Inputs: hypothesis records of every metadata type and version (decoded from their bytes,
as a dump hands them over), entries that lie about their types (values a decoder never makes: bool for int, int and
str subclasses, non-ASCII and control characters, plain tuples for uuids, out-of-range numbers, foreign mappings,
None inside arrays), control records, unknown types, and whole real logs dumped with and without the compiled code.
The same for ``--json``'s topics and events, and whole ``--json`` documents of real logs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines import native
from pipelines.cli.metadata_records import _head, _line, dump_files, dump_records
from pipelines.cli.metadata_stream import _event, _topic, write_show_json
from pipelines.kafka.metadata_codec import MetadataRecord, decode_metadata_record, encode_metadata_record
from pipelines.kafka.metadata_json import compiled_writers
from pipelines.kafka.metadata_log import LogEntry, iter_metadata_log
from pipelines.kafka.metadata_schema import METADATA_RECORD_TYPES
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.events import AssignmentDetail, MetadataEvent
from pipelines.metadata.image import PartitionImage, TopicImage
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.metadata.summary import summarize
from tests.kafka.schema_strategies import struct_strategy, with_defaults

COMPILED = compiled_writers()
pytestmark = pytest.mark.skipif(COMPILED is None, reason="pipelines.kafka._native_json is not built")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kraft-cluster"
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"
HEAD = _head("00000000000000000000.log")
TYPE_VERSIONS = [(spec.api_key, v) for spec in METADATA_RECORD_TYPES.values()
                 for v in range(spec.versions[0], spec.versions[1] + 1)]


class Spy:
    """The fallback, counting the entries the compiled code did not write itself."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, entry: Any) -> str:
        self.calls += 1
        return _line(HEAD, entry)


def both(entries: list[Any]) -> tuple[bytes, bytes, int]:
    """(compiled bytes, reference bytes, entries the compiled code handed back)."""
    module, writers = COMPILED
    spy = Spy()
    compiled = module.lines(entries, HEAD.encode("ascii"), writers, spy, Uuid)
    reference = "".join(_line(HEAD, e) + "\n" for e in entries).encode("ascii")
    return compiled, reference, spy.calls


def entry(record: Any, offset: Any = 7, control: Any = False) -> LogEntry:
    return LogEntry(offset, 1_700_000_000_000, 3, control, record, 5)


def ascii_only(value: Any) -> bool:
    """True when the compiled writer takes ``value`` itself (no bytes, float, or non-ASCII text anywhere)."""
    if isinstance(value, str):
        return value.isascii()
    if isinstance(value, bytes | float):
        return False
    if isinstance(value, dict | MappingProxyType):
        return all(ascii_only(v) for v in value.values())
    if isinstance(value, tuple) and not isinstance(value, Uuid):
        return all(ascii_only(v) for v in value)
    return True


@st.composite
def records(draw: st.DrawFn) -> MetadataRecord:
    api_key, version = draw(st.sampled_from(TYPE_VERSIONS))
    spec = METADATA_RECORD_TYPES[api_key]
    fields = with_defaults(spec.fields, draw(struct_strategy(spec.fields, version)))
    return decode_metadata_record(encode_metadata_record(MetadataRecord(api_key, version, spec.name, fields)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), min_size=1, max_size=4), st.integers(-(2**63), 2**63 - 1))
def test_decoded_records_are_written_as_the_reference_writes_them(recs: list[MetadataRecord], offset: int) -> None:
    entries = [entry(r, offset) for r in recs]
    compiled, reference, handed_back = both(entries)
    assert compiled == reference
    assert handed_back == sum(not ascii_only(dict(r.fields)) for r in recs)


def partition_record(**changes: Any) -> MetadataRecord:
    spec = METADATA_RECORD_TYPES[3]
    fields = with_defaults(spec.fields, {"partition_id": 1, "topic_id": Uuid(1, 2), "replicas": (1, 2),
                                         "isr": (1,), "leader": 1, "directories": (Uuid(3, 4), Uuid(5, 6))})
    fields.update(changes)
    return MetadataRecord(3, 1, spec.name, MappingProxyType(fields))


def topic_record(name: Any) -> MetadataRecord:
    spec = METADATA_RECORD_TYPES[2]
    return MetadataRecord(2, 0, spec.name, MappingProxyType({"name": name, "topic_id": Uuid(1, 2)}))


class Int(int):
    def __str__(self) -> str:
        return "lie"

    __repr__ = __str__


class Text(str):
    pass


LIES: list[tuple[str, Any, bool]] = [  # (what, entry, whether the compiled code may write it itself)
    ("quotes, backslashes and control characters", entry(topic_record('a"b\\c\n\r\t\b\f\x00\x1f\x7e\x7f')), True),
    ("non-ASCII text", entry(topic_record("t\u00e9\U0001f600")), False),
    ("lone surrogate (surrogateescape)", entry(topic_record("x\udcff")), False),
    ("a str subclass", entry(topic_record(Text("name"))), False),
    ("bool where an int goes", entry(partition_record(leader=True)), False),
    ("an int subclass with its own text", entry(partition_record(leader=Int(4))), False),
    ("an int past 64 bits", entry(partition_record(leader_epoch=2**70)), False),
    ("a negative offset past 64 bits", entry(partition_record(), offset=-(2**64)), False),
    ("a bool offset", entry(partition_record(), offset=True), False),
    ("a plain tuple for a uuid", entry(partition_record(topic_id=(1, 2))), False),
    ("a uuid with a negative half", entry(partition_record(topic_id=tuple.__new__(Uuid, (-1, 2)))), False),
    ("a uuid of three ints", entry(partition_record(topic_id=tuple.__new__(Uuid, (1, 2, 3)))), False),
    ("a list for an array", entry(partition_record(replicas=[1, 2])), True),
    ("None inside an int array", entry(partition_record(replicas=(1, None))), False),
    ("a range for an array", entry(partition_record(isr=range(1, 3))), False),
    ("a bool inside an int array", entry(partition_record(isr=(True,))), False),
    ("a plain dict for fields", entry(MetadataRecord(2, 0, "TopicRecord", {"name": "t", "topic_id": Uuid(1, 2)})),
     True),
    ("a field missing from the fields (its default)", entry(MetadataRecord(2, 0, "TopicRecord", {"name": "t"})),
     True),
    ("an unknown api key", entry(MetadataRecord(999, 0, "X", MappingProxyType({}))), False),
    ("an unknown version", entry(MetadataRecord(3, 99, "PartitionRecord", MappingProxyType({}))), False),
    ("a negative version", entry(MetadataRecord(3, -1, "PartitionRecord", MappingProxyType({}))), False),
    ("is_control given as 0", entry(topic_record("t"), control=0), False),
]


@pytest.mark.parametrize(("what", "lie", "compiled_may_write"), LIES, ids=[w for w, _, _ in LIES])
def test_entries_that_lie_about_their_types_come_out_as_the_reference_has_them(what: str, lie: LogEntry,
                                                                             compiled_may_write: bool) -> None:
    module, writers = COMPILED
    spy = Spy()
    try:
        reference: bytes | type = (_line(HEAD, lie) + "\n").encode("ascii")
    except Exception as exc:  # the reference refuses it: so must the compiled writer, with the same error
        reference = type(exc)
    if isinstance(reference, bytes):
        assert module.lines([lie], HEAD.encode("ascii"), writers, spy, Uuid) == reference, what
    else:
        with pytest.raises(reference):
            module.lines([lie], HEAD.encode("ascii"), writers, spy, Uuid)
    if compiled_may_write:
        assert spy.calls == 0, what


def test_a_control_record_between_data_records_is_the_reference_line() -> None:
    logs = sorted(FIXTURE.rglob("__cluster_metadata-0/*.log"))
    entries = [e for log in logs for e in iter_metadata_log(log)]
    assert any(e.is_control for e in entries) and sum(not e.is_control for e in entries) > 50
    compiled, reference, handed_back = both(entries)
    assert compiled == reference
    assert handed_back == sum(e.is_control for e in entries)


def _dump(path: Path) -> tuple[bytes, list[str]]:
    out = io.BytesIO()
    problems = dump_records(fsspec.filesystem("file"), str(path), out, True)
    return out.getvalue(), problems


def test_the_fixture_dumps_the_same_with_and_without_any_compiled_code() -> None:
    dirs = sorted({p.parent for p in FIXTURE.rglob("__cluster_metadata-0/*.log")})
    assert dirs
    for d in dirs:
        with native.pure_python():
            reference = _dump(d)
        assert _dump(d) == reference, d


def test_real_logs_dump_their_reference_lines() -> None:
    """Every real metadata dir: the dump equals the reference lines of the same decoded entries."""
    dirs = sorted({p.parent for p in REAL.rglob("__cluster_metadata-0/*.log")})
    if not dirs:
        pytest.skip(f"no real metadata logs under {REAL}")
    for d in dirs:
        compiled, _ = _dump(d)
        reference = b""
        for path in dump_files(fsspec.filesystem("file"), str(d)):
            head = _head(Path(path).name)
            reference += "".join(_line(head, e) + "\n" for e in iter_metadata_log(path)).encode("ascii")
        assert compiled == reference, d


# -- metadata show --json: topics and events ---------------------------------------------------------------------


def both_json(kind: str, items: list[Any]) -> tuple[bytes, bytes, int]:
    """(compiled, reference, items handed back) for ``topics`` or ``events``."""
    module = COMPILED[0]
    calls = [0]
    python = _topic if kind == "topics" else _event

    def spy(item: Any) -> str:
        calls[0] += 1
        return python(item)

    if kind == "topics":
        compiled = module.topics(items, spy, Uuid)
        reference = ",\n".join(_topic(t) for t in items)
    else:
        compiled = module.events(items, spy, Uuid, AssignmentDetail)
        reference = ", ".join(json.dumps(e.to_json_dict()) for e in items)
    return compiled, reference.encode("ascii"), calls[0]


def part(n: Any = 0, **changes: Any) -> PartitionImage:
    values: dict[str, Any] = {"partition": n, "replicas": (1, 2), "isr": (2, 1), "removing_replicas": (),
                              "adding_replicas": (), "leader": 2, "leader_epoch": 4, "partition_epoch": 9,
                              "directories": (Uuid(7, 8), Uuid(0, 1))}
    values.update(changes)
    return PartitionImage(**values)


def topic(name: Any = "t", parts: Any = None, topic_id: Any = None) -> TopicImage:
    parts = {p.partition: p for p in (part(0), part(1))} if parts is None else parts
    return TopicImage(Uuid(3, 4) if topic_id is None else topic_id, name, MappingProxyType(parts))


class OddMapping(dict):
    pass


TOPIC_LIES: list[tuple[str, Any, bool]] = [  # (what, topic, whether the compiled code may write it itself)
    ("escapes in the name", topic('a"\\\x7f\x01'), True),
    ("partitions out of order, reassigning, with ELR", topic(parts={
        3: part(3, adding_replicas=(4,), removing_replicas=(1,), elr=(5, 6), last_known_elr=(7,)),
        1: part(1), 2: part(2, leader=-1, isr=())}), True),
    ("a plain dict of partitions", TopicImage(Uuid(3, 4), "t", {0: part(0)}), True),
    ("a dict subclass of partitions", TopicImage(Uuid(3, 4), "t", OddMapping({0: part(0)})), False),
    ("non-ASCII name", topic("t\u00e9"), False),
    ("a bool leader", topic(parts={0: part(0, leader=True)}), False),
    ("an int subclass as partition number", topic(parts={0: part(Int(0))}), False),
    ("a partition number past 64 bits", topic(parts={0: part(2**64)}), False),
    ("a list of replicas", topic(parts={0: part(0, replicas=[1, 2])}), True),
    ("None among replicas", topic(parts={0: part(0, replicas=(1, None))}), False),
    ("a plain tuple among directories", topic(parts={0: part(0, directories=((1, 2),))}), False),
    ("a plain tuple as topic id", topic(topic_id=(1, 2)), False),
    ("no partitions", topic(parts={}), True),
]


@pytest.mark.parametrize(("what", "lie", "compiled_may_write"), TOPIC_LIES, ids=[w for w, _, _ in TOPIC_LIES])
def test_topics_that_lie_about_their_types_come_out_as_the_reference_has_them(what: str, lie: TopicImage,
                                                                            compiled_may_write: bool) -> None:
    compiled, reference, handed_back = both_json("topics", [topic("before"), lie, topic("after")])
    assert compiled == reference, what
    assert handed_back == (0 if compiled_may_write else 1), what


def event(**changes: Any) -> MetadataEvent:
    values: dict[str, Any] = {"offset": 5, "timestamp_ms": 6, "event": "partition_added", "topic_id": Uuid(1, 2),
                              "topic": "t", "partition": 0, "detail": AssignmentDetail((1, 2), (Uuid(3, 4),))}
    values.update(changes)
    return MetadataEvent(**values)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


EVENT_LIES: list[tuple[str, Any, bool]] = [
    ("an assignment from a snapshot", event(detail=AssignmentDetail((1,), (), True)), True),
    ("a broker event: no topic, no partition, a dict detail", event(
        event="broker_registered", topic_id=None, topic=None, partition=None,
        detail={"broker_id": 3, "log_dirs": ["a", "b"], "fenced": False, "rack": None, "x": {"y": [1, (2, 3)]}}),
     True),
    ("no detail", event(detail=None), True),
    ("escapes in the topic", event(topic='q"\\\n'), True),
    ("non-ASCII topic", event(topic="t\u00e9"), False),
    ("a truthy non-bool from_snapshot", event(detail=AssignmentDetail((1,), (), 1)), False),
    ("a float in a dict detail", event(detail={"ratio": 0.5}), False),
    ("an int key in a dict detail", event(detail={1: "a"}), False),
    ("a read-only view as detail", event(detail=MappingProxyType({"a": 1})), False),
    ("a bool partition", event(partition=True), False),
    ("a str topic id", event(topic_id="AAAAAAAAAAAAAAAAAAAAAA"), False),
    ("a deeply nested detail", event(detail={"a": nested(20)}), False),
]


@pytest.mark.parametrize(("what", "lie", "compiled_may_write"), EVENT_LIES, ids=[w for w, _, _ in EVENT_LIES])
def test_events_that_lie_about_their_types_come_out_as_the_reference_has_them(what: str, lie: MetadataEvent,
                                                                            compiled_may_write: bool) -> None:
    compiled, reference, handed_back = both_json("events", [event(), lie, event()])
    assert compiled == reference, what
    assert handed_back == (0 if compiled_may_write else 1), what


def _show_json(path: Path) -> bytes:
    result = load_metadata(str(path))
    out = io.BytesIO()
    write_show_json(out, result, summarize(result))
    return out.getvalue()


def test_show_json_of_real_logs_is_the_same_with_and_without_the_compiled_writer() -> None:
    dirs = sorted({p.parent for p in [*FIXTURE.rglob("__cluster_metadata-0/*.log"),
                                      *REAL.rglob("__cluster_metadata-0/*.log")]})
    assert dirs
    for d in dirs:
        compiled = _show_json(d)
        with native.pure_python():
            assert compiled == _show_json(d), d
        json.loads(compiled)
