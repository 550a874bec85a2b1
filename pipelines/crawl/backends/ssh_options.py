"""SSH connection settings from an ``sftp://`` URL plus the broker's ``storage_options``, in one place.

Keys understood (the same names fsspec's ``sshfs`` uses where they exist): ``host``, ``port``, ``username``,
``password``, ``key_filename`` (paramiko; a path or a list) or ``client_keys`` (sshfs), ``known_hosts`` (a file;
when absent the user's and system known_hosts files are used), ``timeout`` (seconds). An unknown host key is always
refused; there is no auto-accept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from pipelines.errors import ConfigError
from pipelines.redaction import redact_text

_KNOWN = frozenset({"host", "port", "username", "password", "key_filename", "client_keys", "known_hosts", "timeout"})


@dataclass(frozen=True, slots=True)
class SshTarget:
    host: str
    port: int
    username: str | None
    path: str
    key_filenames: tuple[str, ...]
    password: str | None
    known_hosts: str | None
    timeout: float

    def paramiko_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"hostname": self.host, "port": self.port, "timeout": self.timeout}
        if self.username:
            kwargs["username"] = self.username
        if self.key_filenames:
            kwargs["key_filename"] = list(self.key_filenames)
            kwargs["look_for_keys"] = False
        if self.password is not None:
            kwargs["password"] = self.password
        kwargs["allow_agent"] = not self.key_filenames and self.password is None
        return kwargs

    def sshfs_kwargs(self) -> dict[str, Any]:
        """Options for ``sshfs.SSHFileSystem`` (asyncssh), host-key checking on."""
        kwargs: dict[str, Any] = {"host": self.host, "port": self.port, "connect_timeout": self.timeout}
        if self.username:
            kwargs["username"] = self.username
        if self.key_filenames:
            kwargs["client_keys"] = list(self.key_filenames)
        if self.password is not None:
            kwargs["password"] = self.password
        kwargs["known_hosts"] = self.known_hosts or ()  # () = asyncssh's default files; None would disable checks
        return kwargs


def ssh_target(url: str, storage_options: Mapping[str, Any] | None = None) -> SshTarget:
    """Merge URL parts and options (options win over the URL for host/port/username).

    Raises:
        ConfigError: unknown option or no host.
    """
    opts = dict(storage_options or {})
    unknown = sorted(set(opts) - _KNOWN)
    if unknown:
        raise ConfigError(f"unknown sftp storage option(s): {', '.join(unknown)}")
    parts = urlsplit(url)
    host = opts.get("host") or parts.hostname
    if not host:
        raise ConfigError(f"no host in {redact_text(url)!r} and no storage_options.host")
    keys = opts.get("key_filename", opts.get("client_keys")) or ()
    if isinstance(keys, str):
        keys = (keys,)
    path = unquote(parts.path) if parts.scheme else url
    return SshTarget(
        host=str(host),
        port=int(opts.get("port") or parts.port or 22),
        username=opts.get("username") or (unquote(parts.username) if parts.username else None),
        path=path.rstrip("/") or "/",
        key_filenames=tuple(str(k) for k in keys),
        password=opts.get("password") or (unquote(parts.password) if parts.password else None),
        known_hosts=opts.get("known_hosts"),
        timeout=float(opts.get("timeout", 30)),
    )
