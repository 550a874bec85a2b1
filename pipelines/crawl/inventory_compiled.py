"""Format 2 written by the compiled lister: Parquet pages straight from C, no pyarrow on the broker host.

``inventory_columns`` (``pipelines/crawl/_native_dirscan.c``) lists one local log dir and encodes its rows -- the
rows :func:`pipelines.crawl.inventory_parquet.add_listing` gives for ``list_log_dir(root, summarize=True)`` -- as one
plain-encoded Parquet data page per leaf column of :func:`~pipelines.crawl.inventory_parquet.arrow_schema`. This
module compresses each page (zstd), frames it, and writes the footer (Thrift compact protocol): one row group per
log dir, no statistics, no dictionary. What pyarrow and Spark read back is the table the pyarrow writer writes for
the same log dirs (tests/crawl/test_inventory_compiled.py), so ``read_inventory`` needs no second reader.

``write`` returns None when it cannot serve the request (format 1, a log dir that is not local, the compiled lister
not built, a name that is not UTF-8 or an offset beyond int64 somewhere): the caller then writes with pyarrow.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import IO, Any

from pipelines.native import load

#: What ``write`` hands to the compiled lister, as literals: importing their sources (``pipelines.crawl.listing``,
#: ``pipelines.kafka.dir_summary`` and the Kafka modules behind them) costs 40-80 ms, a tenth of the command on a
#: 20k-partition log dir. ``tests/crawl/test_inventory_compiled.py`` holds each equal to its source.
PARTITION_READS: tuple[bytes, ...] = (b"partition.metadata", b"leader-epoch-checkpoint", b"quorum-state")
ROOT_READS: tuple[bytes, ...] = (
    b"meta.properties", b".kafka_cleanshutdown", b"recovery-point-offset-checkpoint", b"log-start-offset-checkpoint",
    b"replication-offset-checkpoint", b"cleaner-offset-checkpoint",
)  # fmt: skip
READ_LIMIT = 1 << 20
SEGMENT_TAIL_CODES: tuple[tuple[bytes, int], ...] = tuple(
    ((suffix + state).encode(), 0 if state else 1 if suffix == ".log" else 3 if suffix == ".snapshot" else 2)
    for suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
    for state in ("", ".deleted", ".cleaned", ".swap")
)
META_KEY = b"logdir-gc-inventory"
_NATIVE = "pipelines.crawl._native_dirscan"
FORMATS = (1, 2)
_JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".json.gz", ".json.zst")


def format_for(out_url: str) -> int:
    """The format an output gets when none is asked for (``write_inventory``'s rule, kept here so the command need
    not import it): 1 for a name that says JSON Lines, else 2."""
    return 1 if out_url.lower().endswith(_JSONL_SUFFIXES) else 2


def compiled_lister() -> ModuleType | None:
    """The compiled lister with ``inventory_columns``, or None. When the local backend is loaded, the one it uses
    (``local._native``: what the tests and ``bench/crawl.py`` switch); else loaded here (``KLGC_PURE_PYTHON=1``
    rules it out either way)."""
    local = sys.modules.get("pipelines.crawl.backends.local")
    native = local._native if local is not None else load(_NATIVE)  # type: ignore[attr-defined]
    return native if native is not None and hasattr(native, "inventory_columns") else None


# -- Thrift compact protocol (what parquet.thrift's footer and page headers are written in) ----------------------

_BOOL, _I8, _I16, _I32, _I64, _BINARY, _LIST, _STRUCT = 1, 3, 4, 5, 6, 8, 9, 12


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _value(kind: int, value: object) -> bytes:
    if kind == _I8:
        return bytes([value & 0xFF])  # type: ignore[operator]
    if kind in (_I16, _I32, _I64):
        return _zigzag(value)  # type: ignore[arg-type]
    if kind == _BINARY:
        raw = value.encode() if isinstance(value, str) else value
        return _varint(len(raw)) + raw  # type: ignore[arg-type, operator]
    if kind == _STRUCT:
        return value  # type: ignore[return-value]  # already encoded by _struct
    if kind == _LIST:
        item_kind, items = value  # type: ignore[misc]
        n = len(items)
        head = bytes([n << 4 | item_kind]) if n < 15 else bytes([0xF0 | item_kind]) + _varint(n)
        return head + b"".join(_value(item_kind, item) for item in items)
    raise ValueError(kind)


def _struct(*fields: tuple[int, int, object]) -> bytes:
    """``(field id, kind, value)`` in id order; a None value is left out."""
    out = bytearray()
    last = 0
    for fid, kind, value in fields:
        if value is None:
            continue
        wire = (1 if value else 2) if kind == _BOOL else kind
        out += bytes([(fid - last) << 4 | wire]) if 0 < fid - last <= 15 else bytes([wire]) + _zigzag(fid)
        last = fid
        if kind != _BOOL:
            out += _value(kind, value)
    out.append(0)
    return bytes(out)


# -- the schema (parquet.thrift SchemaElement), leaf by leaf in the C module's column order ----------------------

_BOOLEAN, _INT32, _INT64, _BYTE_ARRAY, _FIXED = 0, 1, 2, 6, 7  # physical types
_OPTIONAL, _REPEATED = 1, 2
_UTF8, _LIST_TYPE, _DECIMAL, _INT_8 = 0, 3, 5, 15  # converted types
_PLAIN, _RLE, _ZSTD, _DATA_PAGE = 0, 3, 6, 0

_STRING = (_BYTE_ARRAY, _UTF8, _struct((1, _STRUCT, _struct())))
_LEAVES = {
    "string": _STRING,
    "binary": (_BYTE_ARRAY, None, None),
    "int8": (_INT32, _INT_8, _struct((10, _STRUCT, _struct((1, _I8, 8), (2, _BOOL, True))))),
    "int32": (_INT32, None, None),
    "int64": (_INT64, None, None),
    "bool": (_BOOLEAN, None, None),
    "decimal": (_FIXED, _DECIMAL, _struct((5, _STRUCT, _struct((1, _I32, 0), (2, _I32, 20))))),
}
_TOP = (
    ("t", "string"), ("d", "int32"), ("name", "string"), ("kind", "int8"), ("size", "int64"), ("mtime_ns", "int64"),
    ("islink", "bool"), ("fs_total_bytes", "int64"), ("fs_used_bytes", "int64"), ("fs_free_bytes", "int64"),
    ("stage", "string"), ("error_class", "string"), ("reason", "string"), ("data", "binary"),
    ("files", "int64"), ("bytes", "int64"), ("log_bytes", "int64"), ("index_bytes", "int64"),
    ("segment_count", "int64"), ("min_base_offset", "decimal"), ("max_base_offset", "decimal"),
    ("index_sets", "int64"), ("orphan_index_sets", "int64"), ("transient", "int64"), ("oldest_ns", "int64"),
    ("newest_ns", "int64"), ("fingerprint", "string"),
)  # fmt: skip
_LISTS = (
    ("others", (("name", "string"), ("kind", "int8"), ("size", "int64"), ("mtime_ns", "int64"), ("islink", "bool"))),
    ("contents", (("name", "string"), ("data", "binary"))),
    ("read_errors", (("name", "string"), ("error_class", "string"), ("reason", "string"))),
)


def _element(name: str, *, leaf: str | None = None, repetition: int = _OPTIONAL, children: int | None = None,
             converted: int | None = None, logical: bytes | None = None) -> bytes:  # fmt: skip
    type_length = precision = scale = None
    if leaf is not None:
        physical, converted, logical = _LEAVES[leaf]
        if leaf == "decimal":
            type_length, precision, scale = 9, 20, 0
    else:
        physical = None
    return _struct((1, _I32, physical), (2, _I32, type_length), (3, _I32, repetition), (4, _BINARY, name),
                   (5, _I32, children), (6, _I32, converted), (7, _I32, scale), (8, _I32, precision),
                   (10, _STRUCT, logical))  # fmt: skip


def _schema() -> tuple[list[bytes], list[tuple[int, tuple[str, ...]]]]:
    """The footer's schema elements, and per leaf column its physical type and path."""
    elements = [_element("schema", repetition=0, children=len(_TOP) + len(_LISTS))]
    leaves: list[tuple[int, tuple[str, ...]]] = []
    for name, leaf in _TOP:
        elements.append(_element(name, leaf=leaf))
        leaves.append((_LEAVES[leaf][0], (name,)))
    list_logical = _struct((3, _STRUCT, _struct()))
    for name, fields in _LISTS:
        elements.append(_element(name, children=1, converted=_LIST_TYPE, logical=list_logical))
        elements.append(_element("list", repetition=_REPEATED, children=1))
        elements.append(_element("element", children=len(fields)))
        for field, leaf in fields:
            elements.append(_element(field, leaf=leaf))
            leaves.append((_LEAVES[leaf][0], (name, "list", "element", field)))
    return elements, leaves


