"""One Aiven-layout tier whose second witnesses matter: manifests that lie or cannot be read, and segments inside and
outside their partition leader's epoch lineage. Shared by the pure test of the Spark task's function and the step's
test through Spark."""

from __future__ import annotations

import os
from pathlib import Path

from aiven_objects import AivenSegment
from remote_builders import DAY, NOW, OLD, uid

from pipelines.remote_tier.events import SegmentEvent, SegmentState
from pipelines.remote_tier.listing import ListedObject

LIVE, GONE = uid(1), uid(2)
PREFIX = "tiered/"
SEG = {name: uid(40 + i) for i, name in enumerate(("lying", "honest", "garbled", "inside", "outside"))}
START = {"lying": 0, "honest": 100, "garbled": 200, "inside": 0, "outside": 100}
TOPIC = {"lying": ("gone", GONE), "honest": ("gone", GONE), "garbled": ("gone", GONE),
         "inside": ("orders", LIVE), "outside": ("orders", LIVE)}
EPOCHS = {"inside": ((0, 0),), "outside": ((1, 100),)}
"""The leader's lineage below rewrote epoch 1: ``outside`` was copied by a leader that lost its term."""
LEADER_LINEAGE = ((0, 0), (2, 100))
FOLLOWER_LINEAGE = ((0, 0), (1, 100))  # a replica of the old term: by it, ``outside`` would look inside
LEADER_EPOCH = 2
DELETED_AT = NOW - 3 * DAY


def _segment(name: str, **over) -> AivenSegment:
    topic, tid = TOPIC[name]
    fields = {"topic": topic, "topic_id": tid, "partition": 0, "segment_id": SEG[name], "start_offset": START[name],
              "end_offset": START[name] + 99, "broker_id": 1, "event_timestamp_ms": OLD, "log": b"x" * 900}
    return AivenSegment(**{**fields, **over})


def events() -> list[SegmentEvent]:
    """Every segment copied to its end (``COPY_SEGMENT_STARTED`` then ``FINISHED``), long ago."""
    out = []
    for name, sid in SEG.items():
        topic, tid = TOPIC[name]
        out.append(SegmentEvent(topic, tid, 0, sid, SegmentState.COPY_SEGMENT_STARTED, 1, OLD, True,
                                start_offset=START[name], end_offset=START[name] + 99, size=900,
                                max_timestamp_ms=OLD, leader_epochs=EPOCHS.get(name, ((0, START[name]),))))
        out.append(SegmentEvent(topic, tid, 0, sid, SegmentState.COPY_SEGMENT_FINISHED, 1, OLD + 1, False))
    return out


def write_bucket(bucket: Path) -> list[ListedObject]:
    """The plugin's objects of every segment, but: ``lying``'s manifest names a live topic's segment, ``garbled``'s
    is not JSON (an encrypted or damaged one). Returns the listing, keys relative to ``bucket``."""
    objects: dict[str, bytes] = {}
    for name in SEG:
        objects.update(_segment(name).objects(PREFIX))
    lying = _segment("lying").key(PREFIX, "rsm-manifest")
    objects[lying] = _segment("lying", topic="orders", topic_id=LIVE, segment_id=uid(77)).manifest()
    objects[_segment("garbled").key(PREFIX, "rsm-manifest")] = b"\x8a\x01 AES-GCM bytes, not JSON"
    listed = []
    for key, data in sorted(objects.items()):
        path = bucket / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (OLD / 1000, OLD / 1000))
        listed.append(ListedObject(key, len(data), OLD))
    return listed


def epochs_json(pairs: tuple[tuple[int, int], ...]) -> str:
    return "[" + ",".join(f"[{e},{o}]" for e, o in pairs) + "]"
