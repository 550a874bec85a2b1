"""Running OpenSSH's own tools (``ssh-keygen``, ``ssh-add``): one place for the binary, the timeout, the errors.

A tool is run by its absolute path, never looked up through ``PATH``: on a broker host ``PATH`` belongs to whoever
set up the environment, and the ssh-keygen that runs decides which signatures count. The executor runs
``executor.ssh_keygen`` (vetted like a trust file, see :mod:`pipelines.signing.trust`); approver-side commands run
:data:`DEFAULT_TOOLS`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from pipelines.errors import ConfigError

#: Bounds a stuck tool or agent. Signing may wait for a person (passphrase, FIDO touch): :data:`SIGN_TIMEOUT_S`.
TIMEOUT_S = 60.0
SIGN_TIMEOUT_S = 600.0

DEFAULT_SSH_KEYGEN = "/usr/bin/ssh-keygen"
#: Where OpenSSH's tools are run from when no path is configured (the path every Linux distribution and macOS use).
DEFAULT_TOOLS = {"ssh-keygen": DEFAULT_SSH_KEYGEN, "ssh-add": "/usr/bin/ssh-add"}


class SigningError(ConfigError):
    """A statement could not be signed: no key, an unusable key, no agent, or OpenSSH missing."""


def tool(name: str) -> str:
    """The absolute path to run for ``name`` (a tool name of :data:`DEFAULT_TOOLS` or an absolute path).

    SigningError when it is not an absolute path or not installed there; ``PATH`` is never searched.
    """
    path = DEFAULT_TOOLS.get(name, name)
    if not os.path.isabs(path):
        raise SigningError(f"{name}: an OpenSSH tool is run by its absolute path, never looked up through PATH")
    if not os.path.isfile(path):
        raise SigningError(f"{path} not found (install the OpenSSH client, or name its ssh-keygen in "
                           "executor.ssh_keygen)")
    return path


def run(name: str, args: Sequence[str], *, stdin: bytes = b"", timeout: float = TIMEOUT_S,
        ) -> subprocess.CompletedProcess[bytes]:
    """Run an OpenSSH tool (see :func:`tool`); the result whatever its exit status (callers decide what a failure
    means)."""
    try:
        return subprocess.run([tool(name), *args], input=stdin, capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SigningError(f"{name} {' '.join(args[:2])} did not finish within {timeout:.0f} s") from None


def last_line(data: bytes) -> str:
    """The last non-empty line of a tool's stderr, for a one-line message."""
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"
