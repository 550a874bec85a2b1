"""Reading an armored SSHSIG signature (OpenSSH's PROTOCOL.sshsig) far enough to name its key and namespace.

This never decides whether a signature is valid: ``ssh-keygen -Y verify`` does (:mod:`pipelines.signing.verify`).
It only tells a reader which key made a signature (its ``SHA256:`` fingerprint, as ``ssh-keygen -l`` prints it)
and under which namespace, so a refusal can say who and why, and approvals can be counted per key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_END = "-----END SSH SIGNATURE-----"
_MAGIC = b"SSHSIG"


class EnvelopeError(ValueError):
    """Text that is not an armored SSHSIG signature."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """The outer fields of one SSHSIG signature."""

    public_key: bytes  # the SSH wire encoding of the signer's public key (or certificate)
    namespace: str
    hash_algorithm: str

    @property
    def key_type(self) -> str:
        return _strings(self.public_key, 1)[0].decode("ascii", "replace")

    @property
    def fingerprint(self) -> str:
        """``SHA256:<base64, no padding>`` of the public key, the form ``ssh-keygen -l`` prints."""
        digest = base64.b64encode(hashlib.sha256(self.public_key).digest()).decode("ascii").rstrip("=")
        return f"SHA256:{digest}"

    def openssh_public_key(self) -> str:
        """The key as one ``authorized_keys``-style line (type and base64), for allowed_signers or ``-Q``."""
        return f"{self.key_type} {base64.b64encode(self.public_key).decode('ascii')}"


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
    _strings(public_key, 1)  # the key blob starts with its type
    return Envelope(public_key, namespace.decode("utf-8", "replace"), hash_algorithm.decode("ascii", "replace"))
