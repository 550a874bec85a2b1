"""``metadata_events`` across runs: a newer snapshot restating the same topics adds nothing; what changed, and every
event of the log, is kept (the Delta table through delta-rs, the engine the CLI uses; no Spark needed)."""

from __future__ import annotations

from pathlib import Path

from pipelines.config.models import AppConfig
from pipelines.metadata import load_metadata
from pipelines.orchestrate.controller import ControllerView
from pipelines.orchestrate.steps import ingest_metadata_step
from pipelines.tables.rust_engine import RustTableStore
from tests.metadata.mdrecords import did, encode_log, encode_snapshot, feature, partition, remove, tid, topic

A, B, C = tid(1), tid(2), tid(3)


def _topic(name: str, topic_id, replicas=(1, 2)) -> list:
    return [topic(name, topic_id), partition(topic_id, 0, list(replicas), dirs=[did(b) for b in replicas])]


def _view(path: Path, data: bytes) -> ControllerView:
    path.write_bytes(data)
    result = load_metadata(str(path))
    assert result.image.complete and not result.errors, result.image.incomplete_reasons
    return ControllerView(result.image, result.events, str(path))


def _history(store: RustTableStore) -> list[tuple]:
    return sorted((r["event"], r["topic"], r["offset"]) for r in store.read_rows("metadata_events"))


def test_a_newer_snapshot_restating_a_topic_adds_no_event(tmp_path: Path) -> None:
    store = RustTableStore(str(tmp_path / "warehouse"), allow_foreign_tables=True)  # no Spark here
    store.ensure_tables()
    config = AppConfig.model_validate({"cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
                                       "brokers": [{"broker_id": 1, "log_dirs": [str(tmp_path / "logs")]}]})
    head = [feature("metadata.version", 21)]
    first = _view(tmp_path / "00000000000000000100-0000000001.checkpoint",
                  encode_snapshot([*head, *_topic("a", A), *_topic("b", B)]))
    ingest_metadata_step(store, config, "run-1", view=first)
    after_first = _history(store)
    assert {(e, t) for e, t, _ in after_first} == {("topic_created", "a"), ("partition_added", "a"),
                                                    ("topic_created", "b"), ("partition_added", "b")}

    # Topic c is created before a and b in the newer snapshot: their records (and so their offsets) move.
    second = _view(tmp_path / "00000000000000000200-0000000001.checkpoint",
                   encode_snapshot([*head, *_topic("c", C), *_topic("a", A), *_topic("b", B, replicas=(2, 3))]))
    ingest_metadata_step(store, config, "run-2", view=second)
    added = sorted(set(_history(store)) - set(after_first))
    assert [(e, t) for e, t, _ in added] == [
        ("partition_added", "b"),  # b's replicas changed: what the snapshot says differs, so it is kept
        ("partition_added", "c"), ("topic_created", "c"),
    ]
    assert len(_history(store)) == len(after_first) + 3  # a's restated events are not duplicated

    # Log events keep their offset key: the same removal at two offsets is two events.
    log = _view(tmp_path / "00000000000000000000.log", encode_log([*head, *_topic("a", A), remove(A), *_topic("a", A),
                                                                   remove(A)]))
    ingest_metadata_step(store, config, "run-3", view=log)
    ingest_metadata_step(store, config, "run-4", view=log)  # a rerun adds nothing
    assert [t for e, t, _ in _history(store) if e == "topic_removed"] == ["a", "a"]
