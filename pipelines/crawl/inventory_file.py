"""Bring-your-own inventory: a log dir's listing written on the broker host, ingested by the crawl.

Two formats, told apart by the file's first bytes when read: format 2 (Parquet, one row per partition dir, the
default; see :mod:`pipelines.crawl.inventory_parquet`, and :mod:`pipelines.crawl.inventory_compiled` for the writer of
local log dirs) and format 1, still read and written on request (or for an
output named ``*.jsonl[.gz|.zst]``). Format 1 is JSON Lines (``.gz``/``.zst`` compression inferred from the URL),
one record per line:

- line 1, the header: ``{"format": "logdir-gc-inventory", "version": 1, "written_at", "host", "broker_id",
  "log_dirs": [...]}``;
- per log dir ``i``: ``{"t": "log_dir", "d": i, "root", "totals", "error"}`` (``error`` set when the log dir
  could not be listed), then its ``entry`` (``rel``, ``kind``, ``size``, ``mtime_ns``, ``islink``), ``content``
  (base64 of the small files the inventory reads), ``read_error``, ``failed_dir`` and ``error`` records.

Reading it back gives the same :class:`~pipelines.crawl.listing.Listing` the listing backends produce, so the rows
are those of a direct crawl. A file of another format or a newer version is refused with ``DecodeError``.
"""

from __future__ import annotations

import base64
import io
import json
import socket
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict

from pipelines.crawl.backends.registry import backend_for, backend_name
from pipelines.crawl.inventory_compiled import FORMATS, format_for
from pipelines.crawl.listing import FsTotals, ListedEntry, Listing, ListingError, wanted_content
from pipelines.errors import DecodeError

FORMAT = "logdir-gc-inventory"
VERSION = 1
_PARQUET_MAGIC = b"PAR1"


class InventoryHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["logdir-gc-inventory"]
    version: int
    written_at: datetime
    host: str
    broker_id: int | None = None
    log_dirs: tuple[str, ...]


class _LogDirRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    t: Literal["log_dir"]
    d: int
    root: str
    totals: tuple[int, int, int] | None = None
    error: tuple[str, str] | None = None  # (error_class, reason)


@dataclass(frozen=True, slots=True)
class InventorySection:
    """One log dir of the file: its listing, or why it could not be listed."""

    root: str
    listing: Listing | None
    error: tuple[str, str] | None


