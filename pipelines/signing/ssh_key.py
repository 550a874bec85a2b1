"""OpenSSH public keys and certificates in their wire encoding, read far enough to say WHICH key signed.

An SSHSIG envelope carries the signer's public key, or an OpenSSH certificate (``PROTOCOL.certkeys``) of it. The
signature is made by the private key, so one key is one approver however it is presented: under any principal,
through any number of certificates, or as a plain key. :func:`parse_key_blob` returns the key a blob stands for
(for a certificate, the key it certifies) in one canonical encoding, so two blobs of the same key compare equal and
two different keys never do. RSA and DSA integers are compared by value: OpenSSH accepts an ``mpint`` with
leading zero bytes, so the same RSA key has several encodings.

Parsing is bounded: every length is checked against the bytes left, and a blob must end where its last field
ends. Anything else raises :class:`KeyBlobError`; the caller treats the signature as invalid (fails closed).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass

CERT_SUFFIX = "-cert-v01@openssh.com"
#: plain key type → its public fields in wire order: ``m`` an mpint, ``s`` a string
KEY_FIELDS: dict[str, str] = {
    "ssh-ed25519": "s",
    "ssh-rsa": "mm",
    "ssh-dss": "mmmm",
    "ecdsa-sha2-nistp256": "ss",
    "ecdsa-sha2-nistp384": "ss",
    "ecdsa-sha2-nistp521": "ss",
    "sk-ssh-ed25519@openssh.com": "ss",
    "sk-ecdsa-sha2-nistp256@openssh.com": "sss",
    "ssh-xmss@openssh.com": "ss",
}


class KeyBlobError(ValueError):
    """Bytes that are not one complete public key or certificate of a known type."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    """One public key: its plain type and its canonical wire encoding. Equal keys are equal values."""

    key_type: str
    blob: bytes

    @property
    def fingerprint(self) -> str:
        """``SHA256:<base64, no padding>``, the form ``ssh-keygen -l`` prints for the key."""
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode("ascii").rstrip("=")
        return f"SHA256:{digest}"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.blob).decode("ascii")


@dataclass(frozen=True, slots=True)
class Certificate:
    """The fields of an OpenSSH certificate that say what it vouches for and who vouches."""

    principals: tuple[str, ...]
    valid_after: int
    valid_before: int
    signature_key: PublicKey  # the certificate authority's key


@dataclass(frozen=True, slots=True)
class KeyBlob:
    """What a key blob stands for: ``key`` signs; ``certificate`` when the blob was a certificate of it."""

    key: PublicKey
    certificate: Certificate | None = None


class _Reader:
    """Bounded reads from one buffer: every length is checked against what is left."""

    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def take(self, size: int) -> bytes:
        if size < 0 or self.offset + size > len(self.data):
            raise KeyBlobError(f"truncated key blob: {size} bytes wanted at offset {self.offset} of {len(self.data)}")
        out = self.data[self.offset:self.offset + size]
        self.offset += size
        return out

    def uint32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def uint64(self) -> int:
        return int(struct.unpack(">Q", self.take(8))[0])

    def string(self) -> bytes:
        return self.take(self.uint32())

    def end(self) -> None:
        if self.offset != len(self.data):
            raise KeyBlobError(f"{len(self.data) - self.offset} unexpected bytes after the key")


def _string(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def _mpint(value: bytes) -> bytes:
    """The shortest encoding of the mpint ``value`` (leading zero bytes dropped, one kept before a high bit)."""
    digits = value.lstrip(b"\x00")
    return b"\x00" + digits if digits and digits[0] & 0x80 else digits


def _text(value: bytes, what: str) -> str:
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        raise KeyBlobError(f"{what} is not ASCII") from None


def _plain_type(key_type: str) -> str | None:
    """The plain key type of a certificate type (``sk-ssh-ed25519-cert-v01@openssh.com`` → ``sk-ssh-ed25519@…``)."""
    if not key_type.endswith(CERT_SUFFIX):
        return None
    base = key_type[:-len(CERT_SUFFIX)]
    return base + "@openssh.com" if base + "@openssh.com" in KEY_FIELDS else base


def _key_fields(reader: _Reader, key_type: str) -> PublicKey:
    """The public fields of a ``key_type`` key read from ``reader``, as that key's canonical blob."""
    fields = KEY_FIELDS.get(key_type)
    if fields is None:
        raise KeyBlobError(f"unsupported key type {key_type[:60]!r}")
    blob = _string(key_type.encode("ascii"))
    for kind in fields:
        value = reader.string()
        blob += _string(_mpint(value) if kind == "m" else value)
    return PublicKey(key_type, blob)


def _principals(data: bytes) -> tuple[str, ...]:
    reader, out = _Reader(data), []
    while reader.offset < len(data):
        out.append(_text(reader.string(), "a certificate principal"))
    return tuple(out)


def parse_key_blob(blob: bytes) -> KeyBlob:
    """The key ``blob`` stands for. Raises KeyBlobError for anything but one complete key or certificate."""
    reader = _Reader(blob)
    key_type = _text(reader.string(), "the key type")
    plain = _plain_type(key_type)
    if plain is None:
        key = _key_fields(reader, key_type)
        reader.end()
        return KeyBlob(key)
    reader.string()  # nonce
    key = _key_fields(reader, plain)
    reader.uint64()  # serial
    reader.uint32()  # certificate type (user or host)
    reader.string()  # key id
    principals = _principals(reader.string())
    valid_after, valid_before = reader.uint64(), reader.uint64()
    reader.string()  # critical options
    reader.string()  # extensions
    reader.string()  # reserved
    authority = parse_key_blob(reader.string())
    if authority.certificate is not None:
        raise KeyBlobError("a certificate signed by a certificate")
    reader.string()  # the authority's signature (ssh-keygen checks it)
    reader.end()
    return KeyBlob(key, Certificate(principals, valid_after, valid_before, authority.key))
