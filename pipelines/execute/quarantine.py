"""The quarantine area of a log dir, validated before every use, and its per-item manifests.

An item is quarantined by ONE rename of its partition dir to
``<log dir parent>/<quarantine_dir_name>/<log dir name>/<plan_id>/<item_id>/<dir_name>``: same filesystem (so the
rename is atomic and copies nothing), outside the log dir (Kafka refuses to start with unknown dirs inside one).
``manifest.json`` beside it records what was moved; it is written (tmp + fsync + rename + fsync dir) BEFORE the
rename, so every quarantined dir has a manifest, and a manifest without its dir means "not moved (yet)" or
"purged".

The area is trusted only after :meth:`QuarantineArea.validate`: the root (``<parent>/<quarantine_dir_name>``) and
the per-log-dir area are real directories (not symlinks) owned by the executor's user, not writable by group or
others, on the log dir's filesystem, outside every registered log dir and containing none. Validation opens the
parent one component at a time, then the root and the area (``O_NOFOLLOW | O_DIRECTORY``), and checks each through
its descriptor (``fstat``); the area's descriptor is kept, and every later step (item dirs, manifests, the rename,
restore, purge) works relative to it, one component at a time, so a root or any component replaced by a symlink
(or by another directory) after validation changes nothing the executor does. Items are found by walking the area;
where an item is comes from that walk, never from the manifest, whose paths must agree with it or the item is
refused.

A manifest (version 2) records the moved directory's topic, partition, topic id, identity (device, inode) and
fingerprint; :func:`copy_mismatch` re-reads the quarantined copy through a descriptor and refuses it on any
difference. Version 1 manifests (before identities were recorded) are read; purge refuses them
(``manifest_without_identity``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from pipelines.errors import PreconditionFailed
from pipelines.execute.safe_fs import (
    is_real_dir,
    list_entries_at,
    lstat_at,
    open_at,
    open_child_dir,
    open_path,
    read_small_file_at,
)
from pipelines.kafka.fingerprint import (
    fingerprint_entries,
    fingerprint_topic_id,
    fingerprint_triples,
    partition_fingerprint,
)
from pipelines.kafka.listing import FileEntry
from pipelines.kafka.partition_metadata import FILE_NAME as PARTITION_METADATA
from pipelines.kafka.partition_name import parse_partition_dir_name

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 2
"""2: ``device``/``inode`` recorded, fingerprint bound to the topic id. 1: neither (read; purge refuses it)."""


class ManifestFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    size: int
    mtime_ns: int
    is_dir: bool = False


class QuarantineManifest(BaseModel):
    """What one quarantined item was and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = MANIFEST_VERSION
    cluster: str
    plan_id: str
    content_hash: str
    item_id: str
    broker_id: int
    log_dir: str
    dir_name: str
    original_path: str
    quarantined_path: str
    topic: str | None
    partition: int | None
    topic_id: str | None
    fingerprint: str
    files: tuple[ManifestFile, ...]
    bytes: int
    quarantined_at: datetime
    device: int | None = None  # st_dev of the moved directory (version 2)
    inode: int | None = None  # st_ino of the moved directory (version 2)

    @property
    def has_identity(self) -> bool:
        return self.version >= 2 and self.device is not None and self.inode is not None


class QuarantineError(PreconditionFailed):
    """The quarantine area is not safe to use; nothing is moved into or out of it."""


