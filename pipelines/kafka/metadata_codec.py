"""KRaft metadata record values and control records: decode, encode, JSON (facts 5.5, 6.1, 6.2).

A metadata record VALUE is a frame (``MetadataRecordSerde`` / ``AbstractApiMessageSerde``)::

    unsigned varint frameVersion (must be 1) | unsigned varint apiKey | unsigned varint version | body

with apiKey and version <= 32767 and no byte after the body. The body layout comes from
:mod:`pipelines.kafka.metadata_schema`, compiled once per (apiKey, version) by
:mod:`pipelines.kafka.metadata_compiler`.

A control record has a 4-byte KEY (int16 key version, int16 type) and a VALUE that is the body of its schema
read at version 0 (no frame); the body starts with its own ``Version`` int16 field.

Decoded ``fields`` hold EVERY field of the type in snake_case (like Kafka's message objects): fields absent
from the record's version, and absent tagged fields, are at their defaults. Uuids are
:class:`~pipelines.kafka.uuid.Uuid`, arrays are tuples, nested structs are read-only mappings.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.fast_init import fast_constructor as _fast_constructor
from pipelines.kafka.metadata_compiler import compile_decoder
from pipelines.kafka.metadata_encoder import encode_struct, struct_to_json
from pipelines.kafka.metadata_schema import (
    CONTROL_RECORD_TYPES,
    CONTROL_TYPE_NAMES,
    METADATA_RECORD_TYPES,
    RecordTypeSpec,
)
from pipelines.kafka.varint import read_uvarint, write_uvarint

__all__ = [
    "RECORD_TYPES",
    "ControlRecord",
    "MetadataRecord",
    "control_to_json_dict",
    "decode_control_record",
    "decode_metadata_record",
    "encode_control_record",
    "encode_metadata_record",
    "record_type",
    "to_json_dict",
]

FRAME_VERSION = 1
_MAX_SHORT = 0x7FFF

RECORD_TYPES: Mapping[int, RecordTypeSpec] = METADATA_RECORD_TYPES
"""apiKey -> :class:`RecordTypeSpec` (read-only)."""

_BY_NAME: dict[str, RecordTypeSpec] = {}
for _spec in METADATA_RECORD_TYPES.values():
    _BY_NAME[_spec.name] = _spec
    _BY_NAME[_spec.json_type] = _spec


def record_type(name_or_api_key: str | int) -> RecordTypeSpec:
    """Look a metadata record type up by apiKey, class name (``"TopicRecord"``) or enum name (``"TOPIC_RECORD"``).

    Raises:
        KeyError: no such record type.
    """
    if isinstance(name_or_api_key, int):
        return METADATA_RECORD_TYPES[name_or_api_key]
    return _BY_NAME[name_or_api_key]


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded metadata record. ``fields`` is read-only; ``unknown_tags`` holds ``(tag, raw bytes)``."""

    api_key: int
    version: int
    name: str
    fields: Mapping[str, Any]
    unknown_tags: tuple = ()


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """One decoded control record. ``version`` is the KEY's version; the body's own is ``fields["version"]``."""

    type_id: int
    type_name: str
    version: int
    fields: Mapping[str, Any]
    unknown_tags: tuple = ()


_new_metadata_record = _fast_constructor(MetadataRecord)


# -- metadata records -------------------------------------------------------------------------------

_decoders: dict[int, tuple[Any, str]] = {}


def _decoder(api_key: int, version: int) -> tuple[Any, str]:
    key = (api_key << 16) | version
    found = _decoders.get(key)
    if found is None:
        spec = METADATA_RECORD_TYPES.get(api_key)
        if spec is None:
            raise DecodeError(f"unknown metadata record type (apiKey {api_key})", 0)
        lo, hi = spec.versions
        if not lo <= version <= hi:
            raise DecodeError(f"unsupported version {version} of {spec.name} (supported {lo}-{hi})", 0)
        found = _decoders[key] = (compile_decoder(spec, version), spec.name)
    return found


def _frame_short(value: bytes, pos: int, what: str) -> tuple[int, int]:
    n, pos2 = read_uvarint(value, pos)
    if n > _MAX_SHORT:
        raise DecodeError(f"value for {what} was too large ({n})", pos)
    return n, pos2


def decode_metadata_record(value: bytes) -> MetadataRecord:
    """Decode one framed metadata record value.

    Raises:
        DecodeError: bad frame version, unknown apiKey/version, malformed body, or garbage after the body;
            ``offset`` is the byte offset inside ``value``.
    """
    if not isinstance(value, bytes):
        value = bytes(value)
    try:
        if len(value) >= 3 and value[0] == 1 and value[1] < 0x80 and value[2] < 0x80:
            api_key, version, pos = value[1], value[2], 3
        else:
            frame, pos = _frame_short(value, 0, "frame version")
            if frame == 0:
                raise DecodeError("frame version 0 (the 2.8 KRaft preview) is not supported", 0)
            if frame != FRAME_VERSION:
                raise DecodeError(f"unknown frame version {frame} (only {FRAME_VERSION} is supported)", 0)
            api_key, pos = _frame_short(value, pos, "type")
            version, pos = _frame_short(value, pos, "version")
        decoder, name = _decoder(api_key, version)
        fields, unknown, pos = decoder(value, pos, len(value))
    except (IndexError, struct.error):
        raise DecodeError("truncated metadata record", len(value)) from None
    if pos != len(value):
        raise DecodeError(f"found {len(value) - pos} byte(s) of garbage after {name}", pos)
    return _new_metadata_record(api_key, version, name, MappingProxyType(fields), unknown)


