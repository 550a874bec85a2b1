"""Reading an armored SSHSIG signature (OpenSSH's PROTOCOL.sshsig) far enough to name its key and namespace.

This never decides whether a signature is valid: ``ssh-keygen -Y verify`` does (:mod:`pipelines.signing.verify`).
It only tells a reader which key made a signature and under which namespace, so a refusal can say who and why, and
approvals can be counted per key. The key is the one that signed: for a certificate, the key it certifies
(:mod:`pipelines.signing.ssh_key`), never the certificate itself, whose bytes the signature does not cover.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

from pipelines.signing.ssh_key import Certificate, KeyBlob, KeyBlobError, PublicKey, parse_key_blob

_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_END = "-----END SSH SIGNATURE-----"
_MAGIC = b"SSHSIG"


class EnvelopeError(ValueError):
    """Text that is not an armored SSHSIG signature."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """The outer fields of one SSHSIG signature."""

    public_key: bytes  # the SSH wire encoding of the signer's public key (or certificate), as stored
    namespace: str
    hash_algorithm: str
    signer: KeyBlob  # what ``public_key`` stands for

    @property
    def key(self) -> PublicKey:
        """The key that signed (a certificate's certified key), canonical: one key, one value."""
        return self.signer.key

    @property
    def certificate(self) -> Certificate | None:
        return self.signer.certificate

    @property
    def key_type(self) -> str:
        return self.key.key_type

    @property
    def fingerprint(self) -> str:
        """``SHA256:`` fingerprint of the key that signed (for a certificate, of its certified key)."""
        return self.key.fingerprint

    def openssh_public_key(self) -> str:
        """The key that signed as one ``authorized_keys``-style line (type and base64), for allowed_signers."""
        return f"{self.key.key_type} {self.key.base64}"


def _strings(data: bytes, count: int, offset: int = 0) -> list[bytes]:
    out = []
    for _ in range(count):
        if offset + 4 > len(data):
            raise EnvelopeError("truncated SSHSIG field")
        (size,) = struct.unpack_from(">I", data, offset)
        offset += 4
        if offset + size > len(data):
            raise EnvelopeError("truncated SSHSIG field")
        out.append(data[offset:offset + size])
        offset += size
    return out


def read_envelope(armored: str) -> Envelope:
    """Parse ``-----BEGIN SSH SIGNATURE-----`` text. Raises EnvelopeError for anything else."""
    text = armored.strip()
    if not (text.startswith(_BEGIN) and text.endswith(_END)):
        raise EnvelopeError("not an armored SSH signature")
    body = "".join(text[len(_BEGIN):-len(_END)].split())
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeError("SSH signature armor is not base64") from None
    if not blob.startswith(_MAGIC) or len(blob) < 10:
        raise EnvelopeError("not an SSHSIG blob")
    (version,) = struct.unpack_from(">I", blob, len(_MAGIC))
    if version != 1:
        raise EnvelopeError(f"SSHSIG version {version} is not supported")
    public_key, namespace, _reserved, hash_algorithm, _signature = _strings(blob, 5, len(_MAGIC) + 4)
    try:
        signer = parse_key_blob(public_key)
    except KeyBlobError as exc:
        raise EnvelopeError(f"the signer's key: {exc}") from None
    return Envelope(public_key, namespace.decode("utf-8", "replace"), hash_algorithm.decode("ascii", "replace"),
                    signer)
