"""Real OpenSSH keys, allowed_signers files and ssh-agents for tests (``ssh-keygen``/``ssh-agent`` from the host).

A :class:`Keyring` keeps one directory: ``keys/<name>`` (private, no passphrase) and ``keys/<name>.pub``, and an
``allowed_signers`` file beside them. Everything is created by root-or-current-user with private modes, so the
executor's permission check accepts it unless a test loosens it on purpose.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BITS = {"rsa": ["-b", "2048"], "ed25519": [], "ecdsa": ["-b", "256"]}


def require_openssh() -> None:
    for tool in ("ssh-keygen", "ssh-agent", "ssh-add"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            pytest.skip(f"{tool} is not installed")


class Keyring:
    """Keys by principal name and the allowed_signers file that lists them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "keys").mkdir(parents=True, exist_ok=True, mode=0o700)
        self.allowed_signers = root / "allowed_signers"
        self.allowed_signers.touch(mode=0o600)

    def key(self, name: str, kind: str = "ed25519") -> Path:
        """The private key file of ``name`` (generated on first use)."""
        path = self.root / "keys" / name
        if not path.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", kind, *BITS[kind], "-N", "", "-C", name, "-f", str(path)],
                           check=True, capture_output=True)
        return path

    def public(self, name: str) -> str:
        """``type base64`` of ``name``'s public key."""
        return " ".join((self.root / "keys" / f"{name}.pub").read_text().split()[:2])

    def allow(self, principals: str, key_name: str, options: str = "") -> None:
        """Append ``principals [options] <key of key_name>`` to allowed_signers."""
        line = " ".join(p for p in (principals, options, self.public(key_name)) if p)
        with self.allowed_signers.open("a") as f:
            f.write(line + "\n")

    def allow_ca(self, principals: str, ca_name: str, options: str = "") -> None:
        """Append ``principals cert-authority[,options] <key of ca_name>``: certificates ``ca_name`` signs."""
        self.key(ca_name)
        self.allow(principals, ca_name, ",".join(o for o in ("cert-authority", options) if o))

    def certify(self, key_name: str, principals: str, *, ca_name: str = "ca", serial: int = 0) -> Path:
        """A user certificate of ``key_name``'s key for ``principals``, signed by ``ca_name``'s key; returns the
        ``-cert.pub`` file to sign with. Each certificate sits beside its own copy of the private key, so one key
        can hold any number of certificates."""
        keys = self.root / "keys"
        name = f"{key_name}~{principals.replace(',', '+')}~{ca_name}~{serial}"
        for suffix in ("", ".pub"):
            copy = keys / f"{name}{suffix}"
            copy.write_bytes((keys / f"{key_name}{suffix}").read_bytes())
            copy.chmod(0o600)
        self.key(ca_name)
        subprocess.run(["ssh-keygen", "-q", "-s", str(keys / ca_name), "-I", name, "-n", principals, "-z", str(serial),
                        str(keys / f"{name}.pub")], check=True, capture_output=True)
        return keys / f"{name}-cert.pub"

    def revoke(self, key_name: str) -> Path:
        """A revoked_keys file (plain public-key list) holding ``key_name``'s key."""
        path = self.root / "revoked_keys"
        with path.open("a") as f:
            f.write(self.public(key_name) + "\n")
        path.chmod(0o600)
        return path


@contextmanager
def ssh_agent(tmp: Path) -> Iterator[dict[str, str]]:
    """A real ssh-agent on a socket under ``tmp``; yields the environment to use it. Killed by its pid afterwards."""
    sock = tmp / "agent.sock"
    out = subprocess.run(["ssh-agent", "-s", "-a", str(sock)], check=True, capture_output=True, text=True).stdout
    pid = int(out.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        yield {"SSH_AUTH_SOCK": str(sock)}
    finally:
        os.kill(pid, signal.SIGTERM)


def ssh_add(env: dict[str, str], key: Path) -> None:
    subprocess.run(["ssh-add", str(key)], check=True, capture_output=True, env={**os.environ, **env})
