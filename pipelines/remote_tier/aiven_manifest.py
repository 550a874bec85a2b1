"""Aiven's ``.rsm-manifest``: the JSON the plugin uploads LAST for each segment, read as a second witness.

Shape (``SegmentManifestV1`` with Jackson; ``version`` is the type id)::

    {"version": "1", "chunkIndex": {...}, "segmentIndexes": {...}, "compression": bool, "encryption": {...}?,
     "remoteLogSegmentMetadata": {"remoteLogSegmentId": {"topicIdPartition": {"topicId": "<uuid>",
         "topicPartition": {"topic": "...", "partition": N}}, "id": "<uuid>"},
       "startOffset": N, "endOffset": N, "maxTimestampMs": N, "brokerId": N, "eventTimestampMs": N,
       "segmentLeaderEpochs": {"<epoch>": offset, ...}}}

The manifest itself is plain JSON even when the segment is encrypted (``encryption`` then holds the wrapped data key);
``remoteLogSegmentMetadata`` is missing from manifests written before Sep 2023. A manifest proves that an upload
ran to its end and names the segment it belongs to; it does not say which cluster wrote it, and it is not
Kafka's metadata: it never makes a segment live or dead on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pipelines.errors import DecodeError
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.keys import RemoteObjectKey
from pipelines.terminal_text import escape

__all__ = ["MAX_MANIFEST_BYTES", "ManifestWitness", "manifest_mismatch", "parse_manifest"]

MAX_MANIFEST_BYTES = 1 << 20
"""A manifest holds a chunk index (a few KiB for a 1 GiB segment); anything larger is refused unread."""
_MAX_DEPTH = 16


@dataclass(frozen=True, slots=True)
class ManifestWitness:
    """What one manifest states. The segment fields are ``None`` for a manifest without ``remoteLogSegmentMetadata``."""

    compression: bool
    encrypted: bool
    topic: str | None = None
    topic_id: Uuid | None = None
    partition: int | None = None
    segment_id: Uuid | None = None
    start_offset: int | None = None
    end_offset: int | None = None
    broker_id: int | None = None
    event_timestamp_ms: int | None = None
    leader_epochs: tuple[tuple[int, int], ...] = ()


def _depth(text: bytes) -> int:
    depth = best = 0
    in_string = escaped = False
    for b in text:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x7B, 0x5B):
            depth += 1
            best = max(best, depth)
        elif b in (0x7D, 0x5D):
            depth -= 1
    return best


def _get(obj: object, key: str, kind: type | tuple[type, ...], where: str) -> object:
    if not isinstance(obj, dict) or key not in obj:
        raise DecodeError(f"manifest: {where}.{key} is missing")
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise DecodeError(f"manifest: {where}.{key} is not of type {getattr(kind, '__name__', kind)}")
    return value


def _uuid(text: object, where: str) -> Uuid:
    if not isinstance(text, str):
        raise DecodeError(f"manifest: {where} is not a Uuid string")
    uid = Uuid.from_string(text)
    if str(uid) != text:
        raise DecodeError(f"manifest: {where} {text!r} is not a canonical Uuid")
    return uid


def parse_manifest(data: bytes) -> ManifestWitness:
    """Parse a manifest object's bytes.

    Raises:
        DecodeError: larger than :data:`MAX_MANIFEST_BYTES`, nested deeper than a manifest is, not JSON, not
            version ``"1"``, or a field of the wrong type.
    """
    if len(data) > MAX_MANIFEST_BYTES:
        raise DecodeError(f"manifest of {len(data)} bytes is larger than {MAX_MANIFEST_BYTES}")
    if _depth(data) > _MAX_DEPTH:
        raise DecodeError(f"manifest nested deeper than {_MAX_DEPTH} levels")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"manifest is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DecodeError("manifest is not a JSON object")
    version = doc.get("version")
    if version != "1":
        raise DecodeError(f"manifest version {version!r} is not supported (only \"1\")")
    compression = _get(doc, "compression", bool, "manifest")
    encrypted = doc.get("encryption") is not None
    meta = doc.get("remoteLogSegmentMetadata")
    if meta is None:
        return ManifestWitness(bool(compression), encrypted)
    seg_id = _get(meta, "remoteLogSegmentId", dict, "remoteLogSegmentMetadata")
    tip = _get(seg_id, "topicIdPartition", dict, "remoteLogSegmentId")
    tp = _get(tip, "topicPartition", dict, "topicIdPartition")
    epochs_raw = _get(meta, "segmentLeaderEpochs", dict, "remoteLogSegmentMetadata")
    epochs = []
    for epoch, offset in epochs_raw.items():  # type: ignore[union-attr]
        if not epoch.lstrip("-").isdigit() or isinstance(offset, bool) or not isinstance(offset, int):
            raise DecodeError("manifest: segmentLeaderEpochs is not a map of epoch to offset")
        epochs.append((int(epoch), offset))
    where = "remoteLogSegmentMetadata"
    return ManifestWitness(
        compression=bool(compression),
        encrypted=encrypted,
        topic=_get(tp, "topic", str, "topicPartition"),  # type: ignore[arg-type]
        topic_id=_uuid(_get(tip, "topicId", str, "topicIdPartition"), "topicId"),
        partition=_get(tp, "partition", int, "topicPartition"),  # type: ignore[arg-type]
        segment_id=_uuid(_get(seg_id, "id", str, "remoteLogSegmentId"), "remoteLogSegmentId.id"),
        start_offset=_get(meta, "startOffset", int, where),  # type: ignore[arg-type]
        end_offset=_get(meta, "endOffset", int, where),  # type: ignore[arg-type]
        broker_id=_get(meta, "brokerId", int, where),  # type: ignore[arg-type]
        event_timestamp_ms=_get(meta, "eventTimestampMs", int, where),  # type: ignore[arg-type]
        leader_epochs=tuple(sorted(epochs)),
    )


def manifest_mismatch(witness: ManifestWitness, key: RemoteObjectKey) -> str | None:
    """Why the manifest does not belong to the segment its key names, or ``None`` when it agrees (or is silent)."""
    if witness.segment_id is None:
        return None
    pairs = (("topic", witness.topic, key.topic), ("topic id", witness.topic_id, key.topic_id),
             ("partition", witness.partition, key.partition), ("segment id", witness.segment_id, key.segment_id),
             ("start offset", witness.start_offset, key.start_offset))
    diffs = [f"{what} {escape(str(mine))} (key says {theirs})" for what, mine, theirs in pairs if mine != theirs]
    return f"manifest names another segment: {', '.join(diffs)}" if diffs else None
