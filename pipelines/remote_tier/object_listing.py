"""List a remote tier's objects through fsspec (``s3://``, ``gs://``, ``abfss://``, ``file://``), prefix by prefix.

``location`` is the plugin's root: LocalTieredStorage's ``rsm.config.dir``, or the bucket (plus an optional
folder) Aiven writes under. Aiven's ``key.prefix`` is passed apart as ``prefix`` (it is glued in front of the topic
folder and need not end in ``/``), exactly as :func:`pipelines.remote_tier.listing.parse_listing` takes it. Every
key this module yields is relative to ``location``.

The tier's *area* is ``location`` + the layout's prefix (:func:`~pipelines.remote_tier.listing.layout_prefix`).
:func:`topic_prefixes` finds its topic-level folders with one delimiter listing; :func:`list_prefix` lists one of
them recursively, so only that folder's keys are ever held (a later step fans the prefixes out in Spark tasks);
:func:`list_location` does both in this process and adds the loose objects found at the area's own level. An entry
whose size or last-modified time cannot be read is a :class:`ListingProblem`, which :func:`listing_rows` turns into
an error row (never planned), never a guessed value (a made-up old timestamp would start a grace clock).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from pipelines.remote_tier.keys import RemoteKeyError
from pipelines.remote_tier.listing import ListedObject, RemoteObjectRow, layout_prefix, parse_key, parse_listing
from pipelines.tables.object_store import S3_SCHEMES, warehouse_storage

__all__ = [
    "ListingProblem",
    "RemoteLocation",
    "list_location",
    "list_prefix",
    "listing_rows",
    "loose_objects",
    "open_location",
    "topic_prefixes",
]


@dataclass(frozen=True, slots=True)
class ListingProblem:
    """A listed entry that cannot be a :class:`ListedObject` (key relative to ``location``, what is wrong)."""

    key: str
    problem: str
    size: int = 0


@dataclass(frozen=True)
class RemoteLocation:
    """An opened ``location``: the fsspec filesystem and the root path it uses (no scheme, no trailing ``/``)."""

    fs: Any
    root: str
    url: str

    def relative(self, name: str) -> str | None:
        """``name`` (as the filesystem returns it) relative to the root, or None when it is not below the root."""
        name = self.fs._strip_protocol(name)
        head = self.root + "/"
        return name[len(head):] if name.startswith(head) else None

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}"


def open_location(location: str, storage_options: Mapping[str, Any] | None = None,
                  env: Mapping[str, str] | None = None) -> RemoteLocation:
    """The filesystem of ``location``. For ``s3://`` the warehouse's AWS conventions apply (the standard ``AWS_*``
    variables, a profile, ``storage_options`` on top: :func:`pipelines.tables.object_store.warehouse_storage`);
    other schemes get ``storage_options`` as given (their own fsspec key names)."""
    import fsspec

    scheme = urlparse(location).scheme.lower()
    options = dict(warehouse_storage(location, storage_options, env).fsspec) if scheme in S3_SCHEMES \
        else dict(storage_options or {})
    fs, root = fsspec.core.url_to_fs(location, **options)
    root = root.rstrip("/")
    if not root:
        raise ValueError(f"location {location!r} is a filesystem root, not a bucket or folder")
    return RemoteLocation(fs, root, location)


def _area(layout: str, prefix: str) -> tuple[str, str]:
    """``(folder, name start)`` of the layout's prefix: ``"a/b/kafka-"`` -> ``("a/b/", "kafka-")``."""
    head = layout_prefix(layout, prefix)
    cut = head.rfind("/") + 1
    return head[:cut], head[cut:]


def _entries(loc: RemoteLocation, folder: str) -> list[dict[str, Any]]:
    path = loc.path(folder.rstrip("/")) if folder else loc.root
    try:
        entries = loc.fs.ls(path, detail=True)
    except FileNotFoundError:
        return []
    finally:
        _forget(loc.fs, path)
    return entries


def _forget(fs: Any, path: str) -> None:
    """Drop the filesystem's cached listings of ``path`` and below (s3fs caches every folder a ``find`` saw)."""
    fs.invalidate_cache(path)
    cache = getattr(fs, "dircache", None)
    if cache:
        for key in [k for k in list(cache) if k == path or k.startswith(path + "/")]:
            cache.pop(key, None)


def topic_prefixes(loc: RemoteLocation, layout: str, prefix: str = "", exclude: str | None = None) -> list[str]:
    """The area's topic-level folders, relative to ``location``, each ending in ``/``, sorted (one delimiter
    listing: Aiven ``<prefix><topic>-<id>/``, local ``kafka-tiered-storage/<dir>/``). ``exclude``: a folder
    relative to ``location`` (the quarantine) that is never listed."""
    folder, start = _area(layout, prefix)
    out = []
    for entry in _entries(loc, folder):
        rel = loc.relative(entry["name"])
        if entry.get("type") == "directory" and rel is not None and rel.startswith(folder + start):
            rel = rel.rstrip("/") + "/"
            if exclude is None or not rel.startswith(exclude):
                out.append(rel)
    return sorted(out)