# -- writing -----------------------------------------------------------------------------------------------------

_CREATED_BY = "kafka-logdir-gc version 0.1.0"
_ZSTD_LEVEL = 1  # 8 MB of pages per 20k partition dirs: level 1 is 15 ms, level 3 twice that for 15% less


def _read(path: str) -> object:
    """A small file the compiled lister could not read in one go: its bytes, or what the pyarrow writer records
    when it cannot be read (rare: the imports wait until then)."""
    from pipelines.crawl.inventory_parquet import enc
    from pipelines.kafka.bounded_read import kind_of, read_regular_file

    try:
        return read_regular_file(path, kind_of(path))  # above its kind's limit: refused unread
    except OSError as exc:
        return type(exc).__name__, enc(str(exc.strerror or exc))


def row_groups(log_dirs: Sequence[str]
               ) -> tuple[list[tuple[int, list[tuple[bytes, int, int]]]], list[tuple[str, str]]] | None:  # fmt: skip
    """Per log dir ``(rows, [(compressed page, uncompressed size, values)] per leaf)``, and the log dirs that
    could not be listed with why; None when the compiled lister is not there (not built, ``KLGC_PURE_PYTHON``) or
    one of the log dirs needs the pyarrow writer."""
    from pipelines.crawl.backends.registry import local_path

    native = compiled_lister()
    if native is None:
        return None
    import cramjam

    compress = cramjam.zstd.compress
    groups = []
    failed: list[tuple[str, str]] = []
    for index, url in enumerate(log_dirs):
        got = native.inventory_columns(local_path(url), url, index, SEGMENT_TAIL_CODES, ROOT_READS, PARTITION_READS,
                                       READ_LIMIT, _read)  # fmt: skip
        if got is None:
            return None
        rows, pages, reason = got
        if any(len(body) >= 1 << 31 for body, _ in pages):  # a Parquet page size is an i32: pyarrow splits pages
            return None
        if reason is not None:
            failed.append((url, reason))
        groups.append((rows, [(bytes(compress(body, _ZSTD_LEVEL)), len(body), n) for body, n in pages]))
    return groups, failed


