"""The fingerprint of a directory's entries: what the crawl records and the executor verifies before it acts."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from pipelines.kafka.listing import FileEntry


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


def fingerprint_triples(entries: Iterable[FileEntry]) -> list[tuple[str, int, int]]:
    """Files as ``(name, size, mtime_ns)``; subdirectories as ``(name + "/", 0, mtime_ns)``."""
    return [(e.name + "/", 0, e.mtime_ns) if e.is_dir else (e.name, e.size, e.mtime_ns) for e in entries]
