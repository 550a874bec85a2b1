"""The compiled PartitionChangeRecord fold (``_native_fold.c``) against its pure-Python twin ``fold.fold_pending``,
and replay with either fold against replay with neither (``TopicsDelta.replay_partition_change`` record by record).

Both folds must return the same answer and leave the same state for any input, odd types included; a replay that
folds must give the same image, events and errors as one that does not.
"""

from __future__ import annotations

import copy
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pipelines import native
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.metadata import fold as fold_module
from pipelines.metadata import loader as loader_module
from pipelines.metadata.fold import FOLD_CONTEXT, fold_pending
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.metadata.partition_merge import CHANGE_KEYS, partition_from_record, pending_change
from pipelines.metadata.topics_image_delta import _TopicChange
from tests.metadata.mdrecords import change, did, encode_log, partition, remove, tid, topic

COMPILED = native.load(fold_module.MODULE)
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="_native_fold not built (tests/test_native_build.py)")

T1, T2 = tid(1), tid(2)
BASE = {p: partition_from_record(partition(T1, p, [0, 1, 2], dirs=[did(0), did(1), did(2)]).fields) for p in range(3)}

ODD = st.one_of(st.none(), st.integers(-3, 3), st.integers(2**63, 2**70), st.booleans(), st.text(max_size=2),
                st.lists(st.integers(0, 3), max_size=3), st.lists(st.integers(0, 3), max_size=3).map(tuple))
TUPLES = st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=3).map(tuple))
GOOD = {  # what the decoder gives a hot record
    "isr": TUPLES, "eligible_leader_replicas": TUPLES, "last_known_elr": TUPLES,
    "leader": st.sampled_from([None, -2, -1, 0, 1]), "leader_recovery_state": st.sampled_from([None, -1, 0, 1]),
    "replicas": st.none(), "directories": st.none(), "removing_replicas": st.none(), "adding_replicas": st.none(),
}


def _mostly_good(key: str) -> st.SearchStrategy:
    """The decoder's values, and one time in eight an odd one (a replica move, a list, a bool, a huge int...)."""
    return st.integers(0, 7).flatmap(lambda n: ODD if n == 0 else GOOD[key])


@st.composite
def fields_strategy(draw: st.DrawFn) -> Any:
    fields: dict[str, Any] = {
        "topic_id": draw(st.sampled_from([T1, T1, T1, T2, ["unhashable"]])),
        "partition_id": draw(st.sampled_from([0, 1, 2, 0, 1, 2, 3, -1, ["unhashable"]])),
    }
    for key in CHANGE_KEYS:
        fields[key] = draw(_mostly_good(key))
    if draw(st.integers(0, 9)) == 0:
        del fields[draw(st.sampled_from(sorted(fields)))]  # a record missing a field: both folds decline it
    return MappingProxyType(fields) if draw(st.integers(0, 9)) == 0 else fields


ODD_STATES = [[1, 2], (1,) * 8, [BASE[0], None, None, "0", None, None, None, 0]]
CHANGED = st.tuples(st.sets(st.integers(0, 2)), st.booleans(), st.one_of(st.none(), st.sampled_from(ODD_STATES)))


def _changed(params: tuple) -> dict:
    """A fresh ``TopicsDelta.changed``: T1 known with pending states for some partitions (maybe an odd one), T2
    absent."""
    pending, changed_1, odd = params
    change_ = _TopicChange(T1, "t", MappingProxyType(BASE))
    for p in pending:
        change_.pending[p] = pending_change(BASE[p])
    if changed_1:
        change_.changed[1] = BASE[1]
    if odd is not None:
        change_.pending[0] = copy.copy(odd)
    return {T1: change_}


def _state(changed: dict) -> list:
    return [(tid_, dict(c.pending), dict(c.changed)) for tid_, c in changed.items()]


@needs_compiled
@settings(max_examples=2000, deadline=None)
@given(params=CHANGED, fields=fields_strategy())
def test_compiled_fold_equals_the_python_twin(params: tuple, fields: Any) -> None:
    changed, twin_changed = _changed(params), _changed(params)
    folded = COMPILED.fold(FOLD_CONTEXT, changed, fields)
    assert folded is fold_pending(FOLD_CONTEXT, twin_changed, fields)
    assert _state(changed) == _state(twin_changed)
    event(f"folded={folded}")


