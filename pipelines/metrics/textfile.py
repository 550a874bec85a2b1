"""Metrics files: written whole and atomically (temp file in the same directory, fsync, rename), read back.

node_exporter's textfile collector reads ``*.prom`` files; a reader must never see half a file, hence the rename.
A file on a remote filesystem (a run's file under an s3:// warehouse) is written through fsspec in one put.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


def write_atomic(path: str | Path, text: str) -> None:
    """Replace the local file ``path`` with ``text`` so a reader sees the old or the new content, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # node_exporter often runs as another user
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_url(url: str, text: str, storage_options: dict | None = None) -> None:
    """``write_atomic`` for a local path; a single fsspec write for any other URL."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    if "file" in protocols or "local" in protocols:
        write_atomic(path, text)
        return
    with fs.open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read_samples(path: str | Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a metrics file: (sample name, sorted labels) → value; {} when the file is missing or is
    not valid exposition text (the caller starts afresh rather than failing an executor run)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}
    except (OSError, ValueError):
        return {}


@contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``<path>.lock`` for a read-modify-write of ``path``."""
    import fcntl

    lock = Path(f"{path}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
