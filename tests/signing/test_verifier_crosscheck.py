"""The verifier (``ssh-keygen -Y verify``) held to an independent one (the ``sshsig`` package from PyPI), on real
ed25519 and RSA signatures, and a FIDO ``sk-ssh-ed25519`` signature verified by ssh-keygen.

ssh-keygen cannot make an ``sk-`` key here: ``ssh-keygen -t ed25519-sk`` needs a FIDO authenticator (it fails with
"device not found" on a machine without one, as on CI). The sk test therefore builds the signature in software
exactly as an authenticator lays it out (OpenSSH PROTOCOL.u2f: sha256(application) || flags || counter ||
sha256(SSHSIG data), signed with an ed25519 key) and checks the broker host's side, which needs no hardware.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import struct
import subprocess
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sshsig
from ssh_keys import Keyring, require_openssh

from pipelines.signing.envelope import read_envelope
from pipelines.signing.signer import sign
from pipelines.signing.statement import NAMESPACE, Statement
from pipelines.signing.trust import HostTrust
from pipelines.signing.verify import check_novalidate, verify_signature

NOW = datetime.now(timezone.utc).replace(microsecond=0)
STATEMENT = Statement(action="approve", cluster="prod", cluster_id="MkU3OEVBNTcwNTJENDM2Qg", plan_id="p1",
                      content_hash="sha256:" + "ab" * 32, brokers=(1, 2), expires_at=NOW.replace(year=NOW.year + 1),
                      signer="alice", signed_at=NOW)


@pytest.fixture(autouse=True)
def _openssh() -> None:
    require_openssh()


def _trust(keys: Keyring) -> HostTrust:
    return HostTrust(keys.allowed_signers, None, frozenset({0}))


def _cases(keys: Keyring, kind: str) -> dict[str, tuple[bytes, str]]:
    key = keys.key("alice", kind)
    good = sign(STATEMENT, key=key)
    git = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "git", "-f", str(key)], input=STATEMENT.to_bytes(),
                         capture_output=True, check=True).stdout.decode()
    lines = good.signature.splitlines()  # the last base64 line before the END line holds signature bytes
    last = lines[-2]
    flipped = [*lines[:-2], last[:5] + ("A" if last[5] != "A" else "B") + last[6:], lines[-1]]
    return {
        "good": (STATEMENT.to_bytes(), good.signature),
        "other statement": (dataclasses.replace(STATEMENT, brokers=(1, 2, 3)).to_bytes(), good.signature),
        "namespace git": (STATEMENT.to_bytes(), git),
        "flipped byte": (STATEMENT.to_bytes(), "\n".join(flipped) + "\n"),
    }


def _sshsig_accepts(message: bytes, signature: str, public: str) -> bool:
    try:
        key = sshsig.check_signature(message, signature, NAMESPACE)
    except (sshsig.InvalidSignature, ValueError):
        return False
    return key == sshsig.PublicKey.from_openssh_str(public)


@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_ssh_keygen_and_the_sshsig_package_agree(tmp_path: Path, kind: str) -> None:
    keys = Keyring(tmp_path)
    cases = _cases(keys, kind)
    keys.allow("alice", "alice")
    ours = {name: verify_signature(m, s, "alice", _trust(keys), NOW).ok for name, (m, s) in cases.items()}
    crypto = {name: check_novalidate(m, s) for name, (m, s) in cases.items()}
    theirs = {name: _sshsig_accepts(m, s, keys.public("alice")) for name, (m, s) in cases.items()}
    assert ours == crypto == theirs == {"good": True, "other statement": False, "namespace git": False,
                                        "flipped byte": False}


@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_the_fingerprint_read_from_a_signature_is_ssh_keygens(tmp_path: Path, kind: str) -> None:
    keys = Keyring(tmp_path)
    signed = sign(STATEMENT, key=keys.key("alice", kind))
    listed = subprocess.run(["ssh-keygen", "-l", "-f", f"{keys.key('alice')}.pub"], capture_output=True, text=True,
                            check=True).stdout.split()[1]
    assert signed.key_fingerprint == listed == read_envelope(signed.signature).fingerprint
    assert read_envelope(signed.signature).openssh_public_key() == keys.public("alice")


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _software_sk_signature(message: bytes) -> tuple[str, str]:
    """An ``sk-ssh-ed25519@openssh.com`` SSHSIG over ``message`` as a FIDO authenticator would make it, and the
    public key line for allowed_signers."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    kind, application, flags, counter = b"sk-ssh-ed25519@openssh.com", b"ssh:", 0x01, 42  # 0x01: user present
    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key = _ssh_string(kind) + _ssh_string(raw) + _ssh_string(application)
    ns = NAMESPACE.encode()
    data = b"SSHSIG" + _ssh_string(ns) + _ssh_string(b"") + _ssh_string(b"sha512") + _ssh_string(
        hashlib.sha512(message).digest())
    signed = (hashlib.sha256(application).digest() + bytes([flags]) + struct.pack(">I", counter)
              + hashlib.sha256(data).digest())
    sig = _ssh_string(kind) + _ssh_string(private.sign(signed)) + bytes([flags]) + struct.pack(">I", counter)
    blob = (b"SSHSIG" + struct.pack(">I", 1) + _ssh_string(key) + _ssh_string(ns) + _ssh_string(b"")
            + _ssh_string(b"sha512") + _ssh_string(sig))
    body = "\n".join(textwrap.wrap(base64.b64encode(blob).decode(), 70))
    armored = f"-----BEGIN SSH SIGNATURE-----\n{body}\n-----END SSH SIGNATURE-----\n"
    return armored, f"{kind.decode()} {base64.b64encode(key).decode()}"


def test_a_fido_sk_ed25519_signature_is_verified_like_any_other(tmp_path: Path) -> None:
    keys = Keyring(tmp_path)
    signature, public = _software_sk_signature(STATEMENT.to_bytes())
    keys.allowed_signers.write_text(f"alice {public}\n")
    assert read_envelope(signature).key_type == "sk-ssh-ed25519@openssh.com"
    assert verify_signature(STATEMENT.to_bytes(), signature, "alice", _trust(keys), NOW).ok
    other = dataclasses.replace(STATEMENT, plan_id="p2").to_bytes()
    refused = verify_signature(other, signature, "alice", _trust(keys), NOW)
    assert (refused.ok, refused.rule) == (False, "signature_invalid")
