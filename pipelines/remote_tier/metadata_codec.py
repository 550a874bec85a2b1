"""``__remote_log_metadata`` record values: decode and encode (``RemoteLogMetadataSerde``).

Kafka serializes each value with ``BytesApiMessageSerde`` over ``AbstractApiMessageSerde``, the very framing of
``__cluster_metadata`` records::

    unsigned varint frameVersion (1) | unsigned varint apiKey | unsigned varint version | body (flexible)

with apiKey and version at most 32767 and nothing after the body. What differs from ``__cluster_metadata``: the
apiKey space is its own (0-3, :mod:`pipelines.remote_tier.metadata_schema`), the record KEY is null
(``ProducerManager`` sends ``(topic, partition, null, value)``), and the topic is an ordinary topic written by a
producer (batches may be compressed as the producer is configured, and carry a producer id).

Decoded ``fields`` hold every field of the type in snake_case; absent tagged fields are at their defaults, unknown
tags are kept raw in ``unknown_tags`` (and inside nested structs under ``"_unknown_tags"``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.metadata_compiler import compile_decoder
from pipelines.kafka.metadata_encoder import encode_struct
from pipelines.kafka.varint import read_uvarint, write_uvarint
from pipelines.remote_tier.metadata_schema import REMOTE_RECORD_TYPES

__all__ = ["FRAME_VERSION", "RemoteMetadataRecord", "decode_remote_record", "encode_remote_record",
           "make_remote_record"]

FRAME_VERSION = 1
_MAX_SHORT = 0x7FFF
_decoders: dict[tuple[int, int], Callable[[Any, int, int], tuple[dict, tuple, int]]] = {}


@dataclass(frozen=True, slots=True)
class RemoteMetadataRecord:
    """One decoded value. ``fields`` is read-only; ``unknown_tags`` holds ``(tag, raw bytes)`` of the top level."""

    api_key: int
    version: int
    name: str
    fields: Mapping[str, Any]
    unknown_tags: tuple[tuple[int, bytes], ...] = field(default=())


def _short(value: bytes, pos: int, what: str) -> tuple[int, int]:
    n, pos2 = read_uvarint(value, pos)
    if n > _MAX_SHORT:
        raise DecodeError(f"{what} {n} is above 32767", pos)
    return n, pos2


def _decoder(api_key: int, version: int) -> Callable[[Any, int, int], tuple[dict, tuple, int]]:
    found = _decoders.get((api_key, version))
    if found is None:
        spec = REMOTE_RECORD_TYPES.get(api_key)
        if spec is None:
            raise DecodeError(f"unknown remote log metadata record type (apiKey {api_key})", 0)
        lo, hi = spec.versions
        if not lo <= version <= hi:
            raise DecodeError(f"unsupported version {version} of {spec.name} (supported {lo}-{hi})", 0)
        found = _decoders[(api_key, version)] = compile_decoder(spec, version)
    return found


def decode_remote_record(value: bytes) -> RemoteMetadataRecord:
    """Decode one framed value.

    Raises:
        DecodeError: frame version other than 1, unknown apiKey or version, a malformed or truncated body (every
            declared length is checked against the bytes left before anything is read), or bytes after the body.
    """
    value = bytes(value)
    try:
        frame, pos = _short(value, 0, "frame version")
        if frame != FRAME_VERSION:
            raise DecodeError(f"unknown frame version {frame} (only {FRAME_VERSION} is supported)", 0)
        api_key, pos = _short(value, pos, "apiKey")
        version, pos = _short(value, pos, "version")
        fields, unknown, pos = _decoder(api_key, version)(value, pos, len(value))
    except (IndexError, struct.error):
        raise DecodeError("truncated remote log metadata record", len(value)) from None
    name = REMOTE_RECORD_TYPES[api_key].name
    if pos != len(value):
        raise DecodeError(f"found {len(value) - pos} byte(s) of garbage after {name}", pos)
    return RemoteMetadataRecord(api_key, version, name, MappingProxyType(fields), tuple(unknown))


def encode_remote_record(record: RemoteMetadataRecord) -> bytes:
    """The framed value Kafka's serde writes for ``record`` (missing fields take their schema defaults).

    Raises:
        ValueError: unknown type or version, a value out of its type's range, or a non-default value in a field
            the version lacks.
    """
    spec = REMOTE_RECORD_TYPES.get(record.api_key)
    if spec is None:
        raise ValueError(f"unknown remote log metadata apiKey {record.api_key}")
    if not spec.versions[0] <= record.version <= spec.versions[1]:
        raise ValueError(f"{spec.name} has no version {record.version}")
    out = bytearray(write_uvarint(FRAME_VERSION) + write_uvarint(record.api_key) + write_uvarint(record.version))
    encode_struct(out, spec.fields, record.version, record.fields, True, tuple(record.unknown_tags))
    return bytes(out)


def make_remote_record(api_key: int, version: int, **fields: Any) -> RemoteMetadataRecord:
    """A record with every field at its default except ``fields`` (snake_case names)."""
    spec = REMOTE_RECORD_TYPES[api_key]
    merged = {f.name: f.default for f in spec.fields}
    unknown = set(fields) - set(merged)
    if unknown:
        raise ValueError(f"{spec.name} has no field(s) {sorted(unknown)}")
    merged.update(fields)
    return RemoteMetadataRecord(api_key, version, spec.name, MappingProxyType(merged))