def _component(name: str, what: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise PreconditionFailed(f"{what} {name!r} cannot be used as a path component")
    return name


@dataclass(frozen=True, slots=True)
class QuarantinedItem:
    """One ``<plan_id>/<item_id>`` directory found in an area; ``manifest`` is None when ``error`` says why."""

    area: QuarantineArea
    plan_id: str
    item_id: str
    manifest: QuarantineManifest | None
    error: str | None = None

    @property
    def item_dir(self) -> Path:
        return self.area.path / self.plan_id / self.item_id

    @property
    def data_path(self) -> Path:
        assert self.manifest is not None
        return self.item_dir / self.manifest.dir_name

    @property
    def original_path(self) -> Path:
        assert self.manifest is not None
        return self.area.log_dir / self.manifest.dir_name

    def open_item_dir(self) -> contextlib.AbstractContextManager[int]:
        """``<plan_id>/<item_id>`` opened from the area's descriptor, one component at a time."""
        return self.area.open_at([self.plan_id, self.item_id])


@dataclass(frozen=True, slots=True)
class QuarantineArea:
    """``<log dir parent>/<root name>/<log dir name>``: where one log dir's items go.

    After :meth:`validate` returned True it holds the area's descriptor until :meth:`close`; every method below
    works relative to it."""

    log_dir: Path
    root: Path
    _fds: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, log_dir: str | os.PathLike[str], root_name: str) -> QuarantineArea:
        log = Path(log_dir)
        return cls(log, log.parent / _component(root_name, "executor.quarantine_dir_name"))

    @property
    def path(self) -> Path:
        return self.root / self.log_dir.name

    def validate(self, registered: Iterable[str], *, create: bool) -> bool:
        """Open and check the root and the area (creating them, mode 0700, when ``create``); False when absent.

        Raises:
            QuarantineError: a check fails (the message names it).
        """
        dirs = [Path(d) for d in registered]
        for d in dirs:
            if d == self.root or self.root in d.parents:
                raise QuarantineError(f"quarantine root {self.root} contains the registered log dir {d}")
            if d in self.root.parents:
                raise QuarantineError(f"quarantine root {self.root} is inside the registered log dir {d}")
        self.close()
        try:
            log_fd = open_path(self.log_dir)
        except OSError as exc:  # named alone: a log dir missing from the disk is the usual cause (a config typo)
            raise QuarantineError(f"quarantine root {self.root}: cannot open the log dir {self.log_dir} without "
                                  f"following links ({exc.strerror or exc})") from None
        try:
            log_dev = os.fstat(log_fd).st_dev
        finally:
            os.close(log_fd)
        try:
            parent_fd = open_path(self.root.parent)
        except OSError as exc:
            raise QuarantineError(f"quarantine root {self.root}: cannot open its parent {self.root.parent} without "
                                  f"following links ({exc.strerror or exc})") from None
        try:
            root_fd = self._open_checked(parent_fd, self.root, log_dev, create)
        finally:
            os.close(parent_fd)
        if root_fd is None:
            return False
        try:
            area_fd = self._open_checked(root_fd, self.path, log_dev, create)
        finally:
            os.close(root_fd)
        if area_fd is None:
            return False
        self._fds["area"] = area_fd
        return True

    def _open_checked(self, parent_fd: int, path: Path, log_dev: int, create: bool) -> int | None:
        """``path`` (a child of ``parent_fd``) opened without following links and checked through its descriptor;
        None when absent and not created."""
        name = path.name
        st = lstat_at(parent_fd, name)
        if st is None:
            if not create:
                return None
            try:
                os.mkdir(name, 0o700, dir_fd=parent_fd)
                os.fsync(parent_fd)
            except FileExistsError:  # another executor on this host made it meanwhile: checked as any other
                pass
            st = lstat_at(parent_fd, name)
            if st is None:
                raise QuarantineError(f"quarantine {path} vanished while it was being created")
        self._check(path, st, log_dev)
        try:
            fd = open_child_dir(parent_fd, name)
        except OSError as exc:  # replaced by a link or a file since the lstat
            raise QuarantineError(f"quarantine {path} cannot be opened as a directory without following links "
                                  f"({exc.strerror or exc})") from None
        try:
            self._check(path, os.fstat(fd), log_dev)  # what counts: the directory now held
        except BaseException:
            os.close(fd)
            raise
        return fd

    def close(self) -> None:
        """Release the area's descriptor (validate again before another use)."""
        for key in list(self._fds):
            os.close(self._fds.pop(key))

    @property
    def fd(self) -> int:
        """The validated area's descriptor."""
        fd = self._fds.get("area")
        if fd is None:
            raise QuarantineError(f"quarantine {self.path} used before it was validated")
        return fd

    @property
    def device(self) -> int:
        """The filesystem the validated area is on."""
        return os.fstat(self.fd).st_dev

    def open_at(self, components: Sequence[str] = ()) -> contextlib.AbstractContextManager[int]:
        """``<area>/<components...>`` opened from the area's descriptor, never following a link."""
        return open_at(self.fd, components)

    @staticmethod
    def _check(path: Path, st: os.stat_result, log_dev: int) -> None:
        if stat.S_ISLNK(st.st_mode):
            raise QuarantineError(f"quarantine {path} is a symlink")
        if not stat.S_ISDIR(st.st_mode):
            raise QuarantineError(f"quarantine {path} is not a directory")
        if st.st_uid != os.geteuid():
            raise QuarantineError(f"quarantine {path} is owned by uid {st.st_uid}, not the executor's {os.geteuid()}")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise QuarantineError(f"quarantine {path} is writable by group or others (mode {st.st_mode & 0o777:o})")
        if st.st_dev != log_dev:
            raise QuarantineError(f"quarantine {path} is not on the filesystem of its log dir; a rename would copy "
                                  "data (is the log dir a mount point?)")

    def prepare_item_dir(self, plan_id: str, item_id: str) -> Path:
        """Create ``<area>/<plan_id>/<item_id>`` (each new level fsynced); existing levels must be real dirs."""
        path = self.path
        parent_fd = self.fd
        fds: list[int] = []
        try:
            for name in (_component(plan_id, "plan id"), _component(item_id, "item id")):
                st = lstat_at(parent_fd, name)
                if st is None:
                    os.mkdir(name, 0o700, dir_fd=parent_fd)
                    os.fsync(parent_fd)
                elif not is_real_dir(st):
                    raise QuarantineError(f"{path / name} exists and is not a directory")
                try:
                    fds.append(open_child_dir(parent_fd, name))
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    raise QuarantineError(f"{path / name} is not a directory (replaced meanwhile)") from None
                parent_fd = fds[-1]
                path = path / name
        finally:
            for fd in fds:
                os.close(fd)
        return path

    def scan(self, plan_id: str | None = None) -> list[QuarantinedItem]:
        """Every item dir of the area (of ``plan_id`` only, if given); call after :meth:`validate` returned True."""
        out: list[QuarantinedItem] = []
        with self.open_at() as area_fd:
            plans = sorted(os.listdir(area_fd)) if plan_id is None else [plan_id]
            for pid in plans:
                if not is_real_dir(lstat_at(area_fd, pid)):
                    continue
                with self.open_at([pid]) as plan_fd:
                    for iid in sorted(os.listdir(plan_fd)):
                        if is_real_dir(lstat_at(plan_fd, iid)):
                            out.append(self.item(pid, iid))
        return out

    def item(self, plan_id: str, item_id: str) -> QuarantinedItem:
        """The item dir ``<plan_id>/<item_id>`` with its manifest checked against where it is."""
        try:
            with self.open_at([plan_id, item_id]) as fd:
                manifest = QuarantineManifest.model_validate_json(read_small_file_at(fd, MANIFEST_NAME))
        except FileNotFoundError:
            return QuarantinedItem(self, plan_id, item_id, None, "no manifest.json")
        except OSError as exc:
            return QuarantinedItem(self, plan_id, item_id, None, f"manifest unreadable: {exc.strerror or exc}")
        except (ValidationError, ValueError) as exc:
            return QuarantinedItem(self, plan_id, item_id, None,
                                   f"manifest invalid: {str(exc).splitlines()[0]}")
        error = self._disagreement(plan_id, item_id, manifest)
        return QuarantinedItem(self, plan_id, item_id, None if error else manifest, error)

    def _disagreement(self, plan_id: str, item_id: str, m: QuarantineManifest) -> str | None:
        """Why the manifest's own account of itself contradicts where it was found (None: it agrees)."""
        name = m.dir_name
        if not name or name in (".", "..", MANIFEST_NAME) or "/" in name or "\0" in name:
            return f"manifest dir_name {name!r} is not a single directory name"
        expected = {
            "plan_id": plan_id, "item_id": item_id, "log_dir": str(self.log_dir),
            "original_path": str(self.log_dir / name), "quarantined_path": str(self.path / plan_id / item_id / name),
        }
        for key, value in expected.items():
            if getattr(m, key) != value:
                return f"manifest {key} {getattr(m, key)!r} disagrees with its location ({value!r})"
        return None