@dataclass(frozen=True, slots=True)
class InventoryFile:
    header: InventoryHeader
    sections: tuple[InventorySection, ...]


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What ``write_inventory`` wrote: its format, record (format 1: lines; 2: rows) count, unlisted log dirs."""

    format: int
    records: int
    failed: tuple[tuple[str, str], ...]  # (log dir, reason)


# -- writing ----------------------------------------------------------------------------------------


def _records(index: int, url: str, storage_options: Mapping[str, Any] | None) -> Iterator[dict[str, Any]]:
    try:
        listing = backend_for(url)(url, storage_options)
    except OSError as exc:
        yield {"t": "log_dir", "d": index, "root": url, "totals": None,
               "error": [type(exc).__name__, str(exc.strerror or exc)]}  # fmt: skip
        return
    try:
        t = listing.totals
        totals = [t.total_bytes, t.used_bytes, t.free_bytes] if t else None
        yield {"t": "log_dir", "d": index, "root": listing.root, "totals": totals, "error": None}
        for e in listing.entries.values():
            yield {"t": "entry", "d": index, "rel": e.rel, "kind": e.kind, "size": e.size, "mtime_ns": e.mtime_ns,
                   "islink": e.islink}  # fmt: skip
        for rel, exc in listing.failed_dirs.items():
            yield {"t": "failed_dir", "d": index, "rel": rel, "error_class": type(exc).__name__,
                   "reason": str(exc.strerror or exc)}  # fmt: skip
        for err in listing.errors:
            yield {"t": "error", "d": index, "rel": err.rel, "stage": err.stage, "error_class": err.error_class,
                   "reason": err.reason}  # fmt: skip
        for e in listing.entries.values():
            if e.kind != "file" or not wanted_content(e.rel):
                continue
            try:
                data = listing.contents.get(e.rel)
                if data is None:
                    if e.rel in listing.read_errors:
                        raise listing.read_errors[e.rel]
                    if listing.reader is None:
                        continue
                    data = listing.reader(listing.abs_path(e.rel))
            except OSError as exc:
                yield {"t": "read_error", "d": index, "rel": e.rel, "error_class": type(exc).__name__,
                       "reason": str(exc.strerror or exc)}  # fmt: skip
                continue
            yield {"t": "content", "d": index, "rel": e.rel, "b64": base64.b64encode(data).decode("ascii")}
    finally:
        listing.close()


def write_inventory(
    log_dirs: Sequence[str],
    out_url: str,
    *,
    broker_id: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    out_storage_options: Mapping[str, Any] | None = None,
    format: int | None = None,
    compiled: bool = True,
) -> WriteResult:
    """List each log dir (through the listing backends) and write the inventory file.

    ``format``: 1 or 2; None picks by the output's name (``format_for``). Format 2 of local log dirs is written by
    the compiled writer (:mod:`pipelines.crawl.inventory_compiled`) where it loads and ``compiled`` is True; else
    with pyarrow, asking the backend for partition dirs summed up while listed (the compiled lister, where it
    loads).

    Raises:
        OSError: the output cannot be written. A log dir that cannot be listed is recorded in the file instead.
    """
    fmt = format_for(out_url) if format is None else format
    if fmt not in FORMATS:
        raise ValueError(f"inventory format {fmt} is not one of {FORMATS}")
    if fmt == 2 and compiled and not storage_options:  # the compiled writer, for local log dirs
        from pipelines.crawl import inventory_compiled

        compiled = inventory_compiled.write(log_dirs, out_url, broker_id=broker_id, format=2,
                                            out_storage_options=out_storage_options)  # fmt: skip
        if compiled is not None:
            return WriteResult(2, *compiled)
    header = InventoryHeader(
        format=FORMAT, version=fmt, written_at=datetime.now(timezone.utc), host=socket.gethostname(),
        broker_id=broker_id, log_dirs=tuple(log_dirs),
    )  # fmt: skip
    opts = dict(out_storage_options or {})
    if fmt == 2:
        return _write_parquet(header, log_dirs, out_url, storage_options, opts)
    import fsspec

    count = 1
    failed: list[tuple[str, str]] = []
    with fsspec.open(out_url, "wt", compression="infer", encoding="utf-8", **opts) as fh:
        fh.write(header.model_dump_json() + "\n")
        for index, url in enumerate(log_dirs):
            for record in _records(index, url, storage_options):
                if record["t"] == "log_dir" and record["error"] is not None:
                    failed.append((url, record["error"][1]))
                fh.write(json.dumps(record, separators=(",", ":")) + "\n")
                count += 1
    return WriteResult(1, count, tuple(failed))


def _write_parquet(header: InventoryHeader, log_dirs: Sequence[str], out_url: str,
                   storage_options: Mapping[str, Any] | None, out_opts: dict[str, Any]) -> WriteResult:  # fmt: skip

    from pipelines.crawl import inventory_parquet as v2
    from pipelines.crawl.backends.registry import SUMMARIZING_BACKENDS

    cols = v2.new_columns()
    failed: list[tuple[str, str]] = []
    for index, url in enumerate(log_dirs):
        extra = {"summarize": True} if backend_name(url) in SUMMARIZING_BACKENDS else {}
        try:
            listing = backend_for(url)(url, storage_options, **extra)
        except OSError as exc:
            failed.append((url, v2.add_unlisted(cols, index, url, exc)))
            continue
        try:
            v2.add_listing(cols, index, listing)
        finally:
            listing.close()
    if "://" in out_url or out_opts:
        import fsspec

        out = fsspec.open(out_url, "wb", **out_opts)
    else:  # a plain path: no fsspec import on the broker host
        out = open(out_url, "wb")  # noqa: SIM115 (closed by the with below)
    with out as fh:
        v2.write_table(cols, header.model_dump_json(), fh)
    return WriteResult(2, cols.rows, tuple(failed))


# -- reading ----------------------------------------------------------------------------------------


def _field(record: Mapping[str, Any], key: str, kind: type, line_no: int) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DecodeError(f"inventory line {line_no}: {key!r} must be {kind.__name__}", line_no)
    return value


_OSERRORS: dict[str, type[OSError]] = {
    "PermissionError": PermissionError, "FileNotFoundError": FileNotFoundError,
    "NotADirectoryError": NotADirectoryError, "IsADirectoryError": IsADirectoryError,
}  # fmt: skip


MAX_LINE_CHARS = 4 * 1024 * 1024
"""Characters one inventory line may have (a record holds one small file's content, at most 1 MiB, base64'd): the
file is streamed, so the bound is per line."""


def parse_inventory(lines: IO[str]) -> InventoryFile:
    """Parse an inventory from text lines.

    Raises:
        DecodeError: not an inventory file, a newer version, or a malformed line (with its line number).
    """
    first = lines.readline(MAX_LINE_CHARS + 1)
    if len(first) > MAX_LINE_CHARS:
        raise DecodeError(f"not a {FORMAT} file: its first line is longer than {MAX_LINE_CHARS} characters", 1)
    try:
        header = InventoryHeader.model_validate_json(first)
    except ValueError as exc:
        raise DecodeError(f"not a {FORMAT} file: {str(exc).splitlines()[0]}", 1) from None
    if header.version > VERSION:
        raise DecodeError(f"inventory version {header.version} is newer than supported {VERSION}", 1)
    listings: dict[int, Listing] = {}
    sections: list[tuple[int, str, tuple[str, str] | None]] = []
    for line_no, line in enumerate(iter(lambda: lines.readline(MAX_LINE_CHARS + 1), ""), start=2):
        if len(line) > MAX_LINE_CHARS:
            raise DecodeError(f"inventory line {line_no} is longer than {MAX_LINE_CHARS} characters", line_no)
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: a line nested too deep
            raise DecodeError(f"inventory line {line_no}: {exc}", line_no) from None
        t = record.get("t") if isinstance(record, dict) else None
        if t == "log_dir":
            try:
                rec = _LogDirRecord.model_validate(record)
            except ValueError as exc:
                raise DecodeError(f"inventory line {line_no}: {str(exc).splitlines()[0]}", line_no) from None
            sections.append((rec.d, rec.root, rec.error))
            if rec.error is None:
                listing = Listing(root=rec.root, totals=FsTotals(*rec.totals) if rec.totals else None)
                listings[rec.d] = listing
            continue
        d = _field(record, "d", int, line_no)
        listing = listings.get(d)
        if listing is None:
            raise DecodeError(f"inventory line {line_no}: record for unknown log dir {d}", line_no)
        rel = _field(record, "rel", str, line_no)
        if t == "entry":
            kind = _field(record, "kind", str, line_no)
            if kind not in ("file", "directory", "other"):
                raise DecodeError(f"inventory line {line_no}: bad kind {kind!r}", line_no)
            listing.add(ListedEntry(rel, kind, _field(record, "size", int, line_no),
                                    _field(record, "mtime_ns", int, line_no), bool(record.get("islink"))))  # fmt: skip
        elif t == "content":
            try:
                listing.contents[rel] = base64.b64decode(_field(record, "b64", str, line_no), validate=True)
            except ValueError:
                raise DecodeError(f"inventory line {line_no}: bad base64", line_no) from None
        elif t in ("read_error", "failed_dir"):
            cls = _OSERRORS.get(_field(record, "error_class", str, line_no), OSError)
            exc = cls(_field(record, "reason", str, line_no), listing.abs_path(rel))
            (listing.read_errors if t == "read_error" else listing.failed_dirs)[rel] = exc
        elif t == "error":
            listing.errors.append(ListingError(rel, _field(record, "stage", str, line_no),
                                               _field(record, "error_class", str, line_no),
                                               _field(record, "reason", str, line_no)))  # fmt: skip
        else:
            raise DecodeError(f"inventory line {line_no}: unknown record type {t!r}", line_no)
    return InventoryFile(
        header, tuple(InventorySection(root, listings.get(d), error) for d, root, error in sections)
    )


def read_inventory(url: str, storage_options: Mapping[str, Any] | None = None) -> InventoryFile:
    """Read an inventory file (format 1 or 2, told apart by its first bytes) through fsspec.

    Raises:
        OSError: it cannot be read. DecodeError: see ``parse_inventory`` and ``parse_parquet_inventory``.
    """
    import fsspec
    from fsspec.compression import compr
    from fsspec.utils import infer_compression

    with fsspec.open(url, "rb", **dict(storage_options or {})) as raw:  # one open: one request on object storage
        magic = raw.read(4)
        raw.seek(0)
        if magic == _PARQUET_MAGIC:
            return parse_parquet_inventory(raw)
        codec = infer_compression(url)  # format 1 may be .gz/.zst, told by its name as fsspec does
        plain = raw if codec is None else compr[codec](raw, mode="rb")
        return parse_inventory(io.TextIOWrapper(plain, encoding="utf-8"))


def parse_parquet_inventory(fh: IO[bytes]) -> InventoryFile:
    """Parse a format-2 inventory.

    Raises:
        DecodeError: not an inventory, a newer version, or a row that does not fit (with its row number).
    """
    from pipelines.crawl import inventory_parquet as v2

    table = v2.read_table(fh)
    try:
        header = InventoryHeader.model_validate(v2.header_of(table))
    except ValueError as exc:
        raise DecodeError(f"not a {FORMAT} file: {str(exc).splitlines()[0]}", 0) from None
    if header.version > v2.VERSION:
        raise DecodeError(f"inventory version {header.version} is newer than supported {v2.VERSION}", 0)
    sections = v2.sections_of(table)
    return InventoryFile(header, tuple(InventorySection(root, listing, error) for _, root, listing, error in sections))
