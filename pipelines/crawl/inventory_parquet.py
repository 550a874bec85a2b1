"""Inventory format 2: one Parquet file, one row per partition dir (what ``logdir-gc inventory`` writes by default).

Each partition dir is written already summed up (the :class:`~pipelines.kafka.dir_summary.DirSummary` the crawl's
listers compute: counts, bytes, segment offsets, times, fingerprint), with its non-segment entries (``others``) and
the small files the scan reads (``contents``), so a fleet's inventories hold about 200 bytes per partition dir and
Spark (or pyarrow, or DuckDB) reads them with their schema. Other rows, by ``t``:

- ``log_dir``: one per log dir (``d`` its index in the header's ``log_dirs``): ``name`` is the listed root,
  ``fs_*`` the filesystem totals, ``error_class``/``reason`` set when it could not be listed at all;
- ``entry``: a root entry that is not a directory (``meta.properties``, checkpoints, ...), with ``data`` (its content
  when the scan reads it) or ``error_class``/``reason`` (stage ``read``: it could not be read);
- ``dir``: a root directory; ``error_class``/``reason`` set when it could not be listed (no summary then);
- ``error``: a listing error (``name`` relative to the log dir, ``stage``).

Names are Parquet strings (UTF-8); a name that is not valid UTF-8 (a byte name Python surrogate-escapes) is written
as NUL followed by the hex of its bytes (a file name never holds NUL), and read back as the same name.

The header (format, version 2, written_at, host, broker_id, log_dirs) is the file's key-value metadata under
``logdir-gc-inventory``. Local log dirs are written by the compiled writer (:mod:`pipelines.crawl.inventory_compiled`:
the same rows, one row group per log dir, straight from C); ``add_listing`` + ``write_table`` here write the rest
(SFTP and generic log dirs, pure Python, names that are not UTF-8) with pyarrow, and are the reference.
Reading gives the same :class:`~pipelines.crawl.listing.Listing` the local compiled lister
produces with ``summarize=True``, so the crawl rows equal a direct crawl's (no ``segment_files`` rows: those need
per-file entries, which format 1 keeps).
"""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from pipelines.crawl.listing import (
    FsTotals,
    ListedEntry,
    Listing,
    ListingError,
    wanted_content,
)
from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import FileTooLarge
from pipelines.kafka.dir_summary import DirSummary, summarize_entries
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.listing import FileEntry

if TYPE_CHECKING:
    import pyarrow as pa

META_KEY = b"logdir-gc-inventory"
VERSION = 2
KINDS = ("file", "directory", "other")
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
_new_listed = fast_constructor(ListedEntry)
_new_file = fast_constructor(FileEntry)
_new_summary = fast_constructor(DirSummary)

#: Summary columns, in ``DirSummary`` field order (up to ``fingerprint``).
SUMMARY_COLUMNS = (
    "files", "bytes", "log_bytes", "index_bytes", "segment_count", "min_base_offset", "max_base_offset",
    "index_sets", "orphan_index_sets", "transient", "oldest_ns", "newest_ns",
)  # fmt: skip


_OFFSET_COLUMNS = frozenset({"min_base_offset", "max_base_offset"})


