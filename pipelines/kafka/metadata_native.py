"""The compiled metadata-log fast path (``_native_metadata.c``) and the data it runs on, built from the schema table.

The C code is a small interpreter: it knows record-batch framing and Kafka's value encodings, but what a record
type looks like at a version comes from here, as a data-only "program" per (apiKey, version) built from
:mod:`pipelines.kafka.metadata_schema`, the same table :mod:`pipelines.kafka.metadata_compiler` generates the
pure-Python decoders from. The C code never reports an error: anything unusual (a bad batch, an error, a long
varint, a tiny value not yet cached) hands the whole batch back to the pure-Python loop, which stays the reference.

:func:`scan_context` returns None when the compiled module is not built or ``KLGC_PURE_PYTHON=1`` is set.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

from crc32c import crc32c

from pipelines import native
from pipelines.kafka.metadata_compiler import UNKNOWN_TAGS_KEY, _uuid_cache, uuid_from_bytes
from pipelines.kafka.metadata_schema import METADATA_RECORD_TYPES, FieldSpec

__all__ = ["KINDS", "scan_context", "struct_program"]

KINDS: dict[str, int] = {
    "int8": 0, "int16": 1, "int32": 2, "int64": 3, "uint16": 4, "bool": 5, "float64": 6, "uuid": 7,
    "string": 8, "bytes": 9, "struct": 10,
}  # fmt: skip
"""Value kinds of the C interpreter (``K_*`` in ``_native_metadata.c``); an array is ``ARRAY + element kind``."""
ARRAY = 16

MODULE = "pipelines.kafka._native_metadata"


def _kind(type_: str) -> int:
    return ARRAY + KINDS[type_[2:]] if type_.startswith("[]") else KINDS[type_]


def struct_program(fields: tuple[FieldSpec, ...], version: int, flexible: bool = True) -> tuple:
    """``(keys, defaults, plain ops, tagged ops, flexible)`` of a struct at ``version``, as the C code reads it.

    ``keys``/``defaults`` cover every field in schema order (the decoded dict's order, absent fields at their
    defaults); ``plain`` are the untagged fields of the version in wire order; each op is
    ``(slot, kind, nullable, tag, nested program | None)``.
    """
    ops_plain, ops_tagged = [], []
    for slot, f in enumerate(fields):
        if not f.in_version(version):
            continue
        sub = struct_program(f.fields, version) if f.type in ("struct", "[]struct") else None
        op = (slot, _kind(f.type), f.nullable_in(version), -1 if f.tag is None else f.tag, sub)
        (ops_plain if f.tag is None else ops_tagged).append(op)
    ops_tagged.sort(key=lambda op: op[3])
    # interned keys, like the literal keys of the generated Python decoders: lookups by literal hit on identity
    return (tuple(sys.intern(f.name) for f in fields), tuple(f.default for f in fields), tuple(ops_plain),
            tuple(ops_tagged), flexible)


def _programs(compiled: Any) -> tuple:
    """``programs[api_key][version]`` = ``(record name, compiled program)`` or None."""
    table: list[Any] = [None] * (max(METADATA_RECORD_TYPES) + 1)
    for api_key, spec in METADATA_RECORD_TYPES.items():
        lo, hi = spec.versions
        table[api_key] = tuple(
            (spec.name, compiled.compile_program(struct_program(spec.fields, v, spec.flexible))) if v >= lo else None
            for v in range(hi + 1)
        )
    return tuple(table)


@cache
def _compiled_programs(compiled: Any) -> tuple:
    return _programs(compiled)


def scan_context(tiny: dict, fields_record: type, new_entry: Any, new_record: Any) -> tuple[Any, tuple] | None:
    """``(scan function, its context)`` for ``MetadataLog._scan``, or None for the pure-Python path."""
    compiled = native.load(MODULE)
    if compiled is None:
        return None
    context = (_compiled_programs(compiled), tiny, _uuid_cache, uuid_from_bytes, crc32c, fields_record, new_entry,
               new_record, UNKNOWN_TAGS_KEY)
    return compiled.scan, context
