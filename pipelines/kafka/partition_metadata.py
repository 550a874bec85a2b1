"""``partition.metadata`` (KIP-516): ``version: 0`` and ``topic_id: <Uuid>`` on two lines, no trailing newline.

Reader rules (``storage/.../checkpoint/PartitionMetadataReadBuffer.java``): the file is UTF-8; each of the first two
lines (``BufferedReader.readLine``) is split once on the regex ``:\\s+``; the version is a Java int and must be
``>= 0`` (higher versions are accepted for downgrade compatibility); the id goes through ``Uuid.fromString``
(22 base64url characters, or 24 with ``==``) and must not be the all-zero id. Anything after line 2 is ignored.

Key names: Kafka up to 3.x ignored the text before ``:``; newer Kafka rejects a line whose key is not exactly
``version`` / ``topic_id``. By default we read such a file the way old brokers did and report the key as a problem;
``strict=True`` applies the newer rule and raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import clip
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.javatext import parse_java_integer, read_lines
from pipelines.kafka.problems import Problem
from pipelines.kafka.uuid import ZERO, Uuid

FILE_NAME = "partition.metadata"
CURRENT_VERSION = 0
_SEPARATOR = re.compile(":[ \t\n\x0b\f\r]+")


class PartitionMetadataError(DecodeError):
    """Root of the ``partition.metadata`` errors; ``status`` is the inventory status it maps to."""

    status = "malformed"


class EmptyPartitionMetadata(PartitionMetadataError):
    """The file has no first line at all (Kafka: ``readLine`` returns null)."""

    status = "empty"


class MalformedPartitionMetadataLine(PartitionMetadataError):
    """A line is missing, has no ``:<blank>`` separator, a wrong key (strict), or a bad/negative version."""

    status = "malformed"


class ZeroTopicId(PartitionMetadataError):
    """``topic_id`` is ``AAAAAAAAAAAAAAAAAAAAAA`` (Uuid.ZERO_UUID), which Kafka rejects."""

    status = "zero_id"


class InvalidTopicId(PartitionMetadataError):
    """``topic_id`` is not Kafka's base64url form: dashed UUID, hex, bad base64, wrong length."""

    status = "invalid_id"


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """A parsed file. ``problems`` lists tolerated oddities (never anything Kafka would refuse when lenient)."""

    version: int
    topic_id: Uuid
    problems: tuple[Problem, ...] = ()


_new_partition_metadata = fast_constructor(PartitionMetadata)


def _split(line: str | None, key: str, line_no: int, strict: bool, problems: list[Problem]) -> str:
    if line is None:
        raise MalformedPartitionMetadataLine(f"missing line {line_no} ({clip(key)})", line_no)
    parts = _SEPARATOR.split(line, maxsplit=1)
    if len(parts) != 2:
        raise MalformedPartitionMetadataLine(f"line {line_no} has no ': ' separator: {clip(line)}", line_no)
    if parts[0] != key:
        if strict:
            raise MalformedPartitionMetadataLine(f"line {line_no} key is {clip(parts[0])}, expected {key!r}", line_no)
        problems.append(
            Problem(
                "error",
                "partition_metadata_noncanonical_key",
                f"line {line_no} key is {clip(parts[0])}, not {clip(key)}; Kafka 4.x rejects this file as malformed",
            )
        )
    return parts[1]


_CANONICAL = re.compile(rb"version: 0\ntopic_id: ([A-Za-z0-9_-]{21}[AQgw])")
"""What Kafka writes: version 0 and a 22-character id whose last character carries no stray bits."""
_ZERO_TEXT = str(ZERO).encode()


def kafka_written_topic_id(data: bytes) -> str | None:
    """The topic id (text form) of a file exactly as Kafka writes it, else None: then ``read_partition_metadata``
    gives the answer or the error. A crawl reads one file per partition dir; this skips the Uuid round trip."""
    canonical = _CANONICAL.fullmatch(data)
    if canonical is None or canonical.group(1) == _ZERO_TEXT:
        return None
    return canonical.group(1).decode("ascii")


def read_partition_metadata(data: bytes | str, *, strict: bool = False) -> PartitionMetadata:
    """Parse the file's content.

    Raises:
        EmptyPartitionMetadata, MalformedPartitionMetadataLine, ZeroTopicId, InvalidTopicId: see the classes.
    """
    canonical = _CANONICAL.fullmatch(data) if isinstance(data, bytes) else None
    if canonical is not None:  # a crawl reads one per partition dir: skip the line rules for Kafka's own bytes
        topic_id = Uuid.from_canonical_text(canonical.group(1))
        if topic_id != ZERO:
            return _new_partition_metadata(CURRENT_VERSION, topic_id, ())
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedPartitionMetadataLine(f"not UTF-8: {exc.reason}", exc.start) from None
    else:
        text = data
    lines = read_lines(text)
    if not lines:
        raise EmptyPartitionMetadata("partition.metadata is empty", 0)
    problems: list[Problem] = []
    version_text = _split(lines[0], "version", 1, strict, problems)
    try:
        version = parse_java_integer(version_text)
    except ValueError:
        raise MalformedPartitionMetadataLine(f"version {clip(version_text)} is not an int", 1) from None
    if version < CURRENT_VERSION:
        raise MalformedPartitionMetadataLine(f"unrecognized version {version}", 1)
    id_text = _split(lines[1] if len(lines) > 1 else None, "topic_id", 2, strict, problems)
    try:
        topic_id = Uuid.from_string(id_text)
    except DecodeError as exc:
        raise InvalidTopicId(f"topic_id {clip(id_text)} is not a Kafka Uuid: {exc}", 2) from None
    if topic_id == ZERO:
        raise ZeroTopicId("topic_id is the all-zero Uuid", 2)
    if len(lines) > 2:
        problems.append(Problem("info", "partition_metadata_extra_lines", f"{len(lines) - 2} line(s) after topic_id"))
    if version != CURRENT_VERSION:
        problems.append(Problem("info", "partition_metadata_future_version", f"version {version} (current is 0)"))
    return PartitionMetadata(version, topic_id, tuple(problems))


def write_partition_metadata(topic_id: Uuid, version: int = CURRENT_VERSION) -> bytes:
    """Kafka's exact bytes (``PartitionMetadata.encode``): two lines, no trailing newline."""
    return f"version: {version}\ntopic_id: {topic_id}".encode()