def arrow_schema() -> pa.Schema:
    """The file's columns. Base offsets are decimal(20, 0): a segment name's 20 digits may exceed int64."""
    import pyarrow as pa

    offset = pa.decimal128(20, 0)

    other = pa.struct([("name", pa.string()), ("kind", pa.int8()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
                       ("islink", pa.bool_())])  # fmt: skip
    content = pa.struct([("name", pa.string()), ("data", pa.binary())])
    read_error = pa.struct([("name", pa.string()), ("error_class", pa.string()), ("reason", pa.string())])
    return pa.schema([
        ("t", pa.string()), ("d", pa.int32()), ("name", pa.string()), ("kind", pa.int8()), ("size", pa.int64()),
        ("mtime_ns", pa.int64()), ("islink", pa.bool_()),
        ("fs_total_bytes", pa.int64()), ("fs_used_bytes", pa.int64()), ("fs_free_bytes", pa.int64()),
        ("stage", pa.string()), ("error_class", pa.string()), ("reason", pa.string()), ("data", pa.binary()),
        *((c, offset if c in _OFFSET_COLUMNS else pa.int64()) for c in SUMMARY_COLUMNS),
        ("fingerprint", pa.string()),
        ("others", pa.list_(other)), ("contents", pa.list_(content)), ("read_errors", pa.list_(read_error)),
    ])  # fmt: skip


class _Columns:
    """Column lists filled row by row (cheaper than a dict per row)."""

    def __init__(self) -> None:
        self.names = arrow_schema().names
        self.cols: dict[str, list[Any]] = {n: [] for n in self.names}
        self.rows = 0

    def add(self, **values: Any) -> None:
        for name, col in self.cols.items():
            col.append(values.get(name))
        self.rows += 1

    def add_dir(self, d: int, entry: ListedEntry, summary: DirSummary, others: list[dict[str, Any]],
                contents: list[dict[str, Any]], read_errors: list[dict[str, Any]]) -> None:  # fmt: skip
        c = self.cols
        c["t"].append("dir")
        c["d"].append(d)
        c["name"].append(enc(entry.rel))
        c["kind"].append(1)
        c["size"].append(0)
        c["mtime_ns"].append(entry.mtime_ns)
        c["islink"].append(entry.islink)
        for name in ("fs_total_bytes", "fs_used_bytes", "fs_free_bytes", "stage", "error_class", "reason", "data"):
            c[name].append(None)
        for name in SUMMARY_COLUMNS:
            c[name].append(getattr(summary, name))
        c["fingerprint"].append(summary.fingerprint)
        c["others"].append(others)
        c["contents"].append(contents)
        c["read_errors"].append(read_errors)
        self.rows += 1


def enc(name: str) -> str:
    """``name`` as a valid UTF-8 string: itself, or NUL + the hex of its file-system bytes (see module doc)."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return "\0" + name.encode("utf-8", "surrogateescape").hex()


def dec(name: str) -> str:
    """The inverse of ``enc``."""
    if name.startswith("\0"):
        try:
            return bytes.fromhex(name[1:]).decode("utf-8", "surrogateescape")
        except ValueError:
            raise DecodeError(f"inventory: bad escaped name {name[1:]!r}", 0) from None
    return name


def _read_or_error(listing: Listing, rel: str, extra: Mapping[str, bytes]) -> tuple[bytes | None, OSError | None]:
    data = listing.contents.get(rel)
    if data is None:
        data = extra.get(rel.rpartition("/")[2]) if "/" in rel else None
    if data is not None:
        return data, None
    if rel in listing.read_errors:
        return None, listing.read_errors[rel]
    if listing.reader is None:
        return None, None
    try:
        return listing.reader(listing.abs_path(rel)), None
    except OSError as exc:
        return None, exc


def _reason(exc: OSError) -> str:
    return str(exc.strerror or exc)


def add_listing(cols: _Columns, d: int, listing: Listing) -> None:
    """Rows of one listed log dir; partition dirs the backend did not sum up are summed up here (Python)."""
    t = listing.totals
    cols.add(t="log_dir", d=d, name=enc(listing.root), fs_total_bytes=t.total_bytes if t else None,
             fs_used_bytes=t.used_bytes if t else None, fs_free_bytes=t.free_bytes if t else None)  # fmt: skip
    children: dict[str, list[ListedEntry]] = {}
    roots: list[ListedEntry] = []
    for e in listing.entries.values():
        parent, sep, _ = e.rel.partition("/")
        if sep:
            children.setdefault(parent, []).append(e)
        else:
            roots.append(e)
    for e in roots:
        if e.kind != "directory":
            data, exc = None, None
            if e.kind == "file" and wanted_content(e.rel):
                data, exc = _read_or_error(listing, e.rel, {})
            cols.add(t="entry", d=d, name=enc(e.rel), kind=_KIND_CODE[e.kind], size=e.size, mtime_ns=e.mtime_ns,
                     islink=e.islink, data=data, stage="read" if exc else None,
                     error_class=type(exc).__name__ if exc else None,
                     reason=enc(_reason(exc)) if exc else None)  # fmt: skip
            continue
        failed = listing.failed_dirs.get(e.rel)
        if failed is not None:
            cols.add(t="dir", d=d, name=enc(e.rel), kind=1, size=0, mtime_ns=e.mtime_ns, islink=e.islink,
                     stage="list", error_class=type(failed).__name__, reason=enc(_reason(failed)))  # fmt: skip
            continue
        summary = listing.summaries.get(e.rel)
        if summary is None:  # listed file by file (pure Python, generic fsspec): sum it up as the listers do
            summary = summarize_entries([_new_file(k.rel.partition("/")[2], k.size, k.mtime_ns,
                                                   k.kind == "directory", k.islink)
                                         for k in children.get(e.rel, ())])  # fmt: skip
        prefix = e.rel + "/"
        others, contents, read_errors = [], [], []
        for o in summary.others:
            rel = prefix + o.name
            listed = listing.entries.get(rel)
            kind = _KIND_CODE[listed.kind] if listed is not None else (1 if o.is_dir else 2)
            others.append({"name": enc(o.name), "kind": kind, "size": o.size, "mtime_ns": o.mtime_ns,
                           "islink": o.is_symlink})  # fmt: skip
            if kind == 0 and wanted_content(rel):
                data, exc = _read_or_error(listing, rel, summary.contents)
                if data is not None:
                    contents.append({"name": enc(o.name), "data": data})
                elif exc is not None:
                    read_errors.append({"name": enc(o.name), "error_class": type(exc).__name__,
                                        "reason": enc(_reason(exc))})
        cols.add_dir(d, e, summary, others, contents, read_errors)
    for err in listing.errors:
        cols.add(t="error", d=d, name=enc(err.rel), stage=err.stage, error_class=err.error_class,
                 reason=enc(err.reason))


def add_unlisted(cols: _Columns, d: int, root: str, exc: OSError) -> str:
    """Record a log dir that could not be listed; returns the reason recorded."""
    reason = _reason(exc)
    cols.add(t="log_dir", d=d, name=enc(root), error_class=type(exc).__name__, reason=enc(reason))
    return reason


def write_table(cols: _Columns, header_json: str, fh: IO[bytes]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema().with_metadata({META_KEY: header_json.encode()})
    table = pa.Table.from_pydict(cols.cols, schema=schema)
    # as the compiled writer writes it (inventory_compiled): zstd level 1, no statistics (the file is read whole);
    # dictionaries only for the columns of a few distinct values
    pq.write_table(table, fh, compression="zstd", compression_level=1, write_statistics=False,
                   use_dictionary=["t", "stage", "error_class", "reason"])  # fmt: skip


# -- reading ----------------------------------------------------------------------------------------

_OSERRORS: dict[str, tuple[type[OSError], int]] = {
    "PermissionError": (PermissionError, errno.EACCES), "FileNotFoundError": (FileNotFoundError, errno.ENOENT),
    "NotADirectoryError": (NotADirectoryError, errno.ENOTDIR), "IsADirectoryError": (IsADirectoryError, errno.EISDIR),
}  # fmt: skip


def _oserror(error_class: str | None, reason: str | None, path: str) -> OSError:
    """The error as the lister raised it: its class, ``strerror`` the recorded reason, ``filename`` the path."""
    if error_class == "FileTooLarge":
        return FileTooLarge.recorded(reason or "", path)
    cls, code = _OSERRORS.get(error_class or "", (OSError, errno.EIO))
    return cls(code, reason or "", path)


def header_of(table: pa.Table) -> dict[str, Any]:
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise DecodeError("not a logdir-gc-inventory file: Parquet without the inventory header", 0)
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"inventory header: {exc}", 0) from None
    if not isinstance(header, dict):
        raise DecodeError("inventory header: not an object", 0)
    return header


def read_table(fh: IO[bytes]) -> pa.Table:
    """The whole file as a table. Raises DecodeError for a file that is not Parquet or lacks a needed column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(fh)
    except (pa.ArrowException, ValueError) as exc:
        raise DecodeError(f"inventory: not readable as Parquet: {str(exc).splitlines()[0]}", 0) from None
    missing = [n for n in arrow_schema().names if n not in table.column_names]
    if missing:
        raise DecodeError(f"inventory: columns missing: {', '.join(missing)}", 0)
    return table


def _column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist()


def _nested(table: pa.Table, name: str) -> list[list[tuple[Any, ...]]]:
    """A list<struct> column as one list of field tuples per row (no dict per element: a fleet has millions)."""
    col = table.column(name).combine_chunks()
    offsets = col.offsets.to_pylist()
    values = col.values
    fields = [values.field(i).to_pylist() for i in range(values.type.num_fields)]
    flat = list(zip(*fields, strict=True)) if fields else []
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(col))]


