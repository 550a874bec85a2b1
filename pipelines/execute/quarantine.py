"""The quarantine area of a log dir, validated before every use, and its per-item manifests.

An item is quarantined by ONE rename of its partition dir to
``<log dir parent>/<quarantine_dir_name>/<log dir name>/<plan_id>/<item_id>/<dir_name>``: same filesystem (so the
rename is atomic and copies nothing), outside the log dir (Kafka refuses to start with unknown dirs inside one).
``manifest.json`` beside it records what was moved; it is written (tmp + fsync + rename + fsync dir) BEFORE the
rename, so every quarantined dir has a manifest, and a manifest without its dir means "not moved (yet)" or
"purged".

The area is trusted only after :meth:`QuarantineArea.validate`: the root (``<parent>/<quarantine_dir_name>``) and
the per-log-dir area are real directories (not symlinks) owned by the executor's user, not writable by group or
others, on the log dir's filesystem, outside every registered log dir and containing none. Items are found by
walking the area with ``O_NOFOLLOW``; where an item is comes from that walk, never from the manifest, whose paths
must agree with it or the item is refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from pipelines.errors import PreconditionFailed
from pipelines.execute.journal import fsync_dir
from pipelines.execute.safe_fs import is_real_dir, lstat_at, open_dir, read_small_file_at

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1


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


@dataclass(frozen=True, slots=True)
class QuarantineArea:
    """``<log dir parent>/<root name>/<log dir name>``: where one log dir's items go."""

    log_dir: Path
    root: Path

    @classmethod
    def of(cls, log_dir: str | os.PathLike[str], root_name: str) -> QuarantineArea:
        log = Path(log_dir)
        return cls(log, log.parent / _component(root_name, "executor.quarantine_dir_name"))

    @property
    def path(self) -> Path:
        return self.root / self.log_dir.name

    def validate(self, registered: Iterable[str], *, create: bool) -> bool:
        """Check the root and the area (creating them, mode 0700, when ``create``); False when absent.

        Raises:
            QuarantineError: a check fails (the message names it).
        """
        dirs = [Path(d) for d in registered]
        for d in dirs:
            if d == self.root or self.root in d.parents:
                raise QuarantineError(f"quarantine root {self.root} contains the registered log dir {d}")
            if d in self.root.parents:
                raise QuarantineError(f"quarantine root {self.root} is inside the registered log dir {d}")
        log_dev = os.lstat(self.log_dir).st_dev
        for path in (self.root, self.path):
            st = _lstat(path)
            if st is None:
                if not create:
                    return False
                try:
                    os.mkdir(path, 0o700)
                    fsync_dir(path.parent)
                except FileExistsError:  # another executor on this host made it meanwhile: checked as any other
                    pass
                st = os.lstat(path)
            self._check(path, st, log_dev)
        return True

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
        with open_dir(self.path) as area_fd:
            parent_fd = area_fd
            fds = []
            try:
                for name in (_component(plan_id, "plan id"), _component(item_id, "item id")):
                    st = lstat_at(parent_fd, name)
                    if st is None:
                        os.mkdir(name, 0o700, dir_fd=parent_fd)
                        os.fsync(parent_fd)
                    elif not is_real_dir(st):
                        raise QuarantineError(f"{path / name} exists and is not a directory")
                    fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd))
                    parent_fd = fds[-1]
                    path = path / name
            finally:
                for fd in fds:
                    os.close(fd)
        return path

    def scan(self, plan_id: str | None = None) -> list[QuarantinedItem]:
        """Every item dir of the area (of ``plan_id`` only, if given); call after :meth:`validate` returned True."""
        out: list[QuarantinedItem] = []
        with open_dir(self.path) as area_fd:
            plans = sorted(os.listdir(area_fd)) if plan_id is None else [plan_id]
            for pid in plans:
                if not is_real_dir(lstat_at(area_fd, pid)):
                    continue
                with open_dir(self.path, [pid]) as plan_fd:
                    for iid in sorted(os.listdir(plan_fd)):
                        if is_real_dir(lstat_at(plan_fd, iid)):
                            out.append(self.item(pid, iid))
        return out

    def item(self, plan_id: str, item_id: str) -> QuarantinedItem:
        """The item dir ``<plan_id>/<item_id>`` with its manifest checked against where it is."""
        try:
            with open_dir(self.path, [plan_id, item_id]) as fd:
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


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def write_manifest(directory: Path, manifest: QuarantineManifest) -> Path:
    """Write ``manifest.json`` (tmp + fsync + rename + fsync dir); no symlink is followed."""
    target = directory / MANIFEST_NAME
    tmp_name = MANIFEST_NAME + ".tmp"
    with open_dir(directory) as dfd:
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
    return target


def remove_item_dir(item: QuarantinedItem) -> None:
    """Remove an item dir whose data dir is gone: the manifest, leftovers (regular files only), the dir."""
    with open_dir(item.area.path, [item.plan_id]) as plan_fd:
        with open_dir(item.area.path, [item.plan_id, item.item_id]) as fd:
            for name in os.listdir(fd):
                if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise QuarantineError(f"{item.item_dir}/{name} is a directory; item dir left in place")
                os.unlink(name, dir_fd=fd)
        os.rmdir(item.item_id, dir_fd=plan_fd)
        os.fsync(plan_fd)
