"""What the executor itself sees of one partition directory: every fact it acts on comes from here, not the plan.

The name is parsed by Kafka's own rules (``pipelines.kafka.partition_name``), which give the kind (live,
``-delete``, ``-future``, ``-stray``, the metadata log, unparseable), the topic and the partition. Everything else
is read through ONE descriptor of the directory, opened ``O_NOFOLLOW | O_DIRECTORY`` (its log dir opened component
by component): its identity ``(st_dev, st_ino)`` (``fstat``), its entries (listed as the pure-Python lister does),
the topic id in its ``partition.metadata`` (a regular file only, never blocking), and the fingerprint, the crawl's
own function of those. Every fact is thus a fact about that very directory; the executor moves it only if the name
still points at that identity (``apply``). A plan item is only a claim to be compared with this.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipelines.errors import PreconditionFailed
from pipelines.execute.confine import confined_child
from pipelines.execute.safe_fs import Identity, identity, list_entries_at, open_child_dir, open_path, read_small_file_at
from pipelines.kafka.fingerprint import fingerprint_topic_id, partition_fingerprint
from pipelines.kafka.listing import FileEntry
from pipelines.kafka.partition_metadata import FILE_NAME as PARTITION_METADATA
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
    identity: Identity = (0, 0)  # (st_dev, st_ino) of the directory everything above was read from

    @property
    def bytes(self) -> int:
        return sum(e.size for e in self.entries)


def observe_dir(log_dir: str, name: str) -> ObservedDir:
    """Confine, open, list, fingerprint and read one directory. Raises :class:`ItemSkipped` with the reason."""
    try:
        path = confined_child(log_dir, name)
    except FileNotFoundError:
        raise ItemSkipped(f"{log_dir}/{name} no longer exists", "gone") from None
    except PreconditionFailed as exc:
        raise ItemSkipped(str(exc), "confinement") from None
    try:
        log_fd = open_path(log_dir)
        try:
            fd = open_child_dir(log_fd, name)
        finally:
            os.close(log_fd)
    except FileNotFoundError:
        raise ItemSkipped(f"{path} no longer exists", "gone") from None
    except OSError as exc:  # ELOOP/ENOTDIR: a symlink or a file took the name since the confinement check
        raise ItemSkipped(f"cannot open {path} as a directory without following links: {exc.strerror or exc}",
                          "confinement") from None
    try:
        st = os.fstat(fd)
        entries = tuple(list_entries_at(fd))
        links = sorted(e.name for e in entries if e.is_symlink)
        if links:
            raise ItemSkipped(f"{path} contains symlinks {links}; refusing to move it", "confinement")
        topic_id = _topic_id(fd, path, entries)
    except OSError as exc:
        raise ItemSkipped(f"cannot list {path}: {exc.strerror or exc}", "unreadable") from None
    finally:
        os.close(fd)
    parsed = parse_partition_dir_name(name)
    return ObservedDir(
        path=path, name=name, kind=parsed.kind, topic=parsed.topic, partition=parsed.partition,
        topic_id=topic_id, entries=entries, fingerprint=partition_fingerprint(entries, topic_id),
        mtime=datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=timezone.utc), identity=identity(st),
    )


def _topic_id(fd: int, path: Path, entries: tuple[FileEntry, ...]) -> str | None:
    """The topic id in the dir's ``partition.metadata`` (read through ``fd``), as the crawl's fingerprint takes it."""
    if not any(e.name == PARTITION_METADATA and not e.is_dir for e in entries):
        return None
    try:
        data = read_small_file_at(fd, PARTITION_METADATA)  # a FIFO must not block the executor
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ItemSkipped(f"cannot read {path}/{PARTITION_METADATA}: {exc.strerror or exc}", "unreadable") from None
    return fingerprint_topic_id(data)
