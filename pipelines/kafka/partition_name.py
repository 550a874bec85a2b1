"""Partition directory names: ``<topic>-<p>``, and ``<topic>-<p>.<uniqueId>-delete|-future|-stray``.

Parsing follows ``LocalLog.parseTopicPartitionName`` (``storage/.../internals/log/LocalLog.java``; Scala
``kafka.log.LocalLog`` before 3.9) step by step, because any name it rejects makes ``LogManager.loadLogs`` throw and
the broker fail to start:

1. reject a name without ``-``;
2. reject a name ending ``-delete``/``-future``/``-stray`` unless it wholly matches
   ``(\\S+)-(\\S+)\\.(\\S+)<suffix>``;
3. for those suffixes keep the text before the LAST ``.``;
4. split at the LAST ``-``; both sides must be non-empty and the right one a Java ``int``.

Writers (``logDirNameWithSuffixCappedLength``) cap ``-delete`` and ``-stray`` names at 255 characters by cutting the
topic, so a parsed topic of a 255-character name may be a prefix of the real one. ``-future`` names are not capped.
Lengths are counted in code points; Kafka counts UTF-16 units, which differ only for non-BMP characters that a
valid topic name cannot contain.
"""

from __future__ import annotations

import re
import uuid as _uuid
from dataclasses import dataclass
from typing import Literal

from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.javatext import JAVA_NON_WS, parse_java_integer

DirKind = Literal["live", "delete", "future", "stray", "metadata", "unparseable"]

DELETE_SUFFIX = "-delete"
FUTURE_SUFFIX = "-future"
STRAY_SUFFIX = "-stray"
_SUFFIX_KIND: dict[str, DirKind] = {DELETE_SUFFIX: "delete", FUTURE_SUFFIX: "future", STRAY_SUFFIX: "stray"}
_SUFFIX_PATTERN = {
    suffix: re.compile(rf"({JAVA_NON_WS}+)-({JAVA_NON_WS}+)\.({JAVA_NON_WS}+){re.escape(suffix)}")
    for suffix in _SUFFIX_KIND
}

MAX_DIR_NAME_LENGTH = 255
"""Cap Kafka applies to ``-delete`` and ``-stray`` names (``LocalLog.logDirNameWithSuffixCappedLength``)."""

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
PREVIEW_METADATA_TOPIC = "@metadata"
"""The KRaft preview in 2.8 kept its metadata log in ``@metadata-0``."""
METADATA_TOPICS = frozenset({CLUSTER_METADATA_TOPIC, PREVIEW_METADATA_TOPIC})

REMOTE_LOG_INDEX_CACHE = "remote-log-index-cache"
"""``RemoteIndexCache.DIR_NAME``; ``LogManager.loadLogs`` skips it since 3.5."""
SPECIAL_DIR_NAMES = frozenset({REMOTE_LOG_INDEX_CACHE})


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    """A parsed directory name. ``topic``/``partition`` are None only for ``unparseable`` names."""

    name: str
    kind: DirKind
    topic: str | None
    partition: int | None
    unique_id: str | None = None
    reason: str | None = None

    @property
    def topic_may_be_truncated(self) -> bool:
        """True when Kafka's 255-character cap may have cut the topic (``-delete``/``-stray`` names only)."""
        return self.suffix in (DELETE_SUFFIX, STRAY_SUFFIX) and len(self.name) >= MAX_DIR_NAME_LENGTH

    @property
    def suffix(self) -> str | None:
        """``-delete``, ``-future``, ``-stray``, or None for a plain ``<topic>-<p>`` name."""
        return next((s for s in _SUFFIX_KIND if self.name.endswith(s)), None) if self.unique_id else None

    @property
    def parsed(self) -> bool:
        return self.kind != "unparseable"


_new_name = fast_constructor(PartitionDirName)


def _fail(name: str, reason: str) -> PartitionDirName:
    return PartitionDirName(name, "unparseable", None, None, None, reason)


