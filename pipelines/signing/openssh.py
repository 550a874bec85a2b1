"""Running OpenSSH's own tools (``ssh-keygen``, ``ssh-add``): one place for the binary, the timeout, the errors."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from pipelines.errors import ConfigError

#: No OpenSSH tool call here waits for a person except a passphrase prompt; this bounds a stuck agent.
TIMEOUT_S = 60.0


class SigningError(ConfigError):
    """A statement could not be signed: no key, an unusable key, no agent, or OpenSSH missing."""


def tool(name: str) -> str:
    """The path of an OpenSSH tool; SigningError when it is not installed."""
    path = shutil.which(name)
    if path is None:
        raise SigningError(f"{name} not found on PATH (install the OpenSSH client)")
    return path


def run(name: str, args: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None,
        ) -> subprocess.CompletedProcess[bytes]:
    """Run an OpenSSH tool; the result whatever its exit status (callers decide what a failure means)."""
    environment = {**os.environ, **(env or {})}
    try:
        return subprocess.run([tool(name), *args], input=stdin, capture_output=True, timeout=TIMEOUT_S,
                              env=environment, check=False)
    except subprocess.TimeoutExpired:
        raise SigningError(f"{name} {' '.join(args[:2])} did not finish within {TIMEOUT_S:.0f} s") from None


def last_line(data: bytes) -> str:
    """The last non-empty line of a tool's stderr, for a one-line message."""
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"
