"""A remote tier's listing read from an AWS S3 Inventory report instead of listing the bucket.

A bucket of 100M objects takes 100k ``ListObjectsV2`` pages; the storage team usually already has a daily
inventory. The report (format checked against the S3 user guide, "Locating your inventory list" / "Inventory
manifest"): ``manifest.json`` with ``sourceBucket``, ``destinationBucket`` (``arn:aws:s3:::<name>``), ``version``,
``creationTimestamp`` (epoch ms as text), ``fileFormat`` (``CSV``, ``ORC`` or ``Parquet``), ``fileSchema`` and
``files[]`` (``key`` in the destination bucket, ``size``, ``MD5checksum``). CSV data files are gzip'd, have no
header, their columns are ``fileSchema``'s names (``"Bucket, Key, Size, LastModifiedDate, ETag, ..."``) and the
key is URL-encoded (space as ``+``); Parquet files carry the snake-case columns (``bucket``, ``key``, ``size``,
``last_modified_date`` as a millisecond timestamp, ``e_tag``, ``is_latest``, ``is_delete_marker``). ORC is refused.

Reading streams: the manifest is size-bounded, each data file is read batch by batch; only keys of the tier's area
(``location``'s folder + the layout's prefix) are yielded, as :class:`ListedObject` relative to ``location``.
Noncurrent versions and delete markers are skipped (a bucket listing does not show them). A row that cannot be
read (too few columns, no size, a bad date, an undecodable key) stops the read with one :class:`InventoryError`:
a report missing a row would make a segment look like it lacks an object.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlparse

from pipelines.remote_tier.listing import ListedObject, layout_prefix
from pipelines.remote_tier.object_listing import modified_ms, normalize_etag
from pipelines.tables.object_store import S3_SCHEMES, warehouse_storage

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MAX_MANIFEST_BYTES",
    "InventoryError",
    "InventoryManifest",
    "InventoryReport",
    "InventoryStats",
    "inventory_batches",
    "listed_batches",
    "open_inventory",
    "parse_manifest",
    "read_inventory",
    "read_inventory_file",
    "read_manifest",
]

MAX_MANIFEST_BYTES = 16 << 20
"""A manifest lists data files (about 200 bytes each); a larger one is refused unread."""
_FORMATS = {"csv": "CSV", "parquet": "Parquet"}
_CSV_COLUMNS = {"bucket": "Bucket", "key": "Key", "size": "Size", "modified": "LastModifiedDate", "etag": "ETag",
                "latest": "IsLatest", "delete_marker": "IsDeleteMarker"}
_PARQUET_COLUMNS = {"bucket": "bucket", "key": "key", "size": "size", "modified": "last_modified_date",
                    "etag": "e_tag", "latest": "is_latest", "delete_marker": "is_delete_marker"}
_REQUIRED = ("bucket", "key", "size", "modified")


class InventoryError(ValueError):
    """The inventory cannot be used; the message is one line naming the file and the problem."""


@dataclass(frozen=True)
class InventoryManifest:
    source_bucket: str
    destination_bucket: str
    file_format: str  # "CSV" or "Parquet"
    schema: tuple[str, ...]  # CSV column names in order (empty for Parquet: its files carry their schema)
    files: tuple[str, ...]  # data file keys in the destination bucket
    creation_ms: int | None


@dataclass
class InventoryStats:
    """What a read saw: ``rows`` read, ``kept`` (yielded), ``outside`` (not in the tier's area), ``not_current``
    (noncurrent versions and delete markers), ``folder_markers``."""

    rows: int = 0
    kept: int = 0
    outside: int = 0
    not_current: int = 0
    folder_markers: int = 0
    files: list[str] = field(default_factory=list)



def _parquet_columns(pf: Any, path: str) -> list[str]:
    """The inventory columns a Parquet data file has, in read order; InventoryError when a required one is missing."""
    names = set(pf.schema_arrow.names)
    missing = [_PARQUET_COLUMNS[c] for c in _REQUIRED if _PARQUET_COLUMNS[c] not in names]
    if missing:
        raise InventoryError(f"{path}: no column {', '.join(missing)}")
    return [c for c in _PARQUET_COLUMNS.values() if c in names]

def parse_manifest(data: bytes, what: str = "manifest.json") -> InventoryManifest:
    """Parse ``manifest.json`` bytes.

    Raises:
        InventoryError: too large, not JSON, a field missing or of the wrong type, ORC or another format.
    """
    if len(data) > MAX_MANIFEST_BYTES:
        raise InventoryError(f"{what}: larger than {MAX_MANIFEST_BYTES} bytes, refused")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InventoryError(f"{what}: not a JSON document ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise InventoryError(f"{what}: not a JSON object")
    text = {k: doc.get(k) for k in ("sourceBucket", "destinationBucket", "fileFormat", "fileSchema")}
    for key, value in text.items():
        if not isinstance(value, str) or not value:
            raise InventoryError(f"{what}: {key} missing or not a string")
    file_format = _FORMATS.get(text["fileFormat"].lower())
    if text["fileFormat"].lower() == "orc":
        raise InventoryError(f"{what}: fileFormat ORC is not supported; configure the inventory as CSV or Parquet")
    if file_format is None:
        raise InventoryError(f"{what}: fileFormat {text['fileFormat']!r} is not CSV or Parquet")
    files = doc.get("files")
    if not isinstance(files, list) or not files:
        raise InventoryError(f"{what}: files missing or empty")
    keys = []
    for entry in files:
        key = entry.get("key") if isinstance(entry, dict) else None
        if not isinstance(key, str) or not key or key.startswith("/") or ".." in key.split("/"):
            raise InventoryError(f"{what}: a files[] entry has no usable key ({str(entry)[:80]!r})")
        keys.append(key)
    schema: tuple[str, ...] = ()
    if file_format == "CSV":
        schema = tuple(name.strip() for name in text["fileSchema"].split(","))
        missing = [_CSV_COLUMNS[c] for c in _REQUIRED if _CSV_COLUMNS[c] not in schema]
        if missing:
            raise InventoryError(f"{what}: fileSchema lacks {', '.join(missing)} (enable Size and LastModifiedDate)")
    created = doc.get("creationTimestamp")
    creation_ms = int(created) if isinstance(created, str) and created.isdigit() else None
    destination = text["destinationBucket"].removeprefix("arn:aws:s3:::")
    return InventoryManifest(text["sourceBucket"], destination, file_format, schema, tuple(keys), creation_ms)


def read_manifest(fs: Any, path: str) -> InventoryManifest:
    """Read at most :data:`MAX_MANIFEST_BYTES` + 1 bytes of ``path`` and parse them."""
    try:
        with fs.open(path, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise InventoryError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    return parse_manifest(data, path)


@dataclass(frozen=True)
class InventoryReport:
    """An opened report: where its data files are and which keys of it belong to the tier's area (picklable: a
    Spark task reads one data file with :func:`read_inventory_file`)."""

    manifest_url: str
    fs_options: Mapping[str, Any]
    manifest: InventoryManifest
    data_root: str
    area: str
    cut: int

    def file_path(self, key: str) -> str:
        return f"{self.data_root}/{key}"


def open_inventory(manifest_url: str, location: str, layout: str, prefix: str = "", *,
                   storage_options: Mapping[str, Any] | None = None, data_root: str | None = None) -> InventoryReport:
    """Read and check the manifest (see :func:`read_inventory`).

    Raises:
        InventoryError: the manifest is unusable, or the inventory is of another bucket.
    """
    import fsspec

    parsed = urlparse(location)
    if parsed.scheme.lower() not in S3_SCHEMES or not parsed.netloc:
        raise InventoryError(f"location {location!r}: an S3 Inventory lists an s3:// bucket")
    folder = parsed.path.strip("/")
    area = (folder + "/" if folder else "") + layout_prefix(layout, prefix)
    cut = len(folder) + 1 if folder else 0
    scheme = urlparse(manifest_url).scheme.lower()
    options = dict(warehouse_storage(manifest_url, storage_options).fsspec) if scheme in S3_SCHEMES \
        else dict(storage_options or {})
    fs, manifest_path = fsspec.core.url_to_fs(manifest_url, **options)
    manifest = read_manifest(fs, manifest_path)
    if manifest.source_bucket != parsed.netloc:
        raise InventoryError(f"{manifest_url}: an inventory of bucket {manifest.source_bucket!r}, "
                             f"not of {parsed.netloc!r}")
    if data_root is None:
        if scheme not in S3_SCHEMES | {"gs", "gcs"}:
            raise InventoryError(f"{manifest_url}: give the root of the report's data files (data_root)")
        data_root = manifest.destination_bucket
    else:
        data_root = fs._strip_protocol(data_root).rstrip("/")
    return InventoryReport(manifest_url, options, manifest, data_root, area, cut)


def read_inventory_file(report: InventoryReport, key: str, *, stats: InventoryStats | None = None,
                        batch_rows: int = 65536, exclude: str | None = None) -> Iterator[ListedObject]:
    """The objects of the tier's area in one data file of ``report`` (``key`` as ``files[]`` names it).

    ``exclude``: a folder relative to ``location`` whose keys are skipped (counted ``outside``): the quarantine.

    Raises:
        InventoryError: the data file is unusable or holds a row of another bucket.
    """
    import fsspec

    fs, _ = fsspec.core.url_to_fs(report.manifest_url, **report.fs_options)
    manifest = report.manifest
    stats = stats if stats is not None else InventoryStats()
    path = report.file_path(key)
    stats.files.append(key)
    reader = _csv_rows(fs, path, manifest.schema) if manifest.file_format == "CSV" \
        else _parquet_rows(fs, path, batch_rows)
    excluded = None if exclude is None else _full_key(report, exclude)
    for bucket, full_key, size, modified, etag in reader:
        stats.rows += 1
        if bucket is None:  # a noncurrent version or a delete marker
            stats.not_current += 1
            continue
        if bucket != manifest.source_bucket:
            raise InventoryError(f"{path}: a row of bucket {bucket!r} in the inventory of "
                                 f"{manifest.source_bucket!r}")
        if not full_key.startswith(report.area) or (excluded is not None and full_key.startswith(excluded)):
            stats.outside += 1
            continue
        if full_key.endswith("/") and size == 0:
            stats.folder_markers += 1
            continue
        stats.kept += 1
        yield ListedObject(full_key[report.cut:], size, modified, etag)


def _full_key(report: InventoryReport, relative: str) -> str:
    """A key relative to ``location`` as the bucket names it."""
    folder = report.area[: report.cut]
    return folder + relative


def read_inventory(manifest_url: str, location: str, layout: str, prefix: str = "", *,
                   storage_options: Mapping[str, Any] | None = None, data_root: str | None = None,
                   stats: InventoryStats | None = None, batch_rows: int = 65536,
                   exclude: str | None = None) -> Iterator[ListedObject]:
    """The objects of the tier's area listed by the inventory ``manifest_url`` describes, file by file.

    ``location`` (``s3://bucket[/folder]``) must be in the inventory's source bucket. Data files are read from the
    destination bucket on the manifest's filesystem, or below ``data_root`` (a copy of the report elsewhere).
    ``exclude`` as in :func:`read_inventory_file`.

    Raises:
        InventoryError: the manifest or a data file is unusable, or the inventory is of another bucket.
    """
    report = open_inventory(manifest_url, location, layout, prefix, storage_options=storage_options,
                            data_root=data_root)
    stats = stats if stats is not None else InventoryStats()
    for key in report.manifest.files:
        yield from read_inventory_file(report, key, stats=stats, batch_rows=batch_rows, exclude=exclude)


_Row = tuple[str | None, str, int, int, str | None]


def _csv_rows(fs: Any, path: str, schema: Sequence[str]) -> Iterator[_Row]:
    index = {name: i for i, name in enumerate(schema)}
    col = {ours: index.get(theirs) for ours, theirs in _CSV_COLUMNS.items()}
    width = len(schema)
    line = 0
    try:
        with fs.open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as unzipped, \
                io.TextIOWrapper(unzipped, encoding="utf-8", newline="") as text:
            for line, fields in enumerate(csv.reader(text), start=1):
                if len(fields) != width:
                    raise InventoryError(f"{path} line {line}: {len(fields)} columns, fileSchema names {width}")
                if _not_current(_cell(fields, col["latest"]), _cell(fields, col["delete_marker"])):
                    yield None, "", 0, 0, None
                    continue
                try:
                    key = unquote_plus(fields[col["key"]], errors="strict")
                except UnicodeDecodeError:
                    raise InventoryError(f"{path} line {line}: the key is not URL-encoded UTF-8") from None
                size_text = fields[col["size"]]
                if not size_text.isascii() or not size_text.isdigit():
                    raise InventoryError(f"{path} line {line}: size {size_text[:40]!r} is not a byte count")
                modified = modified_ms({"LastModified": fields[col["modified"]]})
                if modified is None or not key:
                    raise InventoryError(f"{path} line {line}: no key or no readable LastModifiedDate")
                yield fields[col["bucket"]], key, int(size_text), modified, normalize_etag(_cell(fields, col["etag"]))
    except InventoryError:
        raise
    except (OSError, EOFError, zlib.error, csv.Error, UnicodeDecodeError) as exc:
        raise InventoryError(f"{path} after line {line}: unreadable gzip'd CSV ({type(exc).__name__}: {exc})"
                             ) from None


def _cell(fields: Sequence[str], i: int | None) -> str | None:
    return None if i is None else fields[i]


def _not_current(latest: object, delete_marker: object) -> bool:
    return str(latest).lower() == "false" or str(delete_marker).lower() == "true"


def _parquet_rows(fs: Any, path: str, batch_rows: int) -> Iterator[_Row]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with fs.open(path, "rb") as raw:
            pf = pq.ParquetFile(raw)
            wanted = _parquet_columns(pf, path)
            seen = 0
            for batch in pf.iter_batches(batch_size=batch_rows, columns=wanted):
                cols = {name: batch.column(name) for name in wanted}
                modified = cols["last_modified_date"]
                if pa.types.is_timestamp(modified.type):
                    modified = modified.cast(pa.timestamp("ms", tz=modified.type.tz)).cast(pa.int64())
                elif not pa.types.is_integer(modified.type):
                    raise InventoryError(f"{path}: last_modified_date is {modified.type}, not a timestamp")
                values = {name: c.to_pylist() for name, c in cols.items()}
                values["last_modified_date"] = modified.to_pylist()
                latest = values.get("is_latest") or [None] * batch.num_rows
                marker = values.get("is_delete_marker") or [None] * batch.num_rows
                etags = values.get("e_tag") or [None] * batch.num_rows
                for i, (bucket, key, size, mod) in enumerate(zip(values["bucket"], values["key"], values["size"],
                                                                 values["last_modified_date"], strict=True)):
                    if latest[i] is False or marker[i] is True:
                        yield None, "", 0, 0, None
                        continue
                    if not isinstance(key, str) or not key or not isinstance(size, int) or size < 0 or mod is None:
                        raise InventoryError(f"{path} row {seen + i + 1}: no key, size or last_modified_date")
                    yield bucket, key, size, mod, normalize_etag(etags[i])
                seen += batch.num_rows
    except InventoryError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise InventoryError(f"{path}: unreadable Parquet ({type(exc).__name__}: {exc})") from None


LISTED_SCHEMA_FIELDS = (("key", "string"), ("size", "int64"), ("last_modified_ms", "int64"), ("etag", "string"))
"""The columns of :func:`inventory_batches`: what :class:`ListedObject` holds, one Arrow column each."""


def _listed_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in LISTED_SCHEMA_FIELDS])


def inventory_batches(report: InventoryReport, key: str, *, stats: InventoryStats | None = None,
                      batch_rows: int = 65536, exclude: str | None = None) -> Iterator[pa.RecordBatch]:
    """:func:`read_inventory_file` as Arrow batches (:data:`LISTED_SCHEMA_FIELDS`): the same objects, in the same
    order, the same :class:`InventoryError` after the same rows. A Parquet file of the usual column types is checked
    and filtered a batch at a time in Arrow; CSV and unusual column types go through the row reader."""
    import fsspec

    stats = stats if stats is not None else InventoryStats()
    if report.manifest.file_format == "Parquet":
        fs, _ = fsspec.core.url_to_fs(report.manifest_url, **report.fs_options)
        fast = _parquet_batches(fs, report, key, stats, batch_rows, exclude)
        if fast is not None:
            yield from fast
            return
    yield from listed_batches(read_inventory_file(report, key, stats=stats, batch_rows=batch_rows, exclude=exclude),
                            batch_rows)


def listed_batches(objects: Iterable[ListedObject], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """``objects`` as Arrow batches of at most ``batch_rows`` rows (:data:`LISTED_SCHEMA_FIELDS`)."""
    import pyarrow as pa

    schema = _listed_schema()
    chunk: list[ListedObject] = []

    def batch() -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([pa.array([o.key for o in chunk], pa.string()),
                                           pa.array([o.size for o in chunk], pa.int64()),
                                           pa.array([o.last_modified_ms for o in chunk], pa.int64()),
                                           pa.array([o.etag for o in chunk], pa.string())], schema=schema)

    for obj in objects:
        chunk.append(obj)
        if len(chunk) == batch_rows:
            yield batch()
            chunk = []
    if chunk:
        yield batch()


def _usual_types(schema: pa.Schema) -> bool:
    """The column types the Arrow reader handles exactly as the row reader (others go through the row reader)."""
    import pyarrow as pa

    def is_(name: str, test: Any) -> bool:
        return name not in schema.names or test(schema.field(name).type)

    text = pa.types.is_string
    return (is_("bucket", text) and is_("key", text) and is_("e_tag", text)
            and is_("size", lambda t: pa.types.is_integer(t) and not pa.types.is_uint64(t))
            and is_("last_modified_date", lambda t: pa.types.is_timestamp(t) or pa.types.is_int64(t))
            and is_("is_latest", pa.types.is_boolean) and is_("is_delete_marker", pa.types.is_boolean))


def _parquet_batches(fs: Any, report: InventoryReport, key: str, stats: InventoryStats, batch_rows: int,
                     exclude: str | None) -> Iterator[pa.RecordBatch] | None:
    """The Arrow path of :func:`inventory_batches`, or None when the file's column types are unusual."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = report.file_path(key)
    stats.files.append(key)
    try:
        raw = fs.open(path, "rb")
        pf = pq.ParquetFile(raw)
    except InventoryError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise InventoryError(f"{path}: unreadable Parquet ({type(exc).__name__}: {exc})") from None
    if not _usual_types(pf.schema_arrow):
        raw.close()
        stats.files.pop()  # the row reader counts it
        return None
    return _parquet_batches_of(raw, pf, path, report, key, stats, batch_rows, exclude)


def _parquet_batches_of(raw: Any, pf: Any, path: str, report: InventoryReport, key: str, stats: InventoryStats,
                        batch_rows: int, exclude: str | None) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.compute as pc

    manifest = report.manifest
    excluded = None if exclude is None else _full_key(report, exclude)
    schema = _listed_schema()
    try:
        with raw:
            wanted = _parquet_columns(pf, path)
            seen = 0
            for batch in pf.iter_batches(batch_size=batch_rows, columns=wanted):
                n = batch.num_rows
                modified = batch.column("last_modified_date")
                if pa.types.is_timestamp(modified.type):
                    modified = modified.cast(pa.timestamp("ms", tz=modified.type.tz)).cast(pa.int64())
                bucket, full_key, size = batch.column("bucket"), batch.column("key"), batch.column("size")
                size = size.cast(pa.int64())

                def flag(name: str, value: bool, rows: int = n, b: pa.RecordBatch = batch) -> pa.Array:
                    if name not in b.schema.names:
                        return pa.array([False] * rows)
                    return pc.fill_null(pc.equal(b.column(name), value), False)

                current = pc.invert(pc.or_(flag("is_latest", False), flag("is_delete_marker", True)))
                invalid = pc.and_(current, pc.fill_null(pc.or_kleene(
                    pc.or_kleene(pc.is_null(full_key), pc.equal(full_key, "")),
                    pc.or_kleene(pc.or_kleene(pc.is_null(size), pc.less(size, 0)), pc.is_null(modified))), True))
                foreign = pc.and_(pc.and_(current, pc.invert(invalid)),
                                  pc.fill_null(pc.not_equal(bucket, manifest.source_bucket), False))
                bad = pc.or_(invalid, foreign)
                first_bad = pc.index(bad, True).as_py()
                upto = n if first_bad < 0 else first_bad
                # a row refused for its bucket was counted read (as by the row reader), an unreadable one not
                stats.rows += n if first_bad < 0 else first_bad + int(foreign[first_bad].as_py())
                take = pc.and_(current, pc.is_valid(bucket)).slice(0, upto)
                stats.not_current += upto - pc.sum(take.cast(pa.int64())).as_py() if upto else 0
                keys = full_key.slice(0, upto)
                inside = pc.starts_with(keys, report.area)
                if excluded is not None:
                    inside = pc.and_(inside, pc.invert(pc.starts_with(keys, excluded)))
                inside = pc.and_(take, inside)
                marker = pc.and_(pc.ends_with(keys, "/"), pc.equal(size.slice(0, upto), 0))
                keep = pc.and_(inside, pc.invert(marker))
                kept = int(pc.sum(keep.cast(pa.int64())).as_py() or 0)
                stats.folder_markers += int(pc.sum(pc.and_(inside, marker).cast(pa.int64())).as_py() or 0)
                stats.outside += int(pc.sum(pc.and_(take, pc.invert(inside)).cast(pa.int64())).as_py() or 0)
                stats.kept += kept
                if kept:
                    etags = batch.column("e_tag").slice(0, upto).filter(keep) if "e_tag" in wanted \
                        else pa.nulls(kept, pa.string())
                    yield pa.RecordBatch.from_arrays(
                        [pc.utf8_slice_codeunits(keys.filter(keep), report.cut), size.slice(0, upto).filter(keep),
                         modified.slice(0, upto).filter(keep), _normalize_etags(etags)], schema=schema)
                if first_bad >= 0:
                    if invalid[first_bad].as_py():
                        raise InventoryError(f"{path} row {seen + first_bad + 1}: no key, size or last_modified_date")
                    raise InventoryError(f"{path}: a row of bucket {bucket[first_bad].as_py()!r} in the inventory "
                                         f"of {manifest.source_bucket!r}")
                seen += n
    except InventoryError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise InventoryError(f"{path}: unreadable Parquet ({type(exc).__name__}: {exc})") from None


def _normalize_etags(etags: pa.Array) -> pa.Array:
    """:func:`normalize_etag` over an array: bare and quoted hex-like ETags in Arrow, any other one in Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bare = pc.match_substring_regex(etags, r"^[0-9A-Za-z-]+$")
    quoted = pc.match_substring_regex(etags, r'^"[0-9A-Za-z-]+"$')
    plain = pc.fill_null(pc.or_(bare, quoted), True)  # a null ETag stays null
    out = pc.if_else(pc.fill_null(quoted, False), pc.utf8_slice_codeunits(etags, 1, -1), etags)
    if pc.all(plain).as_py() is not False:
        return out
    others = pc.invert(plain)
    return pc.replace_with_mask(out, others, pa.array([normalize_etag(e) for e in etags.filter(others).to_pylist()],
                                                      pa.string()))