def sections_of(table: pa.Table) -> list[tuple[int, str, Listing | None, tuple[str, str] | None]]:
    """``(d, root, listing or None, error)`` per log dir, in file order.

    Raises DecodeError for rows that reference an unknown log dir or have an unknown type."""
    names = ("t", "d", "name", "kind", "size", "mtime_ns", "islink", "fs_total_bytes", "fs_used_bytes",
             "fs_free_bytes", "stage", "error_class", "reason", "data", *SUMMARY_COLUMNS, "fingerprint", "others",
             "contents", "read_errors")  # fmt: skip
    nested = ("others", "contents", "read_errors")
    cols = [_nested(table, n) if n in nested else _column(table, n) for n in names]
    sections: list[tuple[int, str, Listing | None, tuple[str, str] | None]] = []
    listings: dict[int, Listing] = {}
    for row_no, row in enumerate(zip(*cols, strict=True), start=1):
        t, d, name, kind, size, mtime_ns, islink, ft, fu, ff, stage, error_class, reason, data = row[:14]
        if isinstance(name, str):
            name = dec(name)
        if reason is not None:
            reason = dec(reason)
        if t == "log_dir":
            if error_class is not None:
                sections.append((d, name, None, (error_class, reason or "")))
                continue
            listing = Listing(root=name, totals=FsTotals(ft, fu, ff) if ft is not None else None)
            listings[d] = listing
            sections.append((d, name, listing, None))
            continue
        listing = listings.get(d)
        if listing is None or not isinstance(name, str):
            raise DecodeError(f"inventory row {row_no}: record for unknown log dir {d}", row_no)
        if t == "entry":
            if kind not in (0, 1, 2):
                raise DecodeError(f"inventory row {row_no}: bad kind {kind!r}", row_no)
            listing.entries[name] = _new_listed(name, KINDS[kind], size or 0, mtime_ns or 0, bool(islink))
            if data is not None:
                listing.contents[name] = data
            elif stage == "read":
                listing.read_errors[name] = _oserror(error_class, reason, listing.abs_path(name))
        elif t == "dir":
            listing.entries[name] = _new_listed(name, "directory", 0, mtime_ns or 0, bool(islink))
            if error_class is not None:
                listing.failed_dirs[name] = _oserror(error_class, reason, listing.abs_path(name))
                continue
            _add_summary(listing, name, row[14:], row_no)
        elif t == "error":
            listing.errors.append(ListingError(name, stage or "list", error_class or "OSError", reason or ""))
        else:
            raise DecodeError(f"inventory row {row_no}: unknown record type {t!r}", row_no)
    return sections