@needs_compiled
def test_compiled_fold_rejects_a_bad_context() -> None:
    with pytest.raises(TypeError):
        COMPILED.fold(FOLD_CONTEXT[:-1], {}, {})
    with pytest.raises(TypeError):
        COMPILED.fold(FOLD_CONTEXT, [], {})


def test_twin_folds_the_hot_case_and_makes_the_pending_state() -> None:
    changed = {T1: _TopicChange(T1, "t", MappingProxyType(BASE))}
    fields = dict(change(T1, 2, isr=(0, 1), leader=1).fields)
    assert fold_pending(FOLD_CONTEXT, changed, fields)
    assert changed[T1].pending[2] == [BASE[2], (0, 1), 1, 1, None, None, None, 1]
    fields["replicas"] = (0, 1)  # a replica move: declined, nothing touched
    assert not fold_pending(FOLD_CONTEXT, changed, fields)
    assert changed[T1].pending[2][7] == 1


# -- replay: folding (compiled, twin) against not folding --------------------------------------------------------
def _never_fold(_context: tuple, _changed: dict, _fields: Any) -> bool:
    return False


def _replay(raw: bytes, tmp: Path, fold: Any, monkeypatch: pytest.MonkeyPatch, max_delta: int) -> MetadataLoader:
    path = tmp / "00000000000000000000.log"
    path.write_bytes(raw)
    monkeypatch.setattr(loader_module, "folder", lambda: fold)
    loader = MetadataLoader(max_delta_records=max_delta)
    loader.replay(iter_metadata_log(path))
    loader.finish()
    return loader


def _outcome(loader: MetadataLoader) -> tuple:
    image = loader.image
    return (image.topics, image.replay_errors, tuple(loader.events), loader.records_seen)


OPS = st.lists(st.tuples(
    st.sampled_from(["isr", "leader", "none", "move", "unknown_partition", "unknown_topic", "remove", "recreate"]),
    st.integers(0, 2), st.integers(0, 3)), max_size=60)


def _records(ops: list) -> list:
    records: list = [topic("t", T1)] + [partition(T1, p, [0, 1, 2], dirs=[did(0), did(1), did(2)]) for p in range(3)]
    for kind, p, b in ops:
        if kind == "isr":
            records.append(change(T1, p, isr=tuple(range(b))))
        elif kind == "leader":
            records.append(change(T1, p, leader=b - 2, leader_recovery_state=b % 2))
        elif kind == "none":
            records.append(change(T1, p))
        elif kind == "move":
            records.append(change(T1, p, replicas=(b, (b + 1) % 4), directories=(did(b), did(b + 1))))
        elif kind == "unknown_partition":
            records.append(change(T1, 7 + p, isr=(b,)))
        elif kind == "unknown_topic":
            records.append(change(tid(9), p, isr=(b,)))
        elif kind == "remove":
            records.append(remove(T1))
        else:
            records += [topic("t", T1)] + [partition(T1, q, [b, 0], dirs=[did(b), did(0)]) for q in range(3)]
    return records


@settings(max_examples=150, deadline=None)
@given(ops=OPS, max_delta=st.integers(1, 40))
def test_replay_with_either_fold_equals_replay_without(ops: list, max_delta: int, tmp_path_factory) -> None:
    raw = encode_log(_records(ops), batch_size=4)
    with pytest.MonkeyPatch.context() as mp:
        reference = _outcome(_replay(raw, tmp_path_factory.mktemp("ref"), _never_fold, mp, max_delta))
        folds = [fold_pending] + ([COMPILED.fold] if COMPILED is not None else [])
        for fold in folds:
            assert _outcome(_replay(raw, tmp_path_factory.mktemp("fold"), fold, mp, max_delta)) == reference


def test_pure_python_block_replays_with_the_twin() -> None:
    with native.pure_python():
        assert fold_module.folder() is fold_pending
    if COMPILED is not None:
        assert fold_module.folder() is COMPILED.fold


REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"


def test_every_real_metadata_log_replays_the_same_compiled_and_pure() -> None:
    logs = sorted(REAL.glob("**/__cluster_metadata-0"))
    if not logs:
        pytest.skip(f"real log dirs not present at {REAL}")
    for directory in logs:
        compiled = load_metadata(str(directory))
        with native.pure_python():
            pure = load_metadata(str(directory))
        assert compiled.image.topics == pure.image.topics, directory
        assert compiled.image.replay_errors == pure.image.replay_errors, directory
        assert compiled.events == pure.events, directory
