"""What a command that reads a path or fsspec URL says when it cannot: one line, exit 3, no password in it.

Reaching an ``sftp://`` or object-store URL fails with an ``OSError`` (refused, unknown host, timeout), or with the
SSH library's own errors (``asyncssh.Error``, ``paramiko.SSHException``: authentication, host key); each is "nothing
could be read" (exit 3), never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import NoReturn

import click

from pipelines.cli.exit_codes import UNREADABLE
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

__all__ = ["cannot", "reach_errors"]


def reach_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning a path or URL could not be reached or read (stdlib's and the SSH libraries')."""
    errors: list[type[BaseException]] = [OSError, EOFError]
    try:
        from asyncssh import Error as AsyncSshError

        errors.append(AsyncSshError)
    except ImportError:
        pass
    try:
        from paramiko.ssh_exception import SSHException

        errors.append(SSHException)
    except ImportError:
        pass
    return tuple(errors)


def cannot(command: str, verb: str, target: str, exc: BaseException, secrets: Iterable[str] = (),
           code: int = UNREADABLE) -> NoReturn:
    """Print ``logdir-gc COMMAND: cannot VERB TARGET: reason`` (passwords masked, escaped) and exit ``code``."""
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    line = redact_text(f"cannot {verb} {target}: {reason}", secrets)
    click.echo(f"logdir-gc {command}: {shown(line, 1000)}", err=True)
    sys.exit(code)  # not ctx.exit: the group runs click with standalone_mode=False, which swallows it