def _page_header(compressed: int, uncompressed: int, values: int) -> bytes:
    data_page = _struct((1, _I32, values), (2, _I32, _PLAIN), (3, _I32, _RLE), (4, _I32, _RLE))
    return _struct((1, _I32, _DATA_PAGE), (2, _I32, uncompressed), (3, _I32, compressed), (5, _STRUCT, data_page))


def write_file(groups: list[tuple[int, list[tuple[bytes, int, int]]]], header_json: str, fh: IO[bytes]) -> None:
    """The Parquet file: ``PAR1``, each row group's column chunks (one page each), the footer, its length,
    ``PAR1``. The header JSON is the key-value metadata ``logdir-gc-inventory``, as the pyarrow writer keeps it."""
    elements, leaves = _schema()
    fh.write(b"PAR1")
    pos = 4
    encoded_groups = []
    total_rows = 0
    for ordinal, (rows, pages) in enumerate(groups):
        if len(pages) != len(leaves):
            raise ValueError(f"{len(pages)} pages for {len(leaves)} columns")
        chunks = []
        start = pos
        group_bytes = group_compressed = 0
        for (physical, path), (page, raw_size, values) in zip(leaves, pages, strict=True):
            head = _page_header(len(page), raw_size, values)
            fh.write(head)
            fh.write(page)
            compressed, uncompressed = len(head) + len(page), len(head) + raw_size
            meta = _struct((1, _I32, physical), (2, _LIST, (_I32, [_PLAIN, _RLE])), (3, _LIST, (_BINARY, list(path))),
                           (4, _I32, _ZSTD), (5, _I64, values), (6, _I64, uncompressed), (7, _I64, compressed),
                           (9, _I64, pos))  # fmt: skip
            chunks.append(_struct((2, _I64, pos), (3, _STRUCT, meta)))
            pos += compressed
            group_bytes += uncompressed
            group_compressed += compressed
        encoded_groups.append(_struct((1, _LIST, (_STRUCT, chunks)), (2, _I64, group_bytes), (3, _I64, rows),
                                      (5, _I64, start), (6, _I64, group_compressed), (7, _I16, ordinal)))  # fmt: skip
        total_rows += rows
    key_value = _struct((1, _BINARY, META_KEY), (2, _BINARY, header_json.encode()))
    footer = _struct((1, _I32, 1), (2, _LIST, (_STRUCT, elements)), (3, _I64, total_rows),
                     (4, _LIST, (_STRUCT, encoded_groups)), (5, _LIST, (_STRUCT, [key_value])),
                     (6, _BINARY, _CREATED_BY))  # fmt: skip
    fh.write(footer)
    fh.write(len(footer).to_bytes(4, "little"))
    fh.write(b"PAR1")


