"""The fingerprint of a partition directory: what the crawl records and the executor verifies before it acts.

It is :func:`fingerprint_entries` (a digest of the sorted ``(name, size, mtime seconds)`` of the dir's entries, so
every segment file name, i.e. every segment base offset, is in it) bound to the topic id read from the dir's
``partition.metadata`` by :func:`with_topic_id`. Two dirs with equal names, sizes and times but the ids of two
topics differ; two partitions of ONE topic with equal names, sizes and times do not (nothing in their files
names the partition): the executor tells those apart by the directory's identity (device, inode), never by this.
Every producer goes through :func:`partition_fingerprint` or :func:`with_topic_id` (the crawl's compiled lister
builds the entries' text; ``with_topic_id`` is applied where the scan has read the topic id).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from pipelines.kafka.listing import FileEntry
from pipelines.kafka.partition_metadata import PartitionMetadataError, kafka_written_topic_id, read_partition_metadata


def fingerprint_entries(entries: Iterable[tuple[str, int, int]]) -> str:
    """sha256 (hex) over the sorted ``(name, size, mtime)`` triples of a directory's entries.

    The crawl and the executor both call this; feed it ``fingerprint_triples(listing)`` so both sides agree on
    what a subdirectory contributes. Times count in whole seconds: SFTP reports seconds, a local stat
    nanoseconds, and a plan crawled over SFTP must verify against the broker's local disk.
    """
    text = "".join(
        [f"{name}\0{int(size)}\0{int(mtime_ns) // 1_000_000_000}\n" for name, size, mtime_ns in sorted(entries)]
    )
    return fingerprint_of_text(text.encode("utf-8", "surrogateescape"))


def fingerprint_of_text(text: bytes) -> str:
    """The digest of the text ``fingerprint_entries`` builds (the compiled lister builds that text itself)."""
    return hashlib.sha256(text).hexdigest()


def with_topic_id(entries_digest: str, topic_id: str | None) -> str:
    """The fingerprint of a dir whose entries digest to ``entries_digest`` and whose ``partition.metadata`` gives
    ``topic_id`` (base64url; None: missing or unreadable)."""
    return fingerprint_of_text(f"topic_id\0{topic_id or ''}\0{entries_digest}\n".encode("ascii"))


def fingerprint_topic_id(data: bytes | None) -> str | None:
    """The topic id a ``partition.metadata`` holding ``data`` gives (None: no file, unreadable, or invalid); the
    crawl's scan and the executor both take the id they fingerprint, and compare, from here."""
    if data is None:
        return None
    topic_id = kafka_written_topic_id(data)
    if topic_id is not None:
        return topic_id
    try:
        return str(read_partition_metadata(data).topic_id)
    except PartitionMetadataError:
        return None


def partition_fingerprint(entries: Iterable[FileEntry], topic_id: str | None) -> str:
    """The fingerprint of a dir listed as ``entries`` whose topic id is ``topic_id``."""
    return with_topic_id(fingerprint_entries(fingerprint_triples(entries)), topic_id)


def fingerprint_triples(entries: Iterable[FileEntry]) -> list[tuple[str, int, int]]:
    """Files as ``(name, size, mtime_ns)``; subdirectories as ``(name + "/", 0, mtime_ns)``."""
    return [(e.name + "/", 0, e.mtime_ns) if e.is_dir else (e.name, e.size, e.mtime_ns) for e in entries]
