"""What one remote-tier object key says: the segment it belongs to and which of its objects it is.

Both supported plugins name a segment's objects ``<start offset, 20 digits>-<segment id>.<suffix>`` under a folder
that carries the topic name, the topic id and the partition (the folder layout is the plugin's; see
:mod:`pipelines.remote_tier.layout_aiven` and :mod:`pipelines.remote_tier.layout_local`). Kafka prints a Uuid as 22
characters of unpadded base64url (``[A-Za-z0-9_-]``) and topic names may contain ``-`` too, so every id is cut from
the RIGHT by its fixed length, never found by splitting at a ``-``.

A key is accepted only in the exact form the plugin writes (canonical Uuid text, 20-digit offset, partition without
sign or leading zero, a legal topic name): anything else is a :class:`RemoteKeyError`, which a listing turns into an
error row that is never planned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pipelines.errors import DecodeError
from pipelines.kafka.uuid import Uuid

__all__ = [
    "OFFSET_DIGITS",
    "UUID_CHARS",
    "RemoteKeyError",
    "RemoteObjectKey",
    "canonical_uuid",
    "parse_partition",
    "parse_segment_file",
    "parse_topic",
    "uuid_from_right",
]

UUID_CHARS = 22
"""Length of Kafka's Uuid text (``Uuid.toString``)."""
OFFSET_DIGITS = 20
"""Kafka's ``filenamePrefixFromOffset`` pads a start offset to 20 digits."""
MAX_TOPIC_LENGTH = 249
_TOPIC = re.compile(r"[A-Za-z0-9._-]+")
_B64URL = re.compile(r"[A-Za-z0-9_-]{22}")
_INT64_MAX = (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1


class RemoteKeyError(DecodeError):
    """An object key that is not in the form the configured layout writes."""


@dataclass(frozen=True, slots=True)
class RemoteObjectKey:
    """The parsed form of one key. ``kind`` is the file suffix without its dot (``log``, ``indexes``, ``index`` ...)."""

    topic: str
    topic_id: Uuid
    partition: int
    segment_id: Uuid
    start_offset: int
    kind: str


def uuid_from_right(text: str, what: str) -> tuple[str, Uuid]:
    """Split ``<head>-<uuid>`` at the fixed Uuid length from the right: ``(head, uuid)``.

    Raises:
        RemoteKeyError: ``text`` is too short, the character before the id is not ``-``, or the id is not a
            canonical Kafka Uuid (the text Kafka itself would print for it).
    """
    if len(text) < UUID_CHARS + 2 or text[-UUID_CHARS - 1] != "-":
        raise RemoteKeyError(f"{what} {text!r} does not end in -<22-character topic id>")
    head, tail = text[: -UUID_CHARS - 1], text[-UUID_CHARS:]
    return head, canonical_uuid(tail, what)


def canonical_uuid(text: str, what: str) -> Uuid:
    """The Uuid whose text is exactly ``text`` (22 base64url characters, unused bits zero)."""
    found = _canonical(text)
    if isinstance(found, str):
        raise RemoteKeyError(f"{what}: {found}")
    return found


@lru_cache(maxsize=1 << 16)
def _canonical(text: str) -> Uuid | str:
    """:func:`canonical_uuid` without the context: the Uuid, or what is wrong (cached: a topic's keys share its id,
    a segment's keys its id, so a listing parses each id once, not once per key)."""
    if not _B64URL.fullmatch(text):
        return f"{text!r} is not a 22-character base64url Uuid"
    try:
        uid = Uuid.from_string(text)
    except DecodeError as exc:
        return str(exc)
    if str(uid) != text:
        return f"{text!r} is not the text Kafka prints for any Uuid"
    return uid


def parse_topic(text: str, what: str) -> str:
    """A legal Kafka topic name (``[A-Za-z0-9._-]``, 1 to 249 characters, not ``.`` or ``..``)."""
    if not _TOPIC.fullmatch(text) or len(text) > MAX_TOPIC_LENGTH or text in (".", ".."):
        raise RemoteKeyError(f"{what}: {text!r} is not a legal topic name")
    return text


def parse_partition(text: str, what: str) -> int:
    """A partition number as Kafka prints it: decimal digits, no sign, no leading zero, at most int32 max."""
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0") or len(text) > 10:
        raise RemoteKeyError(f"{what}: {text!r} is not a partition number")
    n = int(text)
    if n > _INT32_MAX:
        raise RemoteKeyError(f"{what}: partition {text} is above the int32 range")
    return n


def parse_segment_file(name: str, suffixes: frozenset[str], what: str) -> tuple[int, Uuid, str]:
    """``<offset 20 digits>-<segment id 22>.<suffix>`` -> ``(start_offset, segment_id, suffix)``.

    Raises:
        RemoteKeyError: another shape, an offset beyond int64, or a suffix not in ``suffixes``.
    """
    head = OFFSET_DIGITS + 1 + UUID_CHARS
    if len(name) <= head + 1 or name[OFFSET_DIGITS] != "-" or name[head] != ".":
        raise RemoteKeyError(f"{what}: {name!r} is not <20-digit offset>-<segment id>.<suffix>")
    digits = name[:OFFSET_DIGITS]
    if not digits.isascii() or not digits.isdigit():
        raise RemoteKeyError(f"{what}: {digits!r} is not a 20-digit offset")
    offset = int(digits)
    if offset > _INT64_MAX:
        raise RemoteKeyError(f"{what}: offset {digits} is above the int64 range")
    segment_id = canonical_uuid(name[OFFSET_DIGITS + 1 : head], what)
    suffix = name[head + 1 :]
    if suffix not in suffixes:
        raise RemoteKeyError(f"{what}: suffix .{suffix} is not one of {', '.join(sorted(suffixes))}")
    return offset, segment_id, suffix
