"""Signing a statement with ``ssh-keygen -Y sign``: with a key file, or with the one key ssh-agent holds.

``key`` may name a private key file (a passphrase is asked for on the terminal by ssh-keygen itself), or a
public key file whose private half is in ssh-agent or on a FIDO authenticator (``sk-ssh-ed25519`` keys work
unchanged: the authenticator asks for a touch). Without ``key`` the agent at ``$SSH_AUTH_SOCK`` must hold exactly
one key, which is then used.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipelines.signing.envelope import EnvelopeError, read_envelope
from pipelines.signing.openssh import SIGN_TIMEOUT_S, SigningError, last_line, run
from pipelines.signing.statement import NAMESPACE, Statement


@dataclass(frozen=True, slots=True)
class SignedStatement:
    """A statement with its armored SSHSIG signature, as stored in ``gc_plan_signatures``."""

    statement: Statement
    signature: str
    key_fingerprint: str

    @property
    def text(self) -> str:
        return self.statement.render()


def agent_public_key() -> str:
    """The one public key ssh-agent holds. SigningError when there is no agent, no key or several keys."""
    if not os.environ.get("SSH_AUTH_SOCK"):
        raise SigningError("no key to sign with: give --key PATH, or start ssh-agent and ssh-add your key")
    listed = run("ssh-add", ["-L"])
    keys = [ln for ln in listed.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    if listed.returncode != 0 or not keys:
        why = last_line(listed.stderr or listed.stdout)
        raise SigningError(f"ssh-agent has no usable key ({why}); ssh-add your key or give --key PATH")
    if len(keys) > 1:
        raise SigningError(f"ssh-agent holds {len(keys)} keys; choose one with --key PATH (its .pub file is enough)")
    return keys[0]


def sign(statement: Statement, *, key: str | Path | None = None) -> SignedStatement:
    """Sign ``statement`` under :data:`NAMESPACE`. Raises SigningError with ssh-keygen's reason on failure."""
    with tempfile.TemporaryDirectory(prefix="logdir-gc-sign-") as tmp:
        if key is None:
            key_file = Path(tmp) / "agent.pub"
            key_file.write_text(agent_public_key() + "\n", encoding="utf-8")
        else:
            key_file = Path(key)
            if not key_file.is_file():
                raise SigningError(f"--key {key}: no such key file")
        done = run("ssh-keygen", ["-q", "-Y", "sign", "-n", NAMESPACE, "-f", str(key_file)], stdin=statement.to_bytes(),
                   timeout=SIGN_TIMEOUT_S)
    if done.returncode != 0:
        said = last_line(done.stderr)
        problem = _key_problem(key)
        raise SigningError(f"ssh-keygen could not sign with {key or 'the agent key'}: "
                           + (f"{problem} (ssh-keygen: {said})" if problem else said))
    armored = done.stdout.decode("ascii", "replace")
    try:
        envelope = read_envelope(armored)
    except EnvelopeError as exc:
        raise SigningError(f"ssh-keygen returned no SSH signature: {exc}") from None
    return SignedStatement(statement, armored.strip() + "\n", envelope.fingerprint)


def _key_problem(key: str | Path | None) -> str | None:
    """What is wrong with the ``--key`` file ssh-keygen could not sign with, when its first bytes tell (ssh-keygen's
    own words blame a ``.pub`` file it looked for instead); None for a private key, whose reason ssh-keygen gives."""
    if key is None:
        return None
    try:
        with open(key, "rb") as f:
            head = f.read(64)
    except OSError:
        return None
    if head.startswith(b"-----BEGIN "):
        return None
    if re.match(rb"(ssh-|ecdsa-|sk-)[\w@.-]+ ", head):
        return "it is a public key and its private key is not in ssh-agent: ssh-add it, or give the private key file"
    return "it is not an OpenSSH key: give a private key file, or a .pub whose key is in ssh-agent"
