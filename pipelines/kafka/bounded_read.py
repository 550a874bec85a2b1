"""Size bounds for every file the product reads whole, and for what it repeats of their content in messages.

One table of limits per kind of file (:data:`LIMITS`); :func:`read_regular_file` refuses a file above its limit
from its ``fstat`` size, before reading a byte (an 8 GiB sparse ``meta.properties`` costs nothing), and again while
reading (a file that grows after the ``fstat``). The refusal is :class:`FileTooLarge`, an ``OSError`` (``EFBIG``),
so every reader already handles it as an unreadable file: an error row in a crawl, one line from the CLI.

Files streamed line by line or batch by batch (metadata-log segments, inventories) are bounded per record instead;
:func:`clip` cuts a value repeated in a message, so a long line is never echoed whole.
"""

from __future__ import annotations

import errno
import json
import os
import stat as stat_mod
from itertools import accumulate
from typing import Any

from pipelines.errors import DecodeError

__all__ = [
    "DEFAULT_LIMIT",
    "JSON_MAX_DEPTH",
    "LIMITS",
    "FileTooLarge",
    "clip",
    "kind_of",
    "limit_for",
    "loads_json",
    "read_regular_file",
    "shorten",
]

KIB = 1024
MIB = 1024 * KIB

LIMITS: dict[str, int] = {
    # a broker's own small files: a few hundred bytes when Kafka writes them
    "meta_properties": 64 * KIB,
    "partition_metadata": 64 * KIB,
    "quorum_state": 64 * KIB,
    "clean_shutdown": 64 * KIB,
    "leader_epoch_checkpoint": 4 * MIB,  # one line per leader epoch still in the log
    "checkpoint": 32 * MIB,  # one line per partition of the log dir: ~100 bytes x 300k partitions
    # the product's own files
    "config": 4 * MIB,
    "trust": 4 * MIB,  # allowed_signers, revoked_keys
    "manifest": 16 * MIB,
    "plan": 256 * MIB,
    "journal": 256 * MIB,
    "absence_log": 64 * MIB,
    "mark": 64 * KIB,  # the journal's high-water mark
    "metadata_dump": 1024 * MIB,  # a ZooKeeper dump or a topics description, read once per run
}
"""Bytes a file of each kind may have; the value is part of the one-line refusal."""

KIND_BY_NAME: dict[str, str] = {
    "meta.properties": "meta_properties",
    "partition.metadata": "partition_metadata",
    "quorum-state": "quorum_state",
    ".kafka_cleanshutdown": "clean_shutdown",
    "manifest.json": "manifest",
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "recovery-point-offset-checkpoint": "checkpoint",
    "log-start-offset-checkpoint": "checkpoint",
    "replication-offset-checkpoint": "checkpoint",
    "cleaner-offset-checkpoint": "checkpoint",
}
"""The kind of a log-dir file by its name (a reader that knows only the path)."""

DEFAULT_LIMIT = 256 * MIB
"""Any other file read whole."""

JSON_MAX_DEPTH = 64
"""Nesting a JSON document the product reads may have (its own plans and manifests nest 5 levels)."""

_CLIP = 120


class FileTooLarge(OSError):
    """A file is larger than the limit for its kind; nothing of it was kept."""

    def __init__(self, path: str, limit: int, kind: str) -> None:
        super().__init__(errno.EFBIG, f"larger than the {limit}-byte limit for a {kind.replace('_', ' ')} file", path)
        self.limit = limit
        self.kind = kind

    @classmethod
    def recorded(cls, reason: str, path: str) -> FileTooLarge:
        """The error as an inventory recorded it: its reason and path (the limit and kind are in the reason)."""
        exc = cls.__new__(cls)
        OSError.__init__(exc, errno.EFBIG, reason, path)
        exc.limit, exc.kind = 0, ""
        return exc


def limit_for(kind: str) -> int:
    return LIMITS.get(kind, DEFAULT_LIMIT)


def kind_of(path: str) -> str:
    """The kind of the file at ``path`` by its name (a log dir's files, a quarantine manifest, an executor journal);
    ``"file"`` (:data:`DEFAULT_LIMIT`) for any other."""
    name = os.path.basename(path)
    kind = KIND_BY_NAME.get(name)
    if kind is not None:
        return kind
    if name.startswith("journal-broker-") and name.endswith(".jsonl"):
        return "journal"
    return "file"


def read_regular_file(path: str, kind: str | None = None, limit: int | None = None) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes (default: the limit of ``kind``, by default
    the kind its name tells, :func:`kind_of`).

    Anything else raises ``OSError`` without blocking: opened with ``O_NONBLOCK`` and checked with ``fstat`` before
    reading (a FIFO named ``partition.metadata`` would otherwise block ``open`` until a writer appears), and a file
    above the limit raises :class:`FileTooLarge` before a byte is read, or as soon as a growing file passes it.
    """
    kind = kind_of(path) if kind is None else kind
    cap = limit_for(kind) if limit is None else limit
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            if stat_mod.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            raise OSError(errno.EINVAL, "not a regular file (FIFO, socket or device)", path)
        if st.st_size > cap:
            raise FileTooLarge(path, cap, kind)
        first = os.read(fd, st.st_size + 1)
        if len(first) <= st.st_size:  # a short read of a regular file is its end: one read() in the common case
            return first
        chunks = [first]  # it grew since the fstat
        size = len(first)
        while chunk := os.read(fd, min(1 << 16, cap + 1 - size)):
            size += len(chunk)
            if size > cap:
                raise FileTooLarge(path, cap, kind)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_size(data: bytes, path: str, kind: str) -> bytes:
    """``data`` when it is within the limit of ``kind``, else :class:`FileTooLarge` (content a lister handed over)."""
    cap = limit_for(kind)
    if len(data) > cap:
        raise FileTooLarge(path, cap, kind)
    return data


def clip(value: object, width: int = _CLIP) -> str:
    """``repr(value)``, cut to ``width`` characters when longer (saying how long it was): a value echoed in a
    message is never the whole of a large file."""
    return shorten(repr(value), width)


def shorten(text: str, width: int = _CLIP) -> str:
    """``text`` cut to ``width`` characters when longer, saying how long it was."""
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text)} chars)"


def loads_json(text: str | bytes, what: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads`` for a document nested at most ``max_depth`` levels.

    Raises:
        DecodeError: nested deeper (checked on the text before parsing, so no recursion limit is ever reached).
        ValueError: not JSON (``json.JSONDecodeError``), as ``json.loads`` does.
    """
    depth = json_depth(text)
    if depth > max_depth:
        raise DecodeError(f"{what}: JSON nested deeper than {max_depth} levels")
    return json.loads(text)


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of brackets outside strings (an upper bound on a document's nesting: the parser finds
    any other fault). Escapes are dropped (``\\\\`` pairs, then ``\\"``), so the text between two quotes is a string
    and is cut out; the brackets left are counted. ``bytes`` methods do the passes, plus one step per bracket."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b"[" not in raw and b"{" not in raw:
        return 0
    outside = b"".join(raw.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    brackets = outside.translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
