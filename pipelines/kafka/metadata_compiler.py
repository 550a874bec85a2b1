"""Compile a :class:`RecordTypeSpec` at one version into a fast Python decoder, once.

Decoding a metadata log is the hot path of replay (one call per record, a million records in a large
log), so instead of walking the schema per record we generate, once per (type, version), the straight-line
Python a person would write by hand for that layout: precompiled ``struct.Struct`` readers (adjacent
fixed-size fields merged into one ``unpack_from``), one-byte fast paths for unsigned varints, and a
``while`` over the tagged-field section that dispatches on the tag. The generated source is built only from
the declarative schema table (no user input reaches it) and is kept on the function (``__source__``) so it
can be read when debugging.

Generated decoders take ``(buf, pos, end)`` (``end`` = where the value ends; ``buf`` may be ``bytes`` or
``mmap``) and return ``(fields: dict, unknown_tags: tuple, pos)`` for a message body, or
``(MappingProxyType, pos)`` for a nested struct. They raise ``DecodeError`` for rule violations (null where
not nullable, lengths past the end, tagged field size mismatch) and may leak ``IndexError``/``struct.error``
on truncation: the public entry points turn those into ``DecodeError``.

Rules (facts 6.2): compact string/bytes/array lengths are unsigned varint N+1 with 0 = null; a tagged-field
section (count, then tag, size, value) ends every struct and the message; unknown tags are kept as raw
``(tag, bytes)`` pairs (nested structs keep theirs under the ``"_unknown_tags"`` key) so re-encoding is
byte-exact.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.metadata_schema import FieldSpec, RecordTypeSpec
from pipelines.kafka.uuid import Uuid
from pipelines.kafka.varint import read_uvarint

__all__ = ["UNKNOWN_TAGS_KEY", "compile_decoder", "uuid_from_bytes"]

UNKNOWN_TAGS_KEY = "_unknown_tags"

_FIXED = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "bool": "?", "float64": "d"}
_FIXED_SIZE = {"b": 1, "h": 2, "i": 4, "q": 8, "H": 2, "?": 1, "d": 8}

_uuid_cache: dict[bytes, Uuid] = {}
_UUID_CACHE_MAX = 200_000
_SMALL_ARRAY = 32


def uuid_from_bytes(raw: bytes) -> Uuid:
    """``Uuid.from_bytes`` with a bounded cache: topic and directory ids repeat across many records."""
    u = _uuid_cache.get(raw)
    if u is None:
        if len(raw) != 16:
            raise DecodeError("truncated uuid")
        if len(_uuid_cache) >= _UUID_CACHE_MAX:
            _uuid_cache.clear()
        u = _uuid_cache[raw] = Uuid.from_bytes(raw)
    return u


def _null_error(what: str, pos: int) -> DecodeError:
    return DecodeError(f"null {what} where the schema does not allow null", pos)


def _len_error(what: str, n: int, pos: int) -> DecodeError:
    return DecodeError(f"{what} length {n} runs past the end of the record", pos)


class _Src:
    """A tiny indented source builder."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 1
        self.counter = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def tmp(self, stem: str = "t") -> str:
        self.counter += 1
        return f"_{stem}{self.counter}"


