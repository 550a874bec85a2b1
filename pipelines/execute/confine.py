"""Path confinement: an item is acted on only if it is a plain, direct child directory of a registered log dir.

Checked, in order: the log dir is an absolute, normalised path none of whose components is a symlink; the name is
a single path component (no ``/``, not ``.`` or ``..``, no NUL); the child is a real directory (``lstat``, not a
symlink); its resolved path is exactly ``<log dir>/<name>``; it is on the same device as the log dir (no mount
point in between). Any failure raises :class:`ConfinementError` with the reason.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pipelines.errors import PreconditionFailed


class ConfinementError(PreconditionFailed):
    """A path escapes, or might escape, its log dir."""


def check_log_dir(log_dir: str) -> Path:
    """The log dir as a path, after checking it is absolute, normalised and free of symlinks."""
    if not os.path.isabs(log_dir):
        raise ConfinementError(f"log dir {log_dir!r} is not an absolute path")
    trimmed = log_dir.rstrip("/") or "/"
    if os.path.normpath(trimmed) != trimmed or "/../" in trimmed + "/" or "/./" in trimmed + "/":
        raise ConfinementError(f"log dir {log_dir!r} is not a normalised path")
    current = Path("/")
    for part in Path(trimmed).parts[1:]:
        current = current / part
        st = os.lstat(current)
        if stat.S_ISLNK(st.st_mode):
            raise ConfinementError(f"log dir {log_dir!r}: component {current} is a symlink")
    if not stat.S_ISDIR(os.lstat(current).st_mode):
        raise ConfinementError(f"log dir {log_dir!r} is not a directory")
    return Path(trimmed)


def confined_child(log_dir: str, name: str) -> Path:
    """``<log_dir>/<name>`` after every check above; raises ConfinementError (or FileNotFoundError if absent)."""
    root = check_log_dir(log_dir)
    if not name or name in (".", "..") or "/" in name or "\0" in name or os.sep in name:
        raise ConfinementError(f"{name!r} is not a single directory name")
    child = root / name
    st = os.lstat(child)
    if stat.S_ISLNK(st.st_mode):
        raise ConfinementError(f"{child} is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise ConfinementError(f"{child} is not a directory")
    if Path(os.path.realpath(child)) != Path(os.path.realpath(root)) / name:
        raise ConfinementError(f"{child} resolves outside {root}")
    if st.st_dev != os.lstat(root).st_dev:
        raise ConfinementError(f"{child} is on another filesystem than {root}")
    return child
