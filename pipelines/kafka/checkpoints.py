"""Kafka's checkpoint text format: the four root offset checkpoints and ``leader-epoch-checkpoint``.

Layout (``server-common/.../CheckpointFile.java``), UTF-8, one item per ``readLine`` line::

    <version>          e.g. 0
    <entry count>
    <entry>            offset files: "<topic> <partition> <offset>"; leader epochs: "<epoch> <startOffset>"

Reader rules reproduced here:

- an empty file, or one that ends after the version line, has no entries;
- the version and count lines are parsed with ``Integer.parseInt`` (no blanks allowed) and the version must equal
  the expected one (0 for every file we read);
- entries are split with Java's ``\\s+`` (so a leading blank yields an empty first token) and must have exactly
  3 (offsets) or 2 (epochs) tokens; numbers are Java ``int``/``long``;
- after all entries, their number must equal the count line.

Kafka raises on the first problem; so do we, with a typed ``CheckpointError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import clip
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.javatext import parse_java_integer, read_lines, split_whitespace

RECOVERY_POINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET = "log-start-offset-checkpoint"
REPLICATION_OFFSET = "replication-offset-checkpoint"
CLEANER_OFFSET = "cleaner-offset-checkpoint"
ROOT_CHECKPOINTS: tuple[str, ...] = (RECOVERY_POINT, LOG_START_OFFSET, REPLICATION_OFFSET, CLEANER_OFFSET)
LEADER_EPOCH = "leader-epoch-checkpoint"
CURRENT_VERSION = 0

T = TypeVar("T")


class CheckpointError(DecodeError):
    """Root of checkpoint parse errors; ``status`` is the inventory status it maps to. ``offset`` = line number."""

    status = "malformed"


class MalformedCheckpointLine(CheckpointError):
    """A line is not a number where one is needed, or an entry has the wrong token count or bad numbers."""


class CheckpointVersionMismatch(CheckpointError):
    status = "version_mismatch"

    def __init__(self, found: int, expected: int) -> None:
        super().__init__(f"unrecognised version {found}, expected {expected}", 1)
        self.found = found
        self.expected = expected


class CheckpointCountMismatch(CheckpointError):
    status = "count_mismatch"

    def __init__(self, declared: int, found: int) -> None:
        super().__init__(f"expected {declared} entries, found {found}", 2)
        self.declared = declared
        self.found = found


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    topic: str
    partition: int
    offset: int

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class Checkpoint(Generic[T]):
    """A parsed checkpoint. ``declared_count`` is None when the file stops after the version line (or is empty)."""

    version: int | None
    declared_count: int | None
    entries: tuple[T, ...]

    @property
    def status(self) -> str:
        """``empty_file`` for a file without any line, else ``ok``."""
        return "empty_file" if self.version is None else "ok"


def _parse_offset_entry(tokens: list[str]) -> OffsetEntry:
    return OffsetEntry(tokens[0], parse_java_integer(tokens[1]), parse_java_integer(tokens[2], bits=64))


def _parse_epoch_entry(tokens: list[str]) -> EpochEntry:
    return EpochEntry(parse_java_integer(tokens[0]), parse_java_integer(tokens[1], bits=64))


def _read(
    data: bytes | str, tokens_per_entry: int, make: Callable[[list[str]], T], expected_version: int
) -> Checkpoint[T]:
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedCheckpointLine(f"not UTF-8 at byte {exc.start}: {exc.reason}", None) from None
    else:
        text = data
    lines = read_lines(text)
    if not lines:
        return Checkpoint(None, None, ())
    try:
        version = parse_java_integer(lines[0])
    except ValueError:
        raise MalformedCheckpointLine(f"version line is not an int: {clip(lines[0])}", 1) from None
    if version != expected_version:
        raise CheckpointVersionMismatch(version, expected_version)
    if len(lines) == 1:
        return Checkpoint(version, None, ())
    try:
        declared = parse_java_integer(lines[1])
    except ValueError:
        raise MalformedCheckpointLine(f"count line is not an int: {clip(lines[1])}", 2) from None
    if declared < 0:  # ArrayList(negative) throws in Kafka
        raise MalformedCheckpointLine(f"negative entry count {declared}", 2)
    entries: list[T] = []
    for line_no, line in enumerate(lines[2:], start=3):
        tokens = split_whitespace(line)
        if len(tokens) != tokens_per_entry:
            raise MalformedCheckpointLine(f"expected {tokens_per_entry} fields: {clip(line)}", line_no)
        try:
            entries.append(make(tokens))
        except ValueError as exc:
            raise MalformedCheckpointLine(f"bad number in {clip(line)}: {exc}", line_no) from None
    if len(entries) != declared:
        raise CheckpointCountMismatch(declared, len(entries))
    return Checkpoint(version, declared, tuple(entries))


def read_offset_checkpoint(data: bytes | str, *, expected_version: int = CURRENT_VERSION) -> Checkpoint[OffsetEntry]:
    """Parse one of the four root offset checkpoints.

    Raises:
        CheckpointError: MalformedCheckpointLine, CheckpointVersionMismatch or CheckpointCountMismatch.
    """
    return _read(data, 3, _parse_offset_entry, expected_version)


_new_checkpoint = fast_constructor(Checkpoint)
_new_epoch = fast_constructor(EpochEntry)
_KAFKA_WRITTEN_EPOCHS = re.compile(rb"0\n([0-9]{1,9})\n((?:[0-9]{1,9} [0-9]{1,18}\n)*)")
"""A version-0 leader-epoch-checkpoint as Kafka writes it, every number in range (a broker keeps one per replica)."""


def read_leader_epoch_checkpoint(
    data: bytes | str, *, expected_version: int = CURRENT_VERSION
) -> Checkpoint[EpochEntry]:
    """Parse ``leader-epoch-checkpoint``. Raises like ``read_offset_checkpoint``."""
    written = _KAFKA_WRITTEN_EPOCHS.fullmatch(data) if isinstance(data, bytes) and expected_version == 0 else None
    if written is not None:  # what Kafka writes: no line rules to apply; the rules decide any other file
        numbers = [int(n) for n in written.group(2).split()]
        declared = int(written.group(1))
        if len(numbers) == 2 * declared:
            return _new_checkpoint(0, declared, tuple(map(_new_epoch, numbers[::2], numbers[1::2])))
    return _read(data, 2, _parse_epoch_entry, expected_version)


def _write(lines: list[str], version: int) -> bytes:
    return "".join(f"{line}\n" for line in [str(version), str(len(lines)), *lines]).encode()


def write_offset_checkpoint(entries: Iterable[OffsetEntry], version: int = CURRENT_VERSION) -> bytes:
    """What ``CheckpointFile.write`` produces on Linux: one ``\\n``-terminated line per item."""
    return _write([f"{e.topic} {e.partition} {e.offset}" for e in entries], version)


def write_leader_epoch_checkpoint(entries: Iterable[EpochEntry], version: int = CURRENT_VERSION) -> bytes:
    return _write([f"{e.epoch} {e.start_offset}" for e in entries], version)