def encode_metadata_record(record: MetadataRecord) -> bytes:
    """Encode a record value with its frame; missing fields take schema defaults.

    Raises:
        ValueError: unknown type/version, a value of the wrong type or range, or a non-default value in a
            field that the version lacks.
    """
    spec = METADATA_RECORD_TYPES.get(record.api_key)
    if spec is None:
        raise ValueError(f"unknown metadata record apiKey {record.api_key}")
    if not spec.versions[0] <= record.version <= spec.versions[1]:
        raise ValueError(f"{spec.name} has no version {record.version}")
    out = bytearray(write_uvarint(FRAME_VERSION) + write_uvarint(record.api_key) + write_uvarint(record.version))
    encode_struct(out, spec.fields, record.version, record.fields, True, tuple(record.unknown_tags))
    return bytes(out)


def make_record(name_or_api_key: str | int, version: int | None = None, **fields: Any) -> MetadataRecord:
    """Convenience constructor: ``make_record("TopicRecord", name="t", topic_id=uid)`` (latest version by default)."""
    spec = record_type(name_or_api_key)
    v = spec.versions[1] if version is None else version
    merged = {f.name: f.default for f in spec.fields}
    unknown = set(fields) - set(merged)
    if unknown:
        raise ValueError(f"{spec.name} has no field(s) {sorted(unknown)}")
    merged.update(fields)
    return MetadataRecord(spec.api_key, v, spec.name, MappingProxyType(merged))


def to_json_dict(record: MetadataRecord) -> dict[str, Any]:
    """kafka-dump-log ``--cluster-metadata-decoder`` payload: ``{"type", "version", "data"}``."""
    spec = METADATA_RECORD_TYPES[record.api_key]
    return {
        "type": spec.json_type,
        "version": record.version,
        "data": struct_to_json(spec.fields, record.version, record.fields),
    }


# -- control records ----------------------------------------------------------------------------------

_KEY = struct.Struct(">hh")
_control_decoders: dict[int, Any] = {}


def decode_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record from its key and value (value body read at version 0).

    Unknown control types (Kafka's ``UNKNOWN``) decode to ``type_name="UNKNOWN"`` with empty fields.

    Raises:
        DecodeError: key shorter than 4 bytes or with a negative version; malformed value or bytes after it.
    """
    if key is None or len(key) < 4:
        raise DecodeError(f"control record key must be 4 bytes, got {0 if key is None else len(key)}", 0)
    key_version, type_id = _KEY.unpack_from(key, 0)
    if key_version < 0:
        raise DecodeError(f"invalid control record key version {key_version}", 0)
    spec = CONTROL_RECORD_TYPES.get(type_id)
    if spec is None:
        return ControlRecord(type_id, "UNKNOWN", key_version, MappingProxyType({}))
    name = CONTROL_TYPE_NAMES[type_id]
    if value is None:
        raise DecodeError(f"{name} control record without a value", 0)
    value = bytes(value)
    decoder = _control_decoders.get(type_id)
    if decoder is None:
        decoder = _control_decoders[type_id] = compile_decoder(spec, 0)
    try:
        fields, unknown, pos = decoder(value, 0, len(value))
    except (IndexError, struct.error):
        raise DecodeError(f"truncated {name} control record value", len(value)) from None
    if pos != len(value):
        raise DecodeError(f"found {len(value) - pos} byte(s) after the {name} control record value", pos)
    return ControlRecord(type_id, name, key_version, MappingProxyType(fields), unknown)


def encode_control_record(record: ControlRecord) -> tuple[bytes, bytes]:
    """Encode ``(key, value)`` of a control record (value body at version 0)."""
    spec = CONTROL_RECORD_TYPES.get(record.type_id)
    if spec is None:
        raise ValueError(f"cannot encode control record type {record.type_id}")
    out = bytearray()
    encode_struct(out, spec.fields, 0, record.fields, spec.flexible, tuple(record.unknown_tags))
    return _KEY.pack(record.version, record.type_id), bytes(out)


def make_control_record(type_name: str, **fields: Any) -> ControlRecord:
    """Convenience constructor: ``make_control_record("SNAPSHOT_HEADER", last_contained_log_timestamp=t)``."""
    type_id = next((i for i, n in CONTROL_TYPE_NAMES.items() if n == type_name), None)
    if type_id is None:
        raise ValueError(f"unknown control record type {type_name!r}")
    spec = CONTROL_RECORD_TYPES[type_id]
    merged = {f.name: f.default for f in spec.fields}
    merged.update(fields)
    return ControlRecord(type_id, type_name, 0, MappingProxyType(merged))


def control_to_json_dict(record: ControlRecord) -> dict[str, Any]:
    """The JSON kafka-dump-log prints for a KRaft control record body (camelCase, version 0)."""
    spec = CONTROL_RECORD_TYPES.get(record.type_id)
    if spec is None:
        return {}
    return struct_to_json(spec.fields, 0, record.fields)


_SNAPSHOT_NAMES = frozenset({"SnapshotName", "format_snapshot_name", "parse_snapshot_file", "parse_snapshot_name"})


def __getattr__(name: str) -> Any:
    """Lazy re-exports of snapshot file names (the log iterator lives in ``metadata_log``, a layer above this one)."""
    if name in _SNAPSHOT_NAMES:
        from pipelines.kafka import snapshot_names

        return getattr(snapshot_names, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