class _Compiler:
    def __init__(self) -> None:
        self.ns: dict[str, Any] = {
            "_uv": read_uvarint,
            "_uuid": uuid_from_bytes,
            "_uc": _uuid_cache,
            "_unpack": struct.unpack_from,
            "_MP": MappingProxyType,
            "_null_error": _null_error,
            "_len_error": _len_error,
            "DecodeError": DecodeError,
        }
        self.sources: list[str] = []
        self._structs: dict[str, str] = {}
        self._n = 0

    def const(self, value: Any) -> str:
        self._n += 1
        name = f"_c{self._n}"
        self.ns[name] = value
        return name

    def uvarint(self, s: _Src, target: str) -> None:
        s(f"{target} = buf[pos]")
        s(f"if {target} < 128:")
        s(f"    pos += 1")  # noqa: F541 - generated source
        s("else:")
        s(f"    {target}, pos = _uv(buf, pos)")

    def compact_len(self, s: _Src, n: str, what: str, nullable: bool, per_item: int) -> None:
        """Leave ``n`` = length (-1 when null); raise on null-not-allowed or overrun."""
        self.uvarint(s, n)
        s(f"{n} -= 1")
        if not nullable:
            s(f"if {n} < 0: raise _null_error({what!r}, pos)")
        s(f"if {n} * {per_item} > end - pos: raise _len_error({what!r}, {n}, pos)")

    def read_value(self, s: _Src, f: FieldSpec, target: str, version: int) -> None:
        """Emit code reading one (non-merged) value of field ``f`` into ``target``."""
        t = f.type
        nullable = f.nullable_in(version)
        if t in _FIXED:
            st = self.const(struct.Struct(">" + _FIXED[t]))
            s(f"{target}, = {st}.unpack_from(buf, pos)")
            s(f"pos += {_FIXED_SIZE[_FIXED[t]]}")
        elif t == "uuid":
            s("_raw = buf[pos:pos + 16]")
            s(f"{target} = _uc.get(_raw)")
            s(f"if {target} is None: {target} = _uuid(_raw)")
            s("pos += 16")
        elif t in ("string", "bytes"):
            n = s.tmp("n")
            self.compact_len(s, n, f.kafka_name, nullable, 1)
            s(f"if {n} < 0:")
            s(f"    {target} = None")
            s("else:")
            conv = ".decode('utf-8', 'surrogateescape')" if t == "string" else ""
            s(f"    {target} = buf[pos:pos + {n}]{conv}")
            s(f"    pos += {n}")
        elif t == "struct":
            fn = self.struct_decoder(f, version)
            s(f"{target}, pos = {fn}(buf, pos, end)")
        elif t.startswith("[]"):
            elem = t[2:]
            n = s.tmp("n")
            size = _FIXED_SIZE[_FIXED[elem]] if elem in _FIXED else (16 if elem == "uuid" else 1)
            self.compact_len(s, n, f.kafka_name, nullable, size)
            s(f"if {n} < 0:")
            s(f"    {target} = None")
            if elem in _FIXED:
                code = _FIXED[elem]
                arrays = self.const(tuple(struct.Struct(f">{i}{code}") for i in range(_SMALL_ARRAY)))
                s(f"elif {n} < {_SMALL_ARRAY}:")
                s(f"    {target} = {arrays}[{n}].unpack_from(buf, pos)")
                s(f"    pos += {size} * {n}")
                s("else:")
                s(f"    {target} = _unpack('>%d{code}' % {n}, buf, pos)")
                s(f"    pos += {size} * {n}")
            else:
                s("else:")
                s.indent += 1
                acc = s.tmp("a")
                s(f"{acc} = []")
                s(f"for _ in range({n}):")
                s.indent += 1
                item = s.tmp("v")
                if elem == "struct":
                    fn = self.struct_decoder(f, version)
                    s(f"{item}, pos = {fn}(buf, pos, end)")
                else:
                    self.read_value(s, FieldSpec(f.kafka_name, elem, f.versions, None, None, None), item, version)
                s(f"{acc}.append({item})")
                s.indent -= 1
                s(f"{target} = tuple({acc})")
                s.indent -= 1
        else:  # pragma: no cover - schema table is validated by tests
            raise ValueError(f"unknown type {t}")

    def body(self, s: _Src, fields: tuple[FieldSpec, ...], version: int, flexible: bool) -> list[tuple[str, str]]:
        """Emit the reading of a struct body; return ``(key, expression)`` pairs for its dict."""
        present = [f for f in fields if f.in_version(version)]
        plain = [f for f in present if f.tag is None]
        tagged = sorted((f for f in present if f.tag is not None), key=lambda f: f.tag)
        var = {f.name: f"f_{f.name}" for f in present}
        i = 0
        while i < len(plain):  # merge runs of fixed-size fields into one unpack
            run = []
            while i < len(plain) and plain[i].type in _FIXED:
                run.append(plain[i])
                i += 1
            if len(run) > 1:
                codes = "".join(_FIXED[f.type] for f in run)
                st = self.const(struct.Struct(">" + codes))
                s(f"{', '.join(var[f.name] for f in run)}, = {st}.unpack_from(buf, pos)")
                s(f"pos += {struct.calcsize('>' + codes)}")
            elif run:
                self.read_value(s, run[0], var[run[0].name], version)
            if i < len(plain) and plain[i].type not in _FIXED:
                self.read_value(s, plain[i], var[plain[i].name], version)
                i += 1
        if flexible:
            for f in tagged:
                s(f"{var[f.name]} = {self.const(f.default)}")
            s("unknown = ()")
            ntags = s.tmp("nt")
            self.uvarint(s, ntags)
            s(f"if {ntags}:")
            s.indent += 1
            s("unk = []")
            s(f"for _ in range({ntags}):")
            s.indent += 1
            self.uvarint(s, "tag")
            self.uvarint(s, "size")
            s("tend = pos + size")
            s("if tend > end: raise DecodeError(f'tagged field {tag} of {size} bytes runs past the end', pos)")
            kw = "if"
            for f in tagged:
                s(f"{kw} tag == {f.tag}:")
                s.indent += 1
                self.read_value(s, f, var[f.name], version)
                s.indent -= 1
                kw = "elif"
            s(f"{kw} True:" if kw == "elif" else "if True:")
            s("    unk.append((tag, buf[pos:tend]))")
            s("    pos = tend")
            s("if pos != tend: raise DecodeError(f'tagged field {tag} is not {size} bytes long', tend)")
            s.indent -= 1
            s("unknown = tuple(unk)")
            s.indent -= 1
        else:
            s("unknown = ()")
        items = []
        for f in fields:
            items.append((f.name, var[f.name] if f.in_version(version) else self.const(f.default)))
        return items

    def struct_decoder(self, f: FieldSpec, version: int) -> str:
        key = f"{id(f)}_{version}"
        if key in self._structs:
            return self._structs[key]
        name = f"_dec_{f.name}_{len(self._structs)}_v{version}"
        self._structs[key] = name
        s = _Src()
        items = self.body(s, f.fields, version, True)
        entries = ", ".join(f"{k!r}: {v}" for k, v in items)
        s(f"d = {{{entries}}}")
        s(f"if unknown: d[{UNKNOWN_TAGS_KEY!r}] = unknown")
        s("return _MP(d), pos")
        self.sources.append(f"def {name}(buf, pos, end):\n" + "\n".join(s.lines))
        return name

    def message(self, spec: RecordTypeSpec, version: int) -> str:
        s = _Src()
        items = self.body(s, spec.fields, version, spec.flexible)
        entries = ", ".join(f"{k!r}: {v}" for k, v in items)
        s(f"return {{{entries}}}, unknown, pos")
        name = f"decode_{spec.name}_v{version}"
        self.sources.append(f"def {name}(buf, pos, end):\n" + "\n".join(s.lines))
        return name


def compile_decoder(spec: RecordTypeSpec, version: int) -> Callable[[bytes, int, int], tuple[dict, tuple, int]]:
    """Build the decoder of ``spec`` at ``version`` (call once and keep the result)."""
    c = _Compiler()
    name = c.message(spec, version)
    source = "\n\n".join(c.sources) + "\n"
    code = compile(source, f"<metadata decoder {spec.name} v{version}>", "exec")
    exec(code, c.ns)  # source generated from the schema table only
    fn = c.ns[name]
    fn.__source__ = source
    return fn
