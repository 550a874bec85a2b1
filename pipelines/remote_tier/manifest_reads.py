"""Read Aiven's ``.rsm-manifest`` objects of a few segments, as the second witness of classification.

Runs inside the Spark task that classifies a ``(topic_id, partition)`` group (never on the driver). Each manifest is
read whole but bounded (:data:`~pipelines.remote_tier.aiven_manifest.MAX_MANIFEST_BYTES`: a listed size above it is
refused unread, and a read stops one byte past it); on a local tier the object is opened without blocking and only
if it is a regular file (a FIFO planted as a manifest never hangs the task). Whatever goes wrong, the result for that
segment is the one-line error, which makes it not plannable; nothing here raises for one object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipelines.remote_tier.aiven_manifest import MAX_MANIFEST_BYTES, ManifestWitness, parse_manifest
from pipelines.remote_tier.events import SegmentKey
from pipelines.remote_tier.listing import RemoteObjectRow
from pipelines.terminal_text import escape

__all__ = ["MANIFEST_KIND", "read_manifests"]

MANIFEST_KIND = "rsm-manifest"
_MAX_ERROR = 300


def _one_line(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return escape(text[:_MAX_ERROR])


def _read_local(loc: Any, keys: list[str]) -> list[bytes | BaseException]:
    """Each key's bytes: a regular file only, opened without blocking, refused above the bound."""
    from pipelines.kafka.bounded_read import read_regular_file

    out: list[bytes | BaseException] = []
    for key in keys:
        try:
            out.append(read_regular_file(loc.path(key), "manifest", MAX_MANIFEST_BYTES))
        except Exception as exc:  # one object's failure is its own finding's reason, never the task's
            out.append(exc)
    return out


def _read_all(loc: Any, keys: list[str]) -> list[bytes | BaseException]:
    """Each key's first ``MAX_MANIFEST_BYTES + 1`` bytes (more is refused by the parser), fetched concurrently by
    the object stores' filesystems (one ranged GET each), or the error of that key."""
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(loc.fs, LocalFileSystem):
        return _read_local(loc, keys)
    paths = [loc.path(k) for k in keys]
    return list(loc.fs.cat_ranges(paths, [0] * len(paths), [MAX_MANIFEST_BYTES + 1] * len(paths), on_error="return"))


def read_manifests(location: str, storage_options: Mapping[str, Any] | None, rows: Iterable[RemoteObjectRow],
                   segments: Iterable[SegmentKey]) -> dict[SegmentKey, ManifestWitness | str]:
    """The parsed manifest, or why it could not be read, of each of ``segments`` that has a listed manifest row
    among ``rows`` (keys relative to ``location``). A segment without a manifest object gets no entry."""
    wanted = set(segments)
    keys = {r.segment: r for r in rows if r.object_kind == MANIFEST_KIND and r.segment in wanted}
    if not keys:
        return {}
    from pipelines.remote_tier.object_listing import open_location

    out: dict[SegmentKey, ManifestWitness | str] = {}
    try:
        loc = open_location(location, storage_options)
    except Exception as exc:  # the tier cannot be opened: every manifest of the group is unreadable
        return {seg: f"the tier could not be opened to read it: {_one_line(exc)}" for seg in keys}
    small = []
    for seg, row in keys.items():
        if row.size > MAX_MANIFEST_BYTES:
            out[seg] = f"listed at {row.size} bytes, above the {MAX_MANIFEST_BYTES}-byte bound (not read)"
        else:
            small.append(seg)
    try:
        read = _read_all(loc, [keys[seg].key for seg in small])
    except Exception as exc:  # the store failed the whole batch: every manifest of it is unreadable
        read = [exc] * len(small)
    for seg, data in zip(small, read, strict=True):
        try:
            if isinstance(data, BaseException):
                raise data
            out[seg] = parse_manifest(data)
        except Exception as exc:  # one object's failure is its own finding's reason, never the task's
            out[seg] = _one_line(exc)
    return out
