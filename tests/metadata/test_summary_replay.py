"""The summary's replay (``load_metadata(keep_partition_added=False)``, what ``metadata show`` runs without a view
option) against the full replay: the same image, errors and summary, the same events but the ``partition_added``
events of new partitions, which are counted instead of kept; and the compiled PartitionRecord path
(``_native_fold.c``'s ``add``) against its pure-Python twin ``fold.add_partition``."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pipelines import native
from pipelines.cli.metadata_text import render_summary
from pipelines.kafka.uuid import MIGRATING
from pipelines.metadata import events as ev
from pipelines.metadata import fold as fold_module
from pipelines.metadata import loader as loader_module
from pipelines.metadata.fold import ADD_CONTEXT, PARTITION_KEYS, add_partition
from pipelines.metadata.metadata_log_source import ReplayResult, load_metadata
from pipelines.metadata.partition_merge import partition_from_record, pending_change
from pipelines.metadata.summary import summarize
from pipelines.metadata.topics_image_delta import _TopicChange
from tests.metadata.mdrecords import (
    broker,
    change,
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

COMPILED = native.load(fold_module.MODULE)
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="_native_fold not built (tests/test_native_build.py)")

T1, T2 = tid(1), tid(2)
BASE = {p: partition_from_record(partition(T1, p, [0, 1, 2], dirs=[did(0), did(1), did(2)]).fields) for p in range(2)}


# -- compiled add against its twin ------------------------------------------------------------------------------
TUPLES = st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=3).map(tuple))
DIRS = st.one_of(st.none(), st.lists(st.sampled_from([did(0), did(1), MIGRATING]), max_size=3).map(tuple))
ODD = st.one_of(st.none(), st.integers(-3, 3), st.integers(2**63, 2**70), st.booleans(), st.text(max_size=2),
                st.lists(st.integers(0, 3), max_size=3))
GOOD: dict[str, st.SearchStrategy] = {
    "replicas": st.lists(st.integers(0, 3), max_size=3).map(tuple), "directories": DIRS, "isr": TUPLES,
    "removing_replicas": TUPLES, "adding_replicas": TUPLES, "eligible_leader_replicas": TUPLES,
    "last_known_elr": TUPLES, "leader": st.integers(-1, 3), "leader_epoch": st.integers(0, 3),
    "partition_epoch": st.integers(0, 3), "leader_recovery_state": st.integers(0, 1),
}


def _mostly_good(key: str) -> st.SearchStrategy:
    return st.integers(0, 39).flatmap(lambda n: ODD if n == 0 else GOOD[key])


@st.composite
def fields_strategy(draw: st.DrawFn) -> Any:
    fields: dict[str, Any] = {
        "topic_id": draw(st.sampled_from([T1, T1, T1, T2, ["unhashable"]])),
        "partition_id": draw(st.sampled_from([0, 1, 2, 3, 2, 3, -1, True, ["unhashable"]])),
    }
    for key in PARTITION_KEYS:
        fields[key] = draw(_mostly_good(key))
    replicas = fields["replicas"]
    if type(replicas) is tuple and draw(st.booleans()):  # directories that fit the replicas, MIGRATING or not
        fields["directories"] = tuple(draw(st.sampled_from([did(0), did(1), MIGRATING])) for _ in replicas)
    if draw(st.integers(0, 9)) == 0:
        del fields[draw(st.sampled_from(sorted(fields)))]
    return MappingProxyType(fields) if draw(st.integers(0, 19)) == 0 else fields


STATES = st.tuples(st.sets(st.integers(0, 3)), st.sets(st.integers(0, 3)), st.booleans())


def _changed(params: tuple) -> dict:
    """A fresh ``TopicsDelta.changed``: T1 (base partitions 0 and 1, or none) with some partitions pending or
    changed; T2 absent."""
    pending, changed_, with_base = params
    change_ = _TopicChange(T1, "t", MappingProxyType(BASE if with_base else {}))
    for p in pending:
        change_.pending[p] = pending_change(BASE[0])
    for p in changed_:
        change_.changed[p] = BASE[1]
    return {T1: change_}


def _state(changed: dict) -> list:
    return [(t, {p: list(s) for p, s in c.pending.items()}, dict(c.changed)) for t, c in changed.items()]


@needs_compiled
@settings(max_examples=2000, deadline=None)
@given(params=STATES, fields=fields_strategy())
def test_compiled_add_equals_the_python_twin(params: tuple, fields: Any) -> None:
    changed, twin_changed = _changed(params), _changed(params)
    added = COMPILED.add(ADD_CONTEXT, changed, fields)
    assert added is add_partition(ADD_CONTEXT, twin_changed, fields)
    assert _state(changed) == _state(twin_changed)
    event(f"added={added}")


@needs_compiled
def test_compiled_add_rejects_a_bad_context() -> None:
    with pytest.raises(TypeError):
        COMPILED.add(ADD_CONTEXT[:-1], {}, {})
    with pytest.raises(TypeError):
        COMPILED.add(ADD_CONTEXT, [], {})
    with pytest.raises(TypeError):
        COMPILED.add(ADD_CONTEXT, {})


def test_twin_registers_what_partition_from_record_makes() -> None:
    changed = {T1: _TopicChange(T1, "t", MappingProxyType({}))}
    record = partition(T1, 4, [2, 1], dirs=[MIGRATING, MIGRATING], isr=[2])
    assert add_partition(ADD_CONTEXT, changed, dict(record.fields))
    assert changed[T1].changed[4] == partition_from_record(record.fields)
    assert changed[T1].changed[4].directories == (MIGRATING, MIGRATING)
    assert not add_partition(ADD_CONTEXT, changed, dict(record.fields))  # known now: the ordinary path's events
    bad = dict(partition(T1, 5, [2, 1], dirs=[did(1)]).fields)  # directories that do not fit: an error
    assert not add_partition(ADD_CONTEXT, changed, bad)
    assert 5 not in changed[T1].changed


def test_pure_python_block_replays_with_the_twin() -> None:
    with native.pure_python():
        assert fold_module.adder() is add_partition
    if COMPILED is not None:
        assert fold_module.adder() is COMPILED.add


# -- the summary's replay against the full one --------------------------------------------------------------------
def assert_same_but_partition_added(light: ReplayResult, full: ReplayResult) -> None:
    """Everything equal, but ``light`` keeps the events of ``full`` less some partition_added it counts instead."""
    assert light.image == full.image
    assert (light.errors, light.files, light.notes, light.snapshot_timestamp_ms) == (
        full.errors, full.files, full.notes, full.snapshot_timestamp_ms)
    assert full.events_not_kept == 0
    assert light.event_count == full.event_count == len(full.events)
    kept = iter(light.events)
    expected = next(kept, None)
    dropped = 0
    for e in full.events:
        if e == expected:
            expected = next(kept, None)
        else:
            assert e.event == ev.PARTITION_ADDED, e
            dropped += 1
    assert expected is None, "light kept an event the full replay does not have"
    assert dropped == light.events_not_kept
    assert summarize(light) == summarize(full)
    assert render_summary(light, summarize(light)) == render_summary(full, summarize(full))


def _both(path: Path | str) -> tuple[ReplayResult, ReplayResult]:
    return load_metadata(str(path), keep_partition_added=False), load_metadata(str(path))


OPS = st.lists(st.tuples(
    st.sampled_from(["topic", "partition", "again", "odd_dirs", "migrating", "isr", "move", "remove", "recreate",
                     "unknown_topic", "begin", "end", "abort", "feature"]),
    st.integers(0, 3), st.integers(0, 3)), max_size=50)


def _records(ops: list) -> list:
    records: list = [broker(1, 1), topic("t0", tid(0)), partition(tid(0), 0, [0, 1], dirs=[did(0), did(1)])]
    for kind, t, p in ops:
        if kind == "topic":
            records.append(topic(f"t{t}", tid(t)))
        elif kind in ("partition", "again"):
            records.append(partition(tid(t), p, [p, (p + 1) % 4], dirs=[did(p), did(p + 1)]))
        elif kind == "odd_dirs":
            records.append(partition(tid(t), p, [0, 1], dirs=[did(p)]))
        elif kind == "migrating":
            records.append(partition(tid(t), p, [0, 1, 2], dirs=[MIGRATING] * 3, isr=[0]))
        elif kind == "isr":
            records.append(change(tid(t), p, isr=(p,)))
        elif kind == "move":
            records.append(change(tid(t), p, replicas=(p, 3), directories=(did(p), did(3))))
        elif kind == "remove":
            records.append(remove(tid(t)))
        elif kind == "recreate":
            records += [topic(f"t{t}", tid(t + 10)), partition(tid(t + 10), 0, [1, 2])]
        elif kind == "unknown_topic":
            records.append(partition(tid(9), p, [1]))
        elif kind in ("begin", "end", "abort"):
            records.append(named(f"{kind.capitalize()}TransactionRecord", **({"name": "x"} if kind == "begin" else {})))
        else:
            records.append(feature("metadata.version", 7 + p))
    return records


@settings(max_examples=150, deadline=None)
@given(ops=OPS, batch=st.integers(1, 5), compiled=st.booleans())
def test_summary_replay_equals_the_full_replay_on_generated_logs(ops: list, batch: int, compiled: bool,
                                                                 tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("log") / "00000000000000000000.log"
    path.write_bytes(encode_log(_records(ops), batch_size=batch))
    if compiled:
        assert_same_but_partition_added(*_both(path))
    else:
        with native.pure_python():
            assert_same_but_partition_added(*_both(path))


def test_summary_replay_of_a_dir_with_a_snapshot_and_small_deltas(tmp_path: Path, monkeypatch) -> None:
    snapshot = [feature("metadata.version", 21), broker(1, 1), topic("a", T1), partition(T1, 0, [1])]
    (tmp_path / "00000000000000000004-0000000001.checkpoint").write_bytes(encode_snapshot(snapshot))
    log = [topic("b", T2)] + [partition(T2, p, [1], dirs=[did(p)]) for p in range(5)] + [
        partition(T1, 1, [1]), partition(T1, 0, [1], isr=[]), remove(T1), topic("a", tid(3)), partition(tid(3), 0, [1])]
    (tmp_path / "00000000000000000004.log").write_bytes(encode_log(log, start=4, batch_size=2))
    monkeypatch.setattr(loader_module.MetadataLoader.__init__, "__kwdefaults__",
                        {**loader_module.MetadataLoader.__init__.__kwdefaults__, "max_delta_records": 3})
    light, full = _both(tmp_path)
    assert light.events_not_kept > 1  # the snapshot's partition and some of the log's
    assert_same_but_partition_added(light, full)


@pytest.mark.parametrize("last", ["partition", "topic"])
def test_summary_replay_of_snapshots_alone_and_their_last_record(tmp_path: Path, last: str) -> None:
    """A snapshot whose last record the hot path takes, or not: finish_snapshot's events are dated alike; an invalid
    snapshot counts nothing."""
    records = [feature("metadata.version", 21), broker(1, 1), topic("a", T1), partition(T1, 0, [1]),
               partition(T1, 1, [1], dirs=[did(1)])]
    if last == "topic":
        records.append(topic("b", T2))
    good = tmp_path / "00000000000000000009-0000000001.checkpoint"
    good.write_bytes(encode_snapshot(records))
    light, full = _both(good)
    assert light.events_not_kept == 2
    assert_same_but_partition_added(light, full)
    bad = tmp_path / "00000000000000000012-0000000001.checkpoint"
    bad.write_bytes(encode_snapshot(records)[:-30])  # truncated: no footer, falls back to the good one
    light, full = _both(tmp_path)
    assert light.events_not_kept == 2
    assert_same_but_partition_added(light, full)


def test_summary_replay_of_the_bench_log(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from cli_log import write_log

    path = tmp_path / "00000000000000000000.log"
    write_log(path, 20_000, 1_000)
    light, full = _both(path)
    assert light.events_not_kept > 5_000
    assert_same_but_partition_added(light, full)


REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"


def test_summary_replay_of_every_real_metadata_log() -> None:
    logs = sorted(REAL.glob("**/__cluster_metadata-0"))
    if not logs:
        pytest.skip(f"real log dirs not present at {REAL}")
    for directory in logs:
        assert_same_but_partition_added(*_both(directory))
        for segment in sorted(directory.glob("*.log")):
            assert_same_but_partition_added(*_both(segment))


def test_a_second_snapshot_dates_its_removals_alike_when_its_last_record_took_the_hot_path(tmp_path: Path) -> None:
    """finish_snapshot's topic_removed and broker_unregistered events carry the offset and time of the snapshot's last
    record, also when that record was a new partition registered without the ordinary replay."""
    from pipelines.kafka.metadata_log import iter_metadata_log
    from pipelines.metadata.loader import MetadataLoader

    first = tmp_path / "a.checkpoint"
    first.write_bytes(encode_snapshot([broker(1, 1), topic("a", T1), partition(T1, 0, [1])], timestamp_ms=10))
    second = tmp_path / "b.checkpoint"
    second.write_bytes(encode_snapshot([broker(2, 1), topic("b", T2), partition(T2, 0, [2])], timestamp_ms=20))
    outcomes = []
    for keep in (True, False):
        loader = MetadataLoader(keep_partition_added=keep)
        for path, end in ((first, 5), (second, 10)):
            assert loader.load_snapshot(iter_metadata_log(path), last_offset=end - 1, epoch=1).ok
        image = loader.finish()
        removals = [e for e in loader.events if e.event in (ev.TOPIC_REMOVED, ev.BROKER_UNREGISTERED)]
        assert len(removals) == 2
        outcomes.append((image, removals, len(loader.events) + loader.events_not_kept))
    assert outcomes[0] == outcomes[1]
