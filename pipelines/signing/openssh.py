"""Running OpenSSH's own tools (``ssh-keygen``, ``ssh-add``): one place for the binary, the timeout, the errors."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from pipelines.errors import ConfigError

#: Bounds a stuck tool or agent. Signing may wait for a person (passphrase, FIDO touch): :data:`SIGN_TIMEOUT_S`.
TIMEOUT_S = 60.0
SIGN_TIMEOUT_S = 600.0


class SigningError(ConfigError):
    """A statement could not be signed: no key, an unusable key, no agent, or OpenSSH missing."""


def tool(name: str) -> str:
    """The path of an OpenSSH tool; SigningError when it is not installed."""
    path = shutil.which(name)
    if path is None:
        raise SigningError(f"{name} not found on PATH (install the OpenSSH client)")
    return path


def run(name: str, args: Sequence[str], *, stdin: bytes = b"", timeout: float = TIMEOUT_S,
        ) -> subprocess.CompletedProcess[bytes]:
    """Run an OpenSSH tool; the result whatever its exit status (callers decide what a failure means)."""
    try:
        return subprocess.run([tool(name), *args], input=stdin, capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SigningError(f"{name} {' '.join(args[:2])} did not finish within {timeout:.0f} s") from None


def last_line(data: bytes) -> str:
    """The last non-empty line of a tool's stderr, for a one-line message."""
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"
