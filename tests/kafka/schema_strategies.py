"""Hypothesis strategies built from the declarative schema table (shared by the kafka tests)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pipelines.kafka.metadata_schema import FieldSpec
from pipelines.kafka.uuid import Uuid

_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    "uuid": st.builds(Uuid, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=12),
}


def value_strategy(f: FieldSpec, type_: str, version: int) -> st.SearchStrategy[Any]:
    if type_ == "struct":
        return struct_strategy(f.fields, version)
    if type_.startswith("[]"):
        elem = type_[2:]
        return st.lists(value_strategy(f, elem, version), max_size=3).map(tuple)
    return _SCALARS[type_]


def field_strategy(f: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    base = value_strategy(f, f.type, version)
    return st.one_of(st.none(), base) if f.nullable_in(version) else base


def struct_strategy(fields: tuple[FieldSpec, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Values for the fields that exist in ``version``; the rest are left out (they take defaults)."""
    return st.fixed_dictionaries({f.name: field_strategy(f, version) for f in fields if f.in_version(version)})


def with_defaults(fields: tuple[FieldSpec, ...], values: dict[str, Any]) -> dict[str, Any]:
    """What a decoder must return: every field, absent ones at their schema defaults (recursively)."""
    out = {}
    for f in fields:
        value = values.get(f.name, f.default)
        if f.type == "struct" and value is not None:
            value = with_defaults(f.fields, dict(value))
        elif f.type == "[]struct" and value is not None:
            value = tuple(with_defaults(f.fields, dict(v)) for v in value)
        out[f.name] = value
    return out