def _add_summary(listing: Listing, rel: str, values: Sequence[Any], row_no: int) -> None:
    *counts, fingerprint, others, contents, read_errors = values
    for i in (5, 6):  # min/max base offset, read as Decimal
        if counts[i] is not None:
            counts[i] = int(counts[i])
    if fingerprint is None or any(v is None for i, v in enumerate(counts) if i not in (5, 6)):
        raise DecodeError(f"inventory row {row_no}: partition dir {rel!r} without its summary", row_no)
    prefix = rel + "/"
    kept = []
    entries = listing.entries
    for name, kind, size, mtime_ns, islink in others:
        name = dec(name)
        if kind not in (0, 1, 2):
            raise DecodeError(f"inventory row {row_no}: bad kind {kind!r}", row_no)
        entries[prefix + name] = _new_listed(prefix + name, KINDS[kind], size, mtime_ns, bool(islink))
        kept.append(_new_file(name, size, mtime_ns, kind == 1, bool(islink)))
    got = {dec(name): data for name, data in contents}
    for name, data in got.items():
        listing.contents[prefix + name] = data
    for name, error_class, reason in read_errors:
        file_rel = prefix + dec(name)  # not `rel`: the summary below goes under the dir's
        listing.read_errors[file_rel] = _oserror(error_class, dec(reason or ""), listing.abs_path(file_rel))
    listing.summaries[rel] = _new_summary(*counts, fingerprint, tuple(kept), got)


def new_columns() -> _Columns:
    return _Columns()


__all__ = ["META_KEY", "VERSION", "add_listing", "add_unlisted", "header_of", "new_columns", "read_table",
           "sections_of", "write_table"]  # fmt: skip