def write_manifest(dfd: int, manifest: QuarantineManifest) -> None:
    """Write ``manifest.json`` in the open directory ``dfd`` (tmp + fsync + rename + fsync dir); no symlink is
    followed."""
    tmp_name = MANIFEST_NAME + ".tmp"
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 0o600, dir_fd=dfd)
    try:
        data = manifest.model_dump_json(indent=2).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp_name, MANIFEST_NAME, src_dir_fd=dfd, dst_dir_fd=dfd)
    os.fsync(dfd)


def remove_item_dir(item: QuarantinedItem) -> None:
    """Remove an item dir whose data dir is gone: the manifest, leftovers (regular files only), the dir."""
    with item.area.open_at([item.plan_id]) as plan_fd:
        with open_at(plan_fd, [item.item_id]) as fd:
            for name in os.listdir(fd):
                if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise QuarantineError(f"{item.item_dir}/{name} is a directory; item dir left in place")
                os.unlink(name, dir_fd=fd)
        os.rmdir(item.item_id, dir_fd=plan_fd)
        os.fsync(plan_fd)


def manifest_fingerprint(m: QuarantineManifest, entries: Sequence[FileEntry], topic_id: str | None) -> str:
    """The fingerprint of a copy as the manifest's version computed it (version 1: not bound to the topic id)."""
    if m.version < 2:
        return fingerprint_entries(fingerprint_triples(entries))
    return partition_fingerprint(entries, topic_id)


