"""Schema-driven encoder and JSON view of metadata/control record bodies (cool path: tests, generators).

Encoding follows Kafka's generated ``write``: non-tagged fields in declaration order for the fields that
exist in the version; then (flexible schemas) a tagged-field section holding, in ascending tag order, every
tagged field whose value differs from its default plus any preserved unknown tags. A field missing from the
input mapping takes its default. A field absent from the version must be at its default, otherwise
``ValueError`` (Kafka's ``UnsupportedVersionException``).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping
from typing import Any

from pipelines.kafka.metadata_compiler import UNKNOWN_TAGS_KEY
from pipelines.kafka.metadata_schema import FieldSpec
from pipelines.kafka.uuid import Uuid
from pipelines.kafka.varint import write_uvarint

__all__ = ["encode_struct", "struct_to_json"]

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "float64": struct.Struct(">d"),
}


def _as_uuid(value: Any) -> Uuid:
    if isinstance(value, Uuid):
        return value
    if isinstance(value, str):
        return Uuid.from_string(value)
    raise ValueError(f"expected a Uuid, got {value!r}")


def _encode_value(out: bytearray, f: FieldSpec, t: str, value: Any, version: int) -> None:
    if t in _FIXED:
        try:
            out += _FIXED[t].pack(value)
        except struct.error as exc:
            raise ValueError(f"{f.name}: {exc}") from None
    elif t == "bool":
        out.append(1 if value else 0)
    elif t == "uuid":
        out += _as_uuid(value).to_bytes()
    elif value is None:
        if not f.nullable_in(version):
            raise ValueError(f"{f.name} is not nullable in version {version}")
        out.append(0)
    elif t == "string":
        raw = value.encode("utf-8", "surrogateescape")
        out += write_uvarint(len(raw) + 1) + raw
    elif t == "bytes":
        out += write_uvarint(len(value) + 1) + bytes(value)
    elif t == "struct":
        encode_struct(out, f.fields, version, value, True)
    elif t.startswith("[]"):
        elem = t[2:]
        out += write_uvarint(len(value) + 1)
        for item in value:
            if elem == "struct":
                encode_struct(out, f.fields, version, item, True)
            else:
                _encode_value(out, f, elem, item, version)
    else:  # pragma: no cover
        raise ValueError(f"unknown type {t}")


def encode_struct(
    out: bytearray,
    fields: tuple[FieldSpec, ...],
    version: int,
    values: Mapping[str, Any],
    flexible: bool,
    unknown_tags: tuple[tuple[int, bytes], ...] | None = None,
) -> None:
    """Append the encoding of one struct (or message body) to ``out``."""
    known = {f.name for f in fields}
    extra = set(values) - known - {UNKNOWN_TAGS_KEY}
    if extra:
        raise ValueError(f"unknown field(s) {sorted(extra)}")
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        value = values.get(f.name, f.default)
        if not f.in_version(version):
            if value != f.default:
                raise ValueError(f"{f.name} does not exist in version {version} and is not at its default")
            continue
        if f.tag is not None:
            if value != f.default:
                buf = bytearray()
                _encode_value(buf, f, f.type, value, version)
                tagged.append((f.tag, bytes(buf)))
            continue
        _encode_value(out, f, f.type, value, version)
    if not flexible:
        return
    if unknown_tags is None:
        unknown_tags = values.get(UNKNOWN_TAGS_KEY, ())
    tagged.extend((int(tag), bytes(raw)) for tag, raw in unknown_tags)
    tagged.sort(key=lambda item: item[0])
    out += write_uvarint(len(tagged))
    for tag, raw in tagged:
        out += write_uvarint(tag) + write_uvarint(len(raw)) + raw


def _json_value(f: FieldSpec, t: str, value: Any, version: int) -> Any:
    if value is None:
        return None
    if t == "uuid":
        return str(value)
    if t == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == "struct":
        return struct_to_json(f.fields, version, value)
    if t.startswith("[]"):
        elem = t[2:]
        if elem == "struct":
            return [struct_to_json(f.fields, version, item) for item in value]
        return [_json_value(f, elem, item, version) for item in value]
    return value


def struct_to_json(fields: tuple[FieldSpec, ...], version: int, values: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's generated JSON: camelCase keys, fields of the version only, tagged fields at default omitted."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.in_version(version):
            continue
        value = values.get(f.name, f.default)
        if f.tag is not None and value == f.default:
            continue
        out[f.json_name] = _json_value(f, f.type, value, version)
    return out