def local_only(log_dirs: Sequence[str]) -> bool:
    """True when every log dir is served by the local backend (what the compiled writer lists)."""
    from pipelines.crawl.backends.registry import backend_name

    return all(backend_name(url) in ("local", "file") for url in log_dirs)


def header_json(version: int, log_dirs: Sequence[str], broker_id: int | None) -> str:
    """The header as ``InventoryHeader.model_dump_json()`` writes it (without importing pydantic)."""
    import json
    from datetime import datetime, timezone

    if hasattr(os, "uname"):
        host = os.uname().nodename  # what socket.gethostname() returns, without importing socket
    else:
        import socket

        host = socket.gethostname()
    written_at = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    return json.dumps({"format": "logdir-gc-inventory", "version": version, "written_at": written_at,
                       "host": host, "broker_id": broker_id, "log_dirs": list(log_dirs)},
                      separators=(",", ":"), ensure_ascii=False)  # fmt: skip


def write(log_dirs: Sequence[str], out_url: str, *, broker_id: int | None = None, format: int | None = None,
          out_storage_options: Mapping[str, Any] | None = None
          ) -> tuple[int, tuple[tuple[str, str], ...]] | None:  # fmt: skip
    """Write the format-2 inventory of local ``log_dirs`` with the compiled lister: ``(rows, failed)``, where
    ``failed`` holds ``(log dir, reason)`` for those that could not be listed (recorded in the file); None, with
    nothing written, when ``write_inventory`` must do it: format 1 (``format``, else ``format_for(out_url)``) or
    the pyarrow writer (see the module doc).

    Raises:
        OSError: the output cannot be written.
    """
    if (format or format_for(out_url)) != 2 or not local_only(log_dirs):
        return None
    got = row_groups(log_dirs)
    if got is None:
        return None
    groups, failed = got
    if "://" in out_url or out_storage_options:
        import fsspec

        out = fsspec.open(out_url, "wb", **dict(out_storage_options or {}))
    else:  # a plain path: no fsspec import on the broker host
        out = open(out_url, "wb")  # noqa: SIM115 (closed by the with below)
    with out as fh:
        write_file(groups, header_json(2, log_dirs, broker_id), fh)
    return sum(rows for rows, _ in groups), tuple(failed)


__all__ = ["FORMATS", "compiled_lister", "format_for", "header_json", "local_only", "row_groups", "write",
           "write_file"]  # fmt: skip
