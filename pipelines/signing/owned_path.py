"""Paths that only trusted users can change: the walk behind every host-file check of the executor.

A path is accepted only when every node the kernel would pass through to reach it is owned by a trusted uid and
writable by nobody else: ``/``, each directory, each symbolic link (followed by hand, so every directory a link
leads through is judged too) and the final node. A world-writable directory with the sticky bit (like ``/tmp``) is
accepted as a directory to pass through: nobody else can rename or replace an entry a trusted user owns there. A
symlink's own mode means nothing on Linux, so a link is judged by its owner and by the directory that holds it.
Each node is read with ``lstat``; nothing is opened, so a FIFO never blocks. POSIX ACLs are not inspected.

Once the walk accepts a path, only the trusted users can change what it names until the executor reads it, which is
what makes a check-then-use safe here.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import ConfigError
from pipelines.plan.policy import refuse

#: As the kernel's own limit on links followed while resolving one path (``MAXSYMLINKS``).
MAX_LINKS = 40


@dataclass(frozen=True, slots=True)
class VettedPath:
    """Where a vetted path really is (no link left in it) and the ``lstat`` of that final node."""

    real: Path
    st: os.stat_result


def owner_name(uid: int) -> str:
    """The user name of ``uid``, or ``uid N`` when the host has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_node(path: str | Path, st: os.stat_result, trusted: frozenset[int], rule: str) -> None:
    """PolicyViolation ``[rule]`` unless ``st`` (of ``path``) is owned by a trusted uid and writable by no one else.

    A symlink is judged by its owner only; a directory may be world-writable when it is sticky.
    """
    if st.st_uid not in trusted:
        allowed = " or ".join(sorted({owner_name(u) for u in trusted}))
        raise refuse(rule, f"{path} is owned by {owner_name(st.st_uid)}, not by {allowed}")
    if stat.S_ISLNK(st.st_mode):
        return
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        who = "group and others" if writable == (stat.S_IWGRP | stat.S_IWOTH) else (
            "its group" if writable == stat.S_IWGRP else "others")
        raise refuse(rule, f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}); "
                           f"only {' or '.join(sorted({owner_name(u) for u in trusted}))} may be able to change it")


def vet_path(path: str | Path, *, key: str, rule: str, trusted: frozenset[int]) -> VettedPath:
    """Walk ``path`` from ``/`` with ``lstat``, following links by hand, judging every node with :func:`check_node`.

    Raises:
        PolicyViolation: ``[rule]`` a node someone untrusted could change, or a link loop.
        ConfigError: the path does not exist or cannot be walked (``key`` names the setting in the message).
    """
    given = os.fspath(path)
    if not os.path.isabs(given):
        given = os.path.join(os.getcwd(), given)  # not abspath: ".." after a link must mean what the kernel makes of it
    try:
        return _walk(given, trusted, rule)
    except FileNotFoundError:
        raise ConfigError(f"{key}: {given} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {given}: {exc.strerror or exc}") from None


def _walk(given: str, trusted: frozenset[int], rule: str) -> VettedPath:
    current = "/"
    st = os.lstat(current)
    check_node(current, st, trusted, rule)
    pending = [p for p in reversed(given.split("/")) if p]  # a stack: the next component is last
    links = 0
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":  # the parent of a walked directory was itself walked (and judged) to get here
            current = os.path.dirname(current)
            st = os.lstat(current)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(20, "Not a directory", current)
        node = os.path.join(current, name)
        st = os.lstat(node)
        check_node(node, st, trusted, rule)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise refuse(rule, f"{given}: more than {MAX_LINKS} symbolic links (a loop?)")
            target = os.readlink(node)
            if target.startswith("/"):
                current = "/"
                st = os.lstat(current)
            pending.extend(p for p in reversed(target.split("/")) if p)
            continue
        current = node
    return VettedPath(Path(current), st)
