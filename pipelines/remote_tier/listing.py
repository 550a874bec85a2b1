"""A remote listing, parsed: one row per object key, an ``error`` instead of the parsed fields when it fits no layout.

Keys are relative to the configured ``location`` (the plugin's root: Aiven's bucket or storage root,
LocalTieredStorage's ``rsm.config.dir``). The layout adds its own prefix: Aiven's configurable ``key.prefix``
(``prefix=``), LocalTieredStorage's fixed ``kafka-tiered-storage/``. A key outside that prefix, a folder marker
(a key ending in ``/``) or any key the layout's parser refuses becomes an error row; error rows are never planned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.keys import RemoteKeyError, RemoteObjectKey
from pipelines.remote_tier.layout_aiven import parse_aiven_key
from pipelines.remote_tier.layout_local import LOCAL_ROOT, parse_local_key

__all__ = ["LAYOUTS", "ListedObject", "RemoteObjectRow", "layout_prefix", "parse_key", "parse_listing"]

_PARSERS: dict[str, Callable[[str], RemoteObjectKey]] = {
    "aiven": parse_aiven_key,
    "local_tiered_storage": parse_local_key,
}
LAYOUTS: Mapping[str, Callable[[str], RemoteObjectKey]] = MappingProxyType(_PARSERS)
"""``remote_tier.layout`` name -> key parser (read-only)."""


@dataclass(frozen=True, slots=True)
class ListedObject:
    """One object as a listing reports it. ``last_modified_ms`` is epoch milliseconds."""

    key: str
    size: int
    last_modified_ms: int
    etag: str | None = None


@dataclass(frozen=True, slots=True)
class RemoteObjectRow:
    """A ``remote_objects`` row: the listed object plus what its key says, or ``error`` (and no parsed fields)."""

    key: str
    size: int
    last_modified_ms: int
    etag: str | None
    topic: str | None
    topic_id: Uuid | None
    partition: int | None
    segment_id: Uuid | None
    start_offset: int | None
    object_kind: str | None
    error: str | None = None

    def as_row(self) -> dict[str, object]:
        """The ``remote_objects`` columns (ids as Kafka's text, ``last_modified`` in epoch ms)."""
        return {"key": self.key, "size": self.size, "last_modified": self.last_modified_ms, "etag": self.etag,
                "topic": self.topic, "topic_id": None if self.topic_id is None else str(self.topic_id),
                "partition": self.partition,
                "segment_id": None if self.segment_id is None else str(self.segment_id),
                "start_offset": self.start_offset, "object_kind": self.object_kind, "error": self.error}

    @property
    def segment(self) -> tuple[Uuid, int, Uuid] | None:
        """``(topic_id, partition, segment_id)``, the key a segment's objects and metadata records share."""
        if self.error is not None:
            return None
        return self.named_segment

    @property
    def named_segment(self) -> tuple[Uuid, int, Uuid] | None:
        """The segment the key names, error row or not (an error row of a parsed key still names one)."""
        if self.topic_id is None or self.segment_id is None or self.partition is None:
            return None
        return (self.topic_id, self.partition, self.segment_id)


def layout_prefix(layout: str, prefix: str = "") -> str:
    """The part of every key before the layout's own path (Aiven: ``key.prefix``; local: ``kafka-tiered-storage/``).

    Raises:
        ValueError: an unknown layout, or a prefix given for ``local_tiered_storage`` (its prefix is fixed).
    """
    if layout not in _PARSERS:
        raise ValueError(f"unknown remote_tier layout {layout!r} (known: {', '.join(sorted(_PARSERS))})")
    if layout == "local_tiered_storage":
        if prefix:
            raise ValueError("layout local_tiered_storage has no key prefix (its root is rsm.config.dir)")
        return LOCAL_ROOT
    return prefix


def parse_key(key: str, layout: str, prefix: str = "") -> RemoteObjectKey:
    """Parse one key relative to ``location``.

    Raises:
        RemoteKeyError: the key is outside the layout's prefix or does not fit the layout.
        ValueError: unknown layout.
    """
    head = layout_prefix(layout, prefix)
    if not key.startswith(head):
        raise RemoteKeyError(f"key {key!r} is outside the layout prefix {head!r}")
    if key.endswith("/"):
        raise RemoteKeyError(f"key {key!r} is a folder marker, not a segment object")
    return _PARSERS[layout](key[len(head) :])


def parse_listing(objects: Iterable[ListedObject], layout: str, prefix: str = "") -> Iterator[RemoteObjectRow]:
    """One :class:`RemoteObjectRow` per listed object, in listing order; a refused key gives an error row."""
    layout_prefix(layout, prefix)  # fail on a bad layout before the first row
    for obj in objects:
        try:
            k = parse_key(obj.key, layout, prefix)
        except RemoteKeyError as exc:
            yield RemoteObjectRow(obj.key, obj.size, obj.last_modified_ms, obj.etag,
                                  None, None, None, None, None, None, str(exc))
            continue
        yield RemoteObjectRow(obj.key, obj.size, obj.last_modified_ms, obj.etag, k.topic, k.topic_id, k.partition,
                              k.segment_id, k.start_offset, k.kind)