def parse_partition_dir_name(name: str) -> PartitionDirName:
    """Parse one directory name with Kafka's algorithm; never raises.

    A name whose parsed topic is ``__cluster_metadata`` (or the 2.8 preview's ``@metadata``) has kind ``metadata``,
    whatever its suffix: ``LogManager`` never loads such directories.
    """
    dash = name.rfind("-")
    digits = name[dash + 1 :]
    if dash > 0 and len(digits) < 10 and digits.isdigit() and digits.isascii():  # <topic>-<p>, most names
        topic = name[:dash]
        if topic not in METADATA_TOPICS:
            return _new_name(name, "live", topic, int(digits), None, None)
    return parse_by_kafka_steps(name)


def parse_by_kafka_steps(name: str) -> PartitionDirName:
    """``parse_partition_dir_name`` without its shortcut for plain ``<topic>-<digits>`` names (the reference)."""
    if not name:
        return _fail(name, "empty name")
    if "-" not in name:
        return _fail(name, "no '-' in name")
    suffix = next((s for s in _SUFFIX_KIND if name.endswith(s)), None)
    unique_id: str | None = None
    stem = name
    if suffix is not None:
        if not _SUFFIX_PATTERN[suffix].fullmatch(name):
            return _fail(name, f"ends with {suffix!r} but is not <topic>-<partition>.<uniqueId>{suffix}")
        dot = name.rindex(".")
        stem, unique_id = name[:dot], name[dot + 1 : -len(suffix)]
    dash = stem.rfind("-")
    topic, partition_text = stem[:dash], stem[dash + 1 :]
    if not topic:
        return _fail(name, "empty topic")
    if not partition_text:
        return _fail(name, "empty partition")
    try:
        partition = parse_java_integer(partition_text)
    except ValueError:
        return _fail(name, f"partition {partition_text!r} is not a Java int")
    if topic in METADATA_TOPICS:
        kind: DirKind = "metadata"
    else:
        kind = _SUFFIX_KIND[suffix] if suffix else "live"
    return PartitionDirName(name, kind, topic, partition, unique_id)


def is_special_dir(name: str) -> bool:
    """A directory Kafka skips on purpose before parsing (``remote-log-index-cache``)."""
    return name in SPECIAL_DIR_NAMES


def would_block_startup(name: str) -> bool:
    """True when ``LogManager.loadLogs`` would throw on a DIRECTORY with this name (plain files are ignored)."""
    return not is_special_dir(name) and not parse_partition_dir_name(name).parsed


def kafka_startup_message(name: str) -> str:
    """The gist of Kafka's startup failure for an unparseable directory name."""
    return (
        f"'{name}' is not in the form of topic-partition or topic-partition.uniqueId-delete; "
        "Kafka's LogManager fails broker startup on it"
    )


# -- writers ----------------------------------------------------------------------------------------


def new_unique_id() -> str:
    """What Kafka uses: a random java.util.UUID without dashes (32 lowercase hex digits)."""
    return _uuid.uuid4().hex


def live_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _capped(topic: str, partition: int, unique_id: str | None, suffix: str) -> str:
    tail = f"-{partition}.{unique_id or new_unique_id()}{suffix}"
    keep = min(len(topic), MAX_DIR_NAME_LENGTH - len(tail))
    return topic[: max(keep, 0)] + tail


def delete_dir_name(topic: str, partition: int, unique_id: str | None = None) -> str:
    """``LocalLog.logDeleteDirName``: the topic is cut so that the whole name fits in 255 characters."""
    return _capped(topic, partition, unique_id, DELETE_SUFFIX)


def stray_dir_name(topic: str, partition: int, unique_id: str | None = None) -> str:
    """``LocalLog.logStrayDirName``: capped at 255 characters like ``-delete``."""
    return _capped(topic, partition, unique_id, STRAY_SUFFIX)


def future_dir_name(topic: str, partition: int, unique_id: str | None = None) -> str:
    """``LocalLog.logFutureDirName``: not capped."""
    return f"{topic}-{partition}.{unique_id or new_unique_id()}{FUTURE_SUFFIX}"
