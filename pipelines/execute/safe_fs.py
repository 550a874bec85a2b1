"""Filesystem operations that never follow a symlink and never replace what is already there.

Everything below works relative to directory file descriptors opened with ``O_NOFOLLOW``, one path component at a
time (:func:`open_path`): a symlink planted at ANY component, not only the last, makes the call fail
(``ELOOP``/``ENOTDIR``) instead of being followed into a live log dir. A directory's identity is its
``(st_dev, st_ino)`` (:func:`identity`), taken from the descriptor it was read through, so a check and the action
it guards can be bound to the same directory whatever its name points at meanwhile.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from pipelines.kafka.listing import FileEntry, scanned_entries

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_RENAME_NOREPLACE = 1


Identity = tuple[int, int]
"""``(st_dev, st_ino)``: which directory (or file) a name pointed at when it was checked."""


def identity(st: os.stat_result) -> Identity:
    return st.st_dev, st.st_ino


def open_path(path: str | os.PathLike[str]) -> int:
    """A descriptor of the directory ``path``, opened one component at a time from ``/`` (or the working directory)
    with ``O_NOFOLLOW | O_DIRECTORY``: a symlink at any component fails the open. The caller closes it."""
    text = os.fspath(path)
    fd = os.open("/" if text.startswith("/") else ".", _DIR_FLAGS)
    try:
        for name in text.split("/"):
            if name in ("", "."):
                continue
            _check_name(name)
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def open_dir(path: str | os.PathLike[str], components: Sequence[str] = ()) -> Iterator[int]:
    """A descriptor of ``path/components...``, every component of both opened without following a symlink."""
    fd = open_path(path)
    try:
        with open_at(fd, components) as inner:
            yield inner
    finally:
        os.close(fd)


@contextmanager
def open_at(dir_fd: int, components: Sequence[str] = ()) -> Iterator[int]:
    """A descriptor of ``components...`` under the open directory ``dir_fd`` (itself when there are none), each
    opened with ``O_NOFOLLOW | O_DIRECTORY``; the ones opened here are closed on exit, ``dir_fd`` never is."""
    fds: list[int] = []
    try:
        for name in components:
            _check_name(name)
            fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1] if fds else dir_fd))
        yield fds[-1] if fds else dir_fd
    finally:
        for fd in reversed(fds):
            os.close(fd)


def open_child_dir(dir_fd: int, name: str) -> int:
    """``name`` under ``dir_fd`` opened ``O_NOFOLLOW | O_DIRECTORY`` (the caller closes it)."""
    _check_name(name)
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def list_entries_at(dir_fd: int) -> list[FileEntry]:
    """The entries of the open directory ``dir_fd``, exactly as ``LocalLister.list_dir`` gives them for its path
    (a link's target stat, ``is_symlink`` set; a vanished entry with unknown size and time), read through the
    descriptor so the listing is of that very directory."""
    with os.scandir(dir_fd) as it:
        return scanned_entries(it)


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


def remove_tree_at(dir_fd: int, name: str, on_file: Callable[[int], None], expect: Identity | None = None) -> int:
    """Delete ``name`` (a directory) under ``dir_fd`` recursively, never following a symlink (a link is removed,
    not its target) and never crossing into another filesystem. ``on_file(size)`` runs after each unlink (pacing).
    ``expect``: the identity the directory must have (checked on the descriptor it is deleted through, before
    anything is deleted; ``OSError(ESTALE)`` otherwise). Returns the number of files removed."""
    _check_name(name)
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    removed = 0
    try:
        st = os.fstat(fd)
        if expect is not None and identity(st) != expect:
            raise OSError(errno.ESTALE, f"[identity_changed] {name} is no longer the directory that was checked "
                          f"(device {st.st_dev} inode {st.st_ino}, expected device {expect[0]} inode {expect[1]})")
        dev = st.st_dev
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