def copy_mismatch(q: QuarantinedItem, *, data_fd: int | None = None,
                  check_content: bool = True) -> tuple[str, str] | None:
    """``(rule, why)`` when the quarantined copy is not the directory its manifest recorded, None when it is.

    Read through one descriptor of ``<item>/<dir_name>`` (``data_fd``, or opened here from the area's descriptor
    without following links): its identity (the recorded inode, on the area's filesystem; the device number is not
    compared, a reboot may renumber devices), then, with ``check_content``, its entries (no symlink), the topic id
    in its ``partition.metadata``, the topic and partition of its name, and its fingerprint. Version 1 manifests
    recorded no identity: that check is left out (the caller decides whether to accept that).
    """
    m = q.manifest
    assert m is not None
    if data_fd is None:
        with q.open_item_dir() as item_fd:
            fd = open_child_dir(item_fd, m.dir_name)
        try:
            return copy_mismatch(q, data_fd=fd, check_content=check_content)
        finally:
            os.close(fd)
    st = os.fstat(data_fd)
    if m.has_identity and (st.st_ino != m.inode or st.st_dev != q.area.device):
        return "identity_changed", (f"{q.data_path} is not the directory the executor moved (inode {st.st_ino} "
                                    f"on device {st.st_dev}, the manifest recorded inode {m.inode} on the "
                                    f"quarantine's filesystem, device {q.area.device})")
    if not check_content:
        return None
    entries = list_entries_at(data_fd)
    links = sorted(e.name for e in entries if e.is_symlink)
    if links:
        return "fingerprint_changed", f"{q.data_path} contains symlinks {links}"
    data = None
    if any(e.name == PARTITION_METADATA and not e.is_dir for e in entries):
        try:
            data = read_small_file_at(data_fd, PARTITION_METADATA)
        except OSError as exc:
            return "topic_id_changed", f"{q.data_path}/{PARTITION_METADATA} unreadable: {exc.strerror or exc}"
    topic_id = fingerprint_topic_id(data)
    if topic_id != m.topic_id:
        return "topic_id_changed", (f"{q.data_path}/{PARTITION_METADATA} gives topic id {topic_id}, the manifest "
                                    f"recorded {m.topic_id}")
    parsed = parse_partition_dir_name(m.dir_name)
    if (parsed.topic, parsed.partition) != (m.topic, m.partition):
        return "partition_changed", (f"{m.dir_name} is topic {parsed.topic!r} partition {parsed.partition}, the "
                                     f"manifest recorded {m.topic!r} partition {m.partition}")
    if manifest_fingerprint(m, entries, topic_id) != m.fingerprint:
        return "fingerprint_changed", f"{q.data_path} no longer matches its manifest's fingerprint"
    return None


def journal_disagrees(m: QuarantineManifest, moved: dict[str, object]) -> str | None:
    """Why the journal's ``rename.done`` (``moved``: its detail) and the manifest disagree on the identity of the
    directory moved (None: they agree, or the manifest is version 1 and records none)."""
    if not m.has_identity:
        return None
    recorded = (moved.get("device"), moved.get("inode"))
    if recorded != (m.device, m.inode):
        return (f"the journal recorded device {recorded[0]} inode {recorded[1]} for this move, the manifest says "
                f"device {m.device} inode {m.inode}")
    return None
