"""What the executor itself sees of one partition directory: every fact it acts on comes from here, not the plan.

The name is parsed by Kafka's own rules (``pipelines.kafka.partition_name``), which give the kind (live,
``-delete``, ``-future``, ``-stray``, the metadata log, unparseable), the topic and the partition; the topic id is
read from ``partition.metadata`` (a regular file only, never blocking); the entries are listed with the pure-Python
lister and fingerprinted with the crawl's own function. A plan item is only a claim to be compared with this.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipelines.errors import DecodeError, PreconditionFailed
from pipelines.execute.confine import confined_child
from pipelines.kafka.fingerprint import fingerprint_entries, fingerprint_triples
from pipelines.kafka.listing import FileEntry, LocalLister, read_regular_file
from pipelines.kafka.partition_metadata import read_partition_metadata
from pipelines.kafka.partition_name import DirKind, parse_partition_dir_name


class ItemSkipped(PreconditionFailed):
    """One item fails a precondition; the item is left untouched and the run goes on.

    ``rule`` names the check (``inconsistent``, ``protected_topic``, ``assigned_replica``, ...), for reports.
    """

    def __init__(self, message: str, rule: str = "precondition") -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True, slots=True)
class ObservedDir:
    """One partition directory as found on disk now."""

    path: Path
    name: str
    kind: DirKind
    topic: str | None
    partition: int | None
    topic_id: str | None  # base64url, None when partition.metadata is missing or does not parse
    entries: tuple[FileEntry, ...]
    fingerprint: str
    mtime: datetime

    @property
    def bytes(self) -> int:
        return sum(e.size for e in self.entries)


def observe_dir(log_dir: str, name: str) -> ObservedDir:
    """Confine, list, fingerprint and read one directory. Raises :class:`ItemSkipped` with the reason."""
    try:
        path = confined_child(log_dir, name)
    except FileNotFoundError:
        raise ItemSkipped(f"{log_dir}/{name} no longer exists", "gone") from None
    except PreconditionFailed as exc:
        raise ItemSkipped(str(exc), "confinement") from None
    try:
        entries = tuple(LocalLister().list_dir(str(path)))
        mtime_ns = path.lstat().st_mtime_ns
    except OSError as exc:
        raise ItemSkipped(f"cannot list {path}: {exc.strerror or exc}", "unreadable") from None
    links = sorted(e.name for e in entries if e.is_symlink)
    if links:
        raise ItemSkipped(f"{path} contains symlinks {links}; refusing to move it", "confinement")
    parsed = parse_partition_dir_name(name)
    return ObservedDir(
        path=path, name=name, kind=parsed.kind, topic=parsed.topic, partition=parsed.partition,
        topic_id=_topic_id(path), entries=entries,
        fingerprint=fingerprint_entries(fingerprint_triples(entries)),
        mtime=datetime.fromtimestamp(mtime_ns / 1e9, tz=timezone.utc),
    )


def _topic_id(path: Path) -> str | None:
    try:
        data = read_regular_file(str(path / "partition.metadata"))  # a FIFO must not block the executor
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ItemSkipped(f"cannot read {path}/partition.metadata: {exc.strerror or exc}", "unreadable") from None
    try:
        return str(read_partition_metadata(data).topic_id)
    except DecodeError:
        return None
