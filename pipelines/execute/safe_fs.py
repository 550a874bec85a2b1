"""Filesystem operations that never follow a symlink and never replace what is already there.

Everything below works relative to directory file descriptors opened with ``O_NOFOLLOW``: a symlink planted at
any component makes the call fail (``ELOOP``/``ENOTDIR``) instead of being followed into a live log dir.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_RENAME_NOREPLACE = 1


@contextmanager
def open_dir(path: str | os.PathLike[str], components: Sequence[str] = ()) -> Iterator[int]:
    """A descriptor of ``path/components...``, each component opened without following a symlink."""
    fds = [os.open(path, _DIR_FLAGS)]
    try:
        for name in components:
            _check_name(name)
            fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
        yield fds[-1]
    finally:
        for fd in reversed(fds):
            os.close(fd)


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise OSError(errno.EINVAL, f"{name!r} is not a single path component")


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in the directory, None when absent."""
    _check_name(name)
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def is_real_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)


def remove_tree_at(dir_fd: int, name: str, on_file: Callable[[int], None]) -> int:
    """Delete ``name`` (a directory) under ``dir_fd`` recursively, never following a symlink (a link is removed,
    not its target) and never crossing into another filesystem. ``on_file(size)`` runs after each unlink (pacing).
    Returns the number of files removed."""
    _check_name(name)
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    removed = 0
    try:
        dev = os.fstat(fd).st_dev
        with os.scandir(fd) as it:
            names = [e.name for e in it]
        for child in names:
            st = os.stat(child, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != dev:
                    raise OSError(errno.EXDEV, "another filesystem is mounted inside; not removed", child)
                removed += remove_tree_at(fd, child, on_file)
            else:
                os.unlink(child, dir_fd=fd)
                removed += 1
                on_file(st.st_size)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)
    return removed


def _libc_renameat2() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _libc_renameat2()


def rename_noreplace(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
    """Rename ``src`` to ``dst`` atomically, failing with ``FileExistsError`` when ``dst`` exists (even an empty
    directory, which a plain rename would replace). Uses ``renameat2(RENAME_NOREPLACE)``; where the C library or
    filesystem lacks it, checks then renames (the executor holds both locks, so nobody it races may create dst)."""
    _check_name(src)
    _check_name(dst)
    if _renameat2 is not None:
        if _renameat2(src_dir_fd, os.fsencode(src), dst_dir_fd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), dst)
    if lstat_at(dst_dir_fd, dst) is not None:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def read_small_file_at(dir_fd: int, name: str, limit: int = 16 << 20) -> bytes:
    """The content of a regular file ``name`` under ``dir_fd``: no symlink, FIFO or device is opened (no block)."""
    _check_name(name)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", name)
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", name)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