def loose_objects(loc: RemoteLocation, layout: str, prefix: str) -> Iterator[ListedObject | ListingProblem]:
    """Objects at the area's own level (not in a topic folder): the layout refuses them, they become error rows."""
    folder, start = _area(layout, prefix)
    for entry in sorted(_entries(loc, folder), key=lambda e: e["name"]):
        rel = loc.relative(entry["name"])
        if entry.get("type") != "directory" and rel is not None and rel.startswith(folder + start):
            yield _listed(rel, entry)


def list_prefix(loc: RemoteLocation, prefix_folder: str, exclude: str | None = None
                ) -> Iterator[ListedObject | ListingProblem]:  # fmt: skip
    """Every object below one topic-level folder (relative to ``location``, ending in ``/``), in key order, but
    those below ``exclude`` (a folder relative to ``location``: the quarantine).

    Only this folder's entries are held in memory (the filesystem's listing cache of it is dropped afterwards).
    """
    if not prefix_folder.endswith("/") or prefix_folder.startswith("/") or ".." in prefix_folder.split("/"):
        raise ValueError(f"topic prefix {prefix_folder!r} is not a folder relative to the location")
    path = loc.path(prefix_folder.rstrip("/"))
    try:
        found = loc.fs.find(path, detail=True)
    except FileNotFoundError:
        found = {}
    finally:
        _forget(loc.fs, path)
    for name in sorted(found):
        entry = found[name]
        if entry.get("type") == "directory":
            continue
        rel = loc.relative(entry.get("name", name))
        if rel is None:
            yield ListingProblem(str(name), f"listed name {name!r} is not below the location {loc.root!r}")
            continue
        if exclude is not None and rel.startswith(exclude):
            continue
        yield _listed(rel, entry)


def list_location(loc: RemoteLocation, layout: str, prefix: str = "", exclude: str | None = None
                  ) -> Iterator[ListedObject | ListingProblem]:  # fmt: skip
    """The whole area, prefix by prefix (what a Spark fan-out of :func:`list_prefix` yields, in one process)."""
    yield from loose_objects(loc, layout, prefix)
    for folder in topic_prefixes(loc, layout, prefix, exclude):
        yield from list_prefix(loc, folder, exclude)


def listing_rows(items: Iterable[ListedObject | ListingProblem], layout: str, prefix: str = ""
                 ) -> Iterator[RemoteObjectRow]:  # fmt: skip
    """:func:`parse_listing` over the objects; a :class:`ListingProblem` becomes an error row in its place, with the
    parsed fields of its key when the key fits the layout (so classification knows which segment it blocks)."""
    layout_prefix(layout, prefix)
    for item in items:
        if isinstance(item, ListingProblem):
            try:  # the segment its key names, when it names one: that segment is then not plannable
                k = parse_key(item.key, layout, prefix)
            except RemoteKeyError:
                yield RemoteObjectRow(item.key, item.size, -1, None, None, None, None, None, None, None, item.problem)
                continue
            yield RemoteObjectRow(item.key, item.size, -1, None, k.topic, k.topic_id, k.partition, k.segment_id,
                                  k.start_offset, k.kind, item.problem)
        else:
            yield from parse_listing((item,), layout, prefix)


def normalize_etag(etag: object) -> str | None:
    """An ETag without the quotes S3 puts around it (inventories print it bare)."""
    if etag is None:
        return None
    text = str(etag).strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text or None


def _listed(rel: str, entry: Mapping[str, Any]) -> ListedObject | ListingProblem:
    size = entry.get("size", entry.get("Size"))
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        return ListingProblem(rel, f"object {rel!r}: the listing gives no size ({size!r})")
    modified = modified_ms(entry)
    if modified is None:
        return ListingProblem(rel, f"object {rel!r}: the listing gives no last-modified time", size)
    etag = entry.get("ETag", entry.get("etag", entry.get("e_tag")))
    return ListedObject(rel, size, modified, normalize_etag(etag))


def modified_ms(entry: Mapping[str, Any]) -> int | None:
    """Epoch ms from the spellings fsspec backends use (s3fs ``LastModified``, adlfs ``last_modified``, gcsfs
    ``updated``, local ``mtime``), or None."""
    for name in ("LastModified", "last_modified", "updated", "mtime", "modified"):
        value = entry.get(name)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, dt.datetime):
            return _epoch_ms(value)
        if isinstance(value, (int, float)):
            return int(value * 1000)
        if isinstance(value, str):
            try:
                parsed = dt.datetime.fromisoformat(value)
            except ValueError:
                return None
            return _epoch_ms(parsed)
    return None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _epoch_ms(value: dt.datetime) -> int:
    """Exact epoch milliseconds (no float rounding); a naive time is UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)
