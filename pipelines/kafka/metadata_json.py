"""Metadata records as kafka-dump-log JSON text, one compiled writer per (apiKey, version).

``record_json(record)`` returns exactly ``json.dumps(to_json_dict(record))`` (default separators, ASCII escapes)
without building the intermediate dicts: for each record schema and version a small function is generated from
the declarative schema table that concatenates the field texts. ``to_json_dict`` stays the reference; a
differential test holds every record type and version of the schema to it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

from pipelines import native
from pipelines.kafka.metadata_codec import MetadataRecord
from pipelines.kafka.metadata_schema import METADATA_RECORD_TYPES, FieldSpec

__all__ = ["compiled_writers", "record_json"]

Writer = Callable[[Mapping[str, Any]], str]

_INTS = frozenset({"int8", "int16", "int32", "int64", "uint16"})


def _b64(value: Any) -> str:
    return encode_basestring_ascii(base64.b64encode(bytes(value)).decode("ascii"))


def _bool(value: Any) -> str:
    return "true" if value else "false"


def _uuid(value: Any) -> str:
    return '"' + str(value) + '"'


def _scalar_expr(type_: str, var: str) -> str | None:
    """Python expression giving the JSON text of a non-null scalar ``var``, or None for a type kept general."""
    if type_ in _INTS:
        return f"str({var})"
    return {"string": f"_esc({var})", "uuid": f"_uuid({var})", "bool": f"_bool({var})", "bytes": f"_b64({var})",
            "float64": f"_dumps({var})"}.get(type_)


def _value_expr(f: FieldSpec, var: str, ns: dict[str, Any], version: int) -> str:
    """Expression for the JSON text of field ``f`` held in ``var`` (None prints ``null``)."""
    type_ = f.type
    if type_ == "struct":
        ns[f"_w_{f.name}"] = _compile(f.fields, version)
        text = f"_w_{f.name}({var})"
    elif type_.startswith("[]"):
        elem = type_[2:]
        if elem == "struct":
            ns[f"_w_{f.name}"] = _compile(f.fields, version)
            text = f'"[" + ", ".join(map(_w_{f.name}, {var})) + "]"'
        else:
            each = _scalar_expr(elem, "x")
            assert each is not None, elem
            text = f'"[" + ", ".join([{each} for x in {var}]) + "]"'
    else:
        scalar = _scalar_expr(type_, var)
        assert scalar is not None, type_
        text = scalar
    return f'("null" if {var} is None else {text})'


def _compile(fields: tuple[FieldSpec, ...], version: int) -> Writer:
    ns: dict[str, Any] = {"_esc": encode_basestring_ascii, "_uuid": _uuid, "_bool": _bool, "_b64": _b64,
                          "_dumps": json.dumps}
    lines = ["def write(v):", "    out = []"]
    for i, f in enumerate(fields):
        if not f.in_version(version):
            continue
        ns[f"_d{i}"] = f.default
        lines.append(f"    x{i} = v.get({f.name!r}, _d{i})")
        key = json.dumps(f.json_name) + ": "
        append = f"out.append({key!r} + {_value_expr(f, f'x{i}', ns, version)})"
        if f.tag is not None:
            lines.append(f"    if x{i} != _d{i}:")
            lines.append(f"        {append}")
        else:
            lines.append(f"    {append}")
    lines.append('    return "{" + ", ".join(out) + "}"')
    exec("\n".join(lines), ns)  # source built from the schema table's own field names only
    return ns["write"]


_writers: dict[tuple[int, int], Callable[[MetadataRecord], str]] = {}


def _record_writer(api_key: int, version: int) -> Callable[[MetadataRecord], str]:
    spec = METADATA_RECORD_TYPES[api_key]
    data = _compile(spec.fields, version)
    head = f'{{"type": "{spec.json_type}", "version": {version}, "data": '

    def write(record: MetadataRecord) -> str:
        return head + data(record.fields) + "}"

    return write


def record_json(record: MetadataRecord) -> str:
    """``json.dumps(to_json_dict(record))``, built directly."""
    key = (record.api_key, record.version)
    writer = _writers.get(key)
    if writer is None:
        writer = _writers[key] = _record_writer(*key)
    return writer(record)


# -- the compiled twin (``_native_json.c``) ---------------------------------------------------------------------

_KINDS = {"int8": 0, "int16": 1, "int32": 2, "int64": 3, "uint16": 4, "bool": 5, "float64": 6, "uuid": 7,
          "string": 8, "bytes": 9, "struct": 10}  # fmt: skip
"""Value kinds of ``_native_json.c`` (its ``K_*``, those of ``metadata_native.KINDS``); an array adds 16."""


def writer_spec(fields: tuple[FieldSpec, ...], version: int, head: str = "") -> tuple:
    """``(head, ops)`` of one struct at ``version`` for ``_native_json.compile_writer``: the fields ``_compile``
    writes, in its order, each ``(key text, name, kind, tagged, default, element struct's spec | None)``."""
    ops = []
    for f in fields:
        if not f.in_version(version):
            continue
        array = f.type.startswith("[]")
        elem = f.type[2:] if array else f.type
        sub = writer_spec(f.fields, version) if elem == "struct" else None
        ops.append(((json.dumps(f.json_name) + ": ").encode("ascii"), f.name, _KINDS[elem] + (16 if array else 0),
                    f.tag is not None, f.default, sub))
    return head.encode("ascii"), tuple(ops)


_compiled: list[tuple[Any, tuple]] = []


def compiled_writers() -> tuple[Any, tuple] | None:
    """``(_native_json module, writers[api_key][version])``, or None for the pure-Python writers."""
    module = native.load("pipelines.kafka._native_json")
    if module is None:
        return None
    if not _compiled:
        table: list[Any] = [None] * (max(METADATA_RECORD_TYPES) + 1)
        for api_key, spec in METADATA_RECORD_TYPES.items():
            lo, hi = spec.versions
            table[api_key] = tuple(
                module.compile_writer(writer_spec(
                    spec.fields, v, f'{{"type": "{spec.json_type}", "version": {v}, "data": ')) if v >= lo else None
                for v in range(hi + 1))
        _compiled.append((module, tuple(table)))
    return _compiled[0]
