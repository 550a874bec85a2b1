"""``metadata_events`` from ZooKeeper across runs (delta-rs, no Spark): znode times feed the history, and a topic
gone from ZooKeeper gets ``topic_removed`` at the time of the run that first saw it gone, once."""

from __future__ import annotations

from pathlib import Path

from pipelines.config.models import AppConfig
from pipelines.kafka.uuid import Uuid
from pipelines.orchestrate.steps import ingest_metadata_step
from pipelines.tables.rust_engine import RustTableStore
from tests.metadata.zk_tree import T0, ZkTree

A, B = Uuid(0x51, 0x61), Uuid(0x52, 0x62)
DAY = 86_400_000


def _run(tmp_path: Path, store: RustTableStore, run_id: str, tree: ZkTree) -> None:
    dump = tmp_path / f"{run_id}.json"
    dump.write_text(tree.snapshot().to_json())
    config = AppConfig.model_validate({"cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
                                       "metadata": {"kind": "zookeeper", "source": str(dump)}})
    report, _ = ingest_metadata_step(store, config, run_id)
    assert report.counts["complete"]


def _history(store: RustTableStore) -> list[tuple]:
    return sorted((r["event"], r["topic"], int(r["timestamp"].timestamp() * 1000), r["run_id"])
                  for r in store.read_rows("metadata_events"))


def test_znode_times_and_removals_seen_between_runs(tmp_path: Path) -> None:
    store = RustTableStore(str(tmp_path / "warehouse"), allow_foreign_tables=True)  # the Spark tables, without Spark
    store.ensure_tables()
    both = ZkTree(taken_at_ms=T0 + DAY).broker(1).topic("a", A, {0: [1]}).topic("b", B, {0: [1]}, ctime=T0 + 5)
    _run(tmp_path, store, "run-1", both)
    _run(tmp_path, store, "run-1", both)  # a rerun of the same run adds nothing
    assert _history(store) == [("topic_created", "a", T0, "run-1"), ("topic_created", "b", T0 + 5, "run-1")]

    only_a = ZkTree(taken_at_ms=T0 + 3 * DAY).broker(1).topic("a", A, {0: [1]})
    _run(tmp_path, store, "run-2", only_a)
    _run(tmp_path, store, "run-3", ZkTree(taken_at_ms=T0 + 4 * DAY).broker(1).topic("a", A, {0: [1]}))
    assert _history(store)[-1] == ("topic_removed", "b", T0 + 3 * DAY, "run-2")
    assert len(_history(store)) == 3  # run-3 sees b still gone: nothing new
