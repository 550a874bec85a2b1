"""Kafka's 128-bit Uuid: topic ids (KIP-516) and log-directory ids (KIP-858).

Wire form: 16 bytes, most significant 64 bits first, big-endian. Text form: URL-safe base64 of those
16 bytes without padding, always 22 characters (``Uuid.toString`` in Kafka's clients). Kafka's
``fromString`` also accepts the 24-character padded form and rejects anything else, dashed UUIDs included.
"""

from __future__ import annotations

import base64
import binascii
from operator import itemgetter

from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import clip

_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_MASK64 = (1 << 64) - 1
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")
_TEXT: dict[tuple[int, int], str] = {}
"""``str(uuid)`` of recently printed ids; cleared when it reaches ``_TEXT_MAX`` entries."""
_TEXT_MAX = 1 << 16


class Uuid(tuple):
    """An immutable Kafka Uuid held as its two signed-agnostic 64-bit halves (unsigned here).

    A ``(msb, lsb)`` tuple underneath (like a NamedTuple): hashing, equality and ordering run in C, which
    matters because topic and directory ids are the dict keys of metadata replay. Hash and ordering are
    those of the ``(msb, lsb)`` pair.
    """

    __slots__ = ()
    __match_args__ = ("msb", "lsb")

    def __new__(cls, msb: int, lsb: int) -> Uuid:
        if not (0 <= msb <= _MASK64 and 0 <= lsb <= _MASK64):
            raise ValueError("Uuid halves must be unsigned 64-bit integers")
        return tuple.__new__(cls, (msb, lsb))

    msb: int = property(itemgetter(0), doc="Most significant 64 bits, unsigned.")  # type: ignore[assignment]
    lsb: int = property(itemgetter(1), doc="Least significant 64 bits, unsigned.")  # type: ignore[assignment]

    def __getnewargs__(self) -> tuple[int, int]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"Uuid(msb={self[0]!r}, lsb={self[1]!r})"

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> Uuid:
        """Build from the 16-byte wire form (MSB then LSB, big-endian)."""
        if len(data) != 16:
            raise DecodeError(f"a Uuid is 16 bytes, got {len(data)}")
        return cls(int.from_bytes(data[:8], "big"), int.from_bytes(data[8:], "big"))

    @classmethod
    def from_string(cls, text: str) -> Uuid:
        """Parse Kafka's base64url text form with ``Uuid.fromString``'s rules.

        Raises:
            DecodeError: not 22 characters (or 24 with ``==``), a character outside base64url, or not
                exactly 16 bytes once decoded. A dashed 36-character UUID is rejected like Kafka does.
        """
        if len(text) > 24:
            raise DecodeError(
                f"Uuid string too long ({len(text)} chars; dashed UUIDs are not Kafka's form): {clip(text)}"
            )
        body = text[:-2] if len(text) == 24 and text.endswith("==") else text
        if len(body) != 22 or not set(body) <= _B64_ALPHABET:
            raise DecodeError(f"not a 22-character base64url Uuid: {clip(text)}")
        try:
            raw = base64.urlsafe_b64decode(body + "==")
        except (binascii.Error, ValueError) as exc:  # pragma: no cover - alphabet checked above
            raise DecodeError(f"not a base64url Uuid: {clip(text)}") from exc
        if len(raw) != 16:
            raise DecodeError(f"Uuid string does not decode to 16 bytes: {clip(text)}")
        return cls.from_bytes(raw)

    @classmethod
    def from_canonical_text(cls, text: bytes) -> Uuid:
        """The Uuid whose ``str`` is ``text``: 22 base64url characters, the last one with its 4 unused bits zero.

        For callers that matched exactly that shape already (a hot path); anything else goes to ``from_string``.
        """
        n = int.from_bytes(binascii.a2b_base64(text.translate(_FROM_URLSAFE) + b"=="), "big")
        return tuple.__new__(cls, (n >> 64, n & _MASK64))

    @classmethod
    def from_hex(cls, text: str) -> Uuid:
        """Parse 32 hex digits, with or without the dashes of the canonical UUID layout."""
        digits = text.replace("-", "")
        if len(digits) != 32:
            raise DecodeError(f"not a 32-hex-digit UUID: {clip(text)}")
        try:
            return cls.from_bytes(bytes.fromhex(digits))
        except ValueError as exc:
            raise DecodeError(f"not a hex UUID: {clip(text)}") from exc

    # -- forms --------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        return (self[0] << 64 | self[1]).to_bytes(16, "big")

    def __str__(self) -> str:
        """Kafka's text form: 22 characters of unpadded base64url (remembered: a replay prints each directory id
        once per partition)."""
        text = _TEXT.get(self)
        if text is None:
            if len(_TEXT) >= _TEXT_MAX:
                _TEXT.clear()
            raw = (self[0] << 64 | self[1]).to_bytes(16, "big")
            text = _TEXT[self] = binascii.b2a_base64(raw, newline=False)[:22].translate(_URLSAFE).decode("ascii")
        return text

    def hex(self) -> str:
        """32 lowercase hex digits, no dashes."""
        return self.to_bytes().hex()

    def dashed(self) -> str:
        """The canonical 8-4-4-4-12 UUID layout, as KIP-516 shows ids."""
        h = self.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    # -- reserved values ----------------------------------------------------------------------
    @property
    def is_reserved_directory_id(self) -> bool:
        """KIP-858 reserves MSB == 0 and LSB < 100 for special directory ids."""
        return self.msb == 0 and self.lsb < 100

    @property
    def is_reserved(self) -> bool:
        """``Uuid.RESERVED`` = {ZERO, ONE}: never a real topic id."""
        return self.msb == 0 and self.lsb in (0, 1)


ZERO = Uuid(0, 0)
"""All-zero id: means "none". Also KIP-858's MIGRATING directory id."""
ONE = Uuid(0, 1)
"""Topic id of ``__cluster_metadata`` (METADATA_TOPIC_ID); also KIP-858's UNASSIGNED directory id."""
METADATA_TOPIC_ID = ONE
MIGRATING = ZERO
UNASSIGNED = ONE
LOST = Uuid(0, 2)

DIRECTORY_ID_NAMES = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}
