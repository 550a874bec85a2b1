"""The quarantine area and its per-item manifests.

An item is quarantined by ONE ``os.rename`` of its partition dir to
``<log dir parent>/<quarantine_dir_name>/<log dir name>/<plan_id>/<item_id>/<dir_name>``: same filesystem (so the
rename is atomic and copies nothing), outside the log dir (Kafka refuses to start with unknown dirs inside one).
``manifest.json`` beside it records what was moved; it is written (tmp + fsync + rename + fsync dir) BEFORE the
rename, so every quarantined dir has a manifest, and a manifest without its dir means "not moved (yet)" or
"purged".
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pipelines.errors import PreconditionFailed
from pipelines.execute.journal import fsync_dir

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


def quarantine_root(log_dir: str | os.PathLike[str], dir_name: str) -> Path:
    """``<log dir parent>/<dir_name>/<log dir name>``: the quarantine area of one log dir."""
    log = Path(log_dir)
    return log.parent / dir_name / log.name


def item_dir(log_dir: str, quarantine_dir_name: str, plan_id: str, item_id: str) -> Path:
    for part in (plan_id, item_id):
        if not part or part in (".", "..") or "/" in part or "\0" in part:
            raise PreconditionFailed(f"{part!r} cannot be used as a path component")
    return quarantine_root(log_dir, quarantine_dir_name) / plan_id / item_id


def prepare_item_dir(log_dir: str, path: Path) -> None:
    """Create the item's quarantine dir (fsyncing each new entry) and check it shares the log dir's device."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir()
        fsync_dir(d.parent)
    if os.stat(path).st_dev != os.stat(log_dir).st_dev:
        raise PreconditionFailed(f"quarantine area {path} is not on the filesystem of {log_dir}; a rename would "
                                 "copy data (is the log dir a mount point?)")


def write_manifest(directory: Path, manifest: QuarantineManifest) -> Path:
    target = directory / MANIFEST_NAME
    tmp = directory / (MANIFEST_NAME + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(manifest.model_dump_json(indent=2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    fsync_dir(directory)
    return target


def read_manifest(directory: Path) -> QuarantineManifest:
    return QuarantineManifest.model_validate_json((directory / MANIFEST_NAME).read_text(encoding="utf-8"))


def iter_manifests(log_dir: str, quarantine_dir_name: str) -> list[tuple[Path, QuarantineManifest]]:
    """Every item directory with a readable manifest under one log dir's quarantine area."""
    root = quarantine_root(log_dir, quarantine_dir_name)
    out = []
    if not root.is_dir():
        return out
    for manifest_path in sorted(root.glob(f"*/*/{MANIFEST_NAME}")):
        out.append((manifest_path.parent, read_manifest(manifest_path.parent)))
    return out
