"""The whole Spark-free layer over files: three brokers' replicas of a 2-partition metadata topic, an Aiven-layout
object tree on disk with manifests, one controller view; every class comes out once, and only garbage is plannable."""

from __future__ import annotations

import json
import os
from pathlib import Path

from remote_builders import DAY, NOW, OLD, copy_started, uid, update

from pipelines.remote_tier.aiven_manifest import parse_manifest
from pipelines.remote_tier.classify import ControllerTopics, classify_remote
from pipelines.remote_tier.events import SegmentState
from pipelines.remote_tier.listing import ListedObject, parse_listing
from pipelines.remote_tier.metadata_topic import MetadataCoverage, read_replica
from pipelines.remote_tier.metadata_writer import write_metadata_replica
from pipelines.remote_tier.partitioner import metadata_partition

S = SegmentState
LIVE, GONE = uid(1), uid(2)
PARTS = 2


def write_objects(root: Path, topic: str, tid, partition: int, sid, start: int, manifest: bool = True) -> None:
    d = root / "tiered" / f"{topic}-{tid}" / str(partition)
    d.mkdir(parents=True, exist_ok=True)
    name = f"{start:020d}-{sid}"
    (d / f"{name}.log").write_bytes(b"x" * 1000)
    (d / f"{name}.indexes").write_bytes(b"i" * 10)
    if manifest:
        meta = {"remoteLogSegmentId": {"topicIdPartition": {"topicId": str(tid), "topicPartition": {
                    "topic": topic, "partition": partition}}, "id": str(sid)},
                "startOffset": start, "endOffset": start + 99, "maxTimestampMs": 1, "brokerId": 1,
                "eventTimestampMs": 1, "segmentLeaderEpochs": {"0": start}}
        doc = {"version": "1", "chunkIndex": {}, "segmentIndexes": {}, "compression": False,
               "remoteLogSegmentMetadata": meta}
        (d / f"{name}.rsm-manifest").write_text(json.dumps(doc))
    for p in d.iterdir():
        os.utime(p, (OLD / 1000, OLD / 1000))


def listing(root: Path) -> list[ListedObject]:
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            st = p.stat()
            out.append(ListedObject(p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns // 1_000_000))
    return sorted(out, key=lambda o: o.key)


def test_end_to_end(tmp_path: Path) -> None:
    seg = {name: uid(100 + i) for i, name in enumerate(
        ["ok", "copy", "delete", "leaked", "gone_ok", "untracked", "garbage_key"])}
    by_mp: dict[int, list] = {0: [], 1: []}

    def add(events: list) -> None:
        for e in events:
            by_mp[metadata_partition(e.topic_id, e.partition, PARTS)].append(e)

    def life(topic, tid, sid, *states, start=0):
        return [copy_started(topic, tid, 0, sid, OLD, start=start)] + [
            update(topic, tid, 0, sid, s, OLD + i + 1) for i, s in enumerate(states)]

    add(life("live-topic", LIVE, seg["ok"], S.COPY_SEGMENT_FINISHED))
    add(life("live-topic", LIVE, seg["copy"], start=100))
    add(life("live-topic", LIVE, seg["delete"], S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, start=200))
    add(life("live-topic", LIVE, seg["leaked"], S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED,
             S.DELETE_SEGMENT_FINISHED, start=300))
    add(life("gone-topic", GONE, seg["gone_ok"], S.COPY_SEGMENT_FINISHED))
    assert by_mp[0] and by_mp[1]  # both metadata partitions hold events (else neither could be read whole)

    brokers = tmp_path / "brokers"
    replicas = []
    for broker in (1, 2, 3):
        for mp, events in by_mp.items():
            kept = events if broker != 2 else events[: len(events) // 2]  # broker 2 is behind
            replicas.append(write_metadata_replica(brokers / f"b{broker}", mp, kept))
    for r in replicas:
        for p in r.iterdir():
            os.utime(p, (NOW / 1000, NOW / 1000))
    coverage = MetadataCoverage.from_replicas([read_replica(r) for r in replicas], PARTS, True)
    assert all(read.whole and "b2" not in read.source for read in coverage.partitions.values())

    from pipelines.remote_tier.replay import replay

    image = replay(coverage.events())
    bucket = tmp_path / "bucket"
    write_objects(bucket, "live-topic", LIVE, 0, seg["ok"], 0)
    write_objects(bucket, "live-topic", LIVE, 0, seg["copy"], 100, manifest=False)
    write_objects(bucket, "live-topic", LIVE, 0, seg["delete"], 200)
    write_objects(bucket, "live-topic", LIVE, 0, seg["leaked"], 300)
    write_objects(bucket, "gone-topic", GONE, 0, seg["gone_ok"], 0)
    write_objects(bucket, "live-topic", LIVE, 0, seg["untracked"], 400)
    (bucket / "tiered" / "README.txt").write_text("not a segment")
    rows = list(parse_listing(listing(bucket), "aiven", "tiered/"))
    assert [r.key for r in rows if r.error] == ["tiered/README.txt"]
    manifests = {r.segment: parse_manifest((bucket / r.key).read_bytes())
                 for r in rows if r.object_kind == "rsm-manifest"}

    findings = classify_remote(image, rows, ControllerTopics(frozenset({LIVE}), True, {GONE: NOW - 3 * DAY}),
                               coverage, now_ms=NOW, grace_ms=DAY, manifests=manifests)
    got = {f.segment_id: (f.class_name, f.plannable) for f in findings}
    assert got == {
        seg["ok"]: ("remote_ok", False),
        seg["copy"]: ("remote_copy_incomplete", True),
        seg["delete"]: ("remote_delete_incomplete", True),
        seg["leaked"]: ("remote_delete_leaked", True),
        seg["gone_ok"]: ("remote_deleted_topic", True),
        seg["untracked"]: ("remote_untracked", False),
    }
    assert all(f.bytes == sum(r.size for r in rows if r.segment == (f.topic_id, f.partition, f.segment_id))
               for f in findings)


def test_rows_carry_the_issue_column_names() -> None:
    from remote_builders import objects_of, run_classify

    objs = objects_of("orders", LIVE, 0, uid(5))
    row = next(parse_listing(objs, "aiven")).as_row()
    assert list(row) == ["key", "size", "last_modified", "etag", "topic", "topic_id", "partition", "segment_id",
                         "start_offset", "object_kind", "error"]
    assert row["topic_id"] == str(LIVE) and row["segment_id"] == str(uid(5))
    finding = run_classify([], objs, live=frozenset({LIVE}))[0].as_row("c1", "r1")
    assert list(finding) == ["cluster", "run_id", "topic", "topic_id", "partition", "segment_id", "start_offset",
                             "class", "reason", "bytes", "objects", "plannable", "garbage_since"]
