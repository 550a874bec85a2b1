"""The ZooKeeper-mode log dirs of ../shared/real-logdirs classified against ZooKeeper dumps built from their own
files: a faithful dump (each topic with the id its ``partition.metadata`` carries, or none when the broker wrote
none, every partition dir assigned to its broker) leaves nothing plannable; dumps that lie in known ways move
exactly the dirs they should.

Each root is taken as one broker of its own cluster (``broker.id`` from its ``meta.properties``). Skipped when the
corpus is absent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pipelines.config.models import BrokerConfig, DetectConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.detect import classes as C
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.zookeeper_source import image_from_znodes
from pipelines.plan.recheck import DirFacts, classify, live_copies
from tests.metadata.zk_tree import T0, ZkTree

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"
MANIFEST = CORPUS / "MANIFEST.json"
NOW = datetime.now(timezone.utc)


def _zk_roots() -> Iterator[Any]:
    if not MANIFEST.is_file():
        yield pytest.param(None, marks=pytest.mark.skip(reason=f"real log dirs not available at {CORPUS}"))
        return
    for repo in json.loads(MANIFEST.read_text())["repos"]:
        for snap in repo["snapshots"]:
            for root in snap["roots"]:
                if root.get("mode") == "ZK" and root.get("broker_id") is not None:
                    yield pytest.param((CORPUS / snap["corpus_path"] / root["path"], int(root["broker_id"])),
                                       id=f"{snap['corpus_path']}/{root['path']}")


def _facts(path: Path, broker_id: int) -> list[DirFacts]:
    result = crawl_local([BrokerConfig(broker_id=broker_id, log_dirs=(str(path),))], run_id="r", cluster="c")
    ids = {r["log_dir"]: r["directory_id"] for r in result.log_dirs}
    return [DirFacts.from_partition_dir(r, ids[r["log_dir"]]) for r in result.partition_dirs]


def _dump(facts: list[DirFacts], broker_id: int, *, skip: str | None = None, other_id: str | None = None,
          queued: str | None = None) -> ZkTree:
    """What ZooKeeper held for this broker, from its own files; ``skip``/``other_id``/``queued`` make one topic
    deleted, recreated under another id, or queued for deletion."""
    tree = ZkTree().broker(broker_id)
    topics: dict[str, tuple[set[int], set[str]]] = {}
    for f in facts:
        if f.kind == "live" and f.topic and f.partition is not None:
            parts, ids = topics.setdefault(f.topic, (set(), set()))
            parts.add(f.partition)
            if f.has_topic_id:
                ids.add(f.topic_id)  # type: ignore[arg-type]
    for name, (parts, ids) in sorted(topics.items()):
        if name == skip:
            continue
        assert len(ids) <= 1, (name, ids)  # one broker never holds two incarnations live
        topic_id = Uuid(0x77, 0x77) if name == other_id else (Uuid.from_string(next(iter(ids))) if ids else None)
        tree.topic(name, topic_id, {p: [broker_id] for p in range(max(parts) + 1)})
        if name == queued:
            tree.delete_queued(name, T0)
    return tree


def _classes(facts: list[DirFacts], tree: ZkTree) -> dict[str, str]:
    image, _, _ = image_from_znodes(tree.snapshot())
    assert image.complete, image.incomplete_reasons
    copies = live_copies(facts)
    return {f.dir_name: classify(f, image, copies=copies, config=DetectConfig(), now=NOW)[0] for f in facts}


@pytest.mark.parametrize("case", list(_zk_roots()))
def test_real_zookeeper_mode_log_dir_against_its_own_dump(case: tuple[Path, int]) -> None:
    path, broker_id = case
    facts = _facts(path, broker_id)
    live = [f for f in facts if f.kind == "live" and f.topic]
    if not live:
        pytest.skip("no live partition dir in this snapshot")
    faithful = _classes(facts, _dump(facts, broker_id))
    assert not any(C.is_plannable(c, False) for c in faithful.values()), faithful
    with_id = sorted({f.topic for f in live if f.has_topic_id})
    without_id = sorted({f.topic for f in live if not f.has_topic_id} - set(with_id))
    for f in live:
        if f.has_topic_id:
            want = C.OK
        elif f.topic in without_id:
            want = C.UNKNOWN  # the topic has no id in ZooKeeper either (written before Kafka 2.8)
        else:
            want = (C.MISSING_PARTITION_METADATA if f.partition_metadata_status == "missing"
                    else C.CORRUPT_PARTITION_METADATA)
        assert faithful[f.dir_name] == want, (f.dir_name, faithful[f.dir_name])

    if with_id:
        t = with_id[0]
        mine = {f.dir_name for f in live if f.topic == t}
        for lie, want in (({"skip": t}, C.DELETED_TOPIC), ({"other_id": t}, C.RECREATED_TOPIC),
                          ({"queued": t}, C.STUCK_TOPIC_DELETION)):
            got = _classes(facts, _dump(facts, broker_id, **lie))
            assert {got[d] for d in mine} == {want}, (lie, got)
            assert {d: c for d, c in got.items() if d not in mine} == {
                d: c for d, c in faithful.items() if d not in mine}
    if without_id:
        # a topic whose dirs carry no id is judged by nothing but its name: gone from ZooKeeper it is still not
        # garbage here (no id to prove which incarnation the dirs belong to)
        got = _classes(facts, _dump(facts, broker_id, skip=without_id[0]))
        assert not any(C.is_plannable(got[f.dir_name], False) for f in live if f.topic == without_id[0])
