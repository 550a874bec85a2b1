"""The broker host's own trust: an OpenSSH ``allowed_signers`` file and an optional ``revoked_keys`` file.

Both are refused unless only root or the Kafka user can change them: the file, its directory and every
directory above it must be owned by one of them and not writable by group or others (a world-writable
directory with the sticky bit, like ``/tmp``, is accepted: nobody else can rename or replace an entry owned by
root or the Kafka user there). Whoever can change these files decides who may approve a deletion; a file the
data platform's service accounts can write would make signatures as weak as the warehouse. POSIX ACLs are not
inspected.

The Kafka user is ``executor.kafka_user`` (a user name or numeric uid); when unset it is the user the executor
runs as, which on a broker host is the user that owns the log dirs.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from pipelines.config.models import ExecutorConfig
from pipelines.errors import ConfigError
from pipelines.plan.policy import refuse


@dataclass(frozen=True, slots=True)
class HostTrust:
    """Paths of the vetted trust files, and the uids allowed to own them."""

    allowed_signers: Path
    revoked_keys: Path | None
    trusted_uids: frozenset[int]


def kafka_uid(kafka_user: str | None) -> int:
    """The uid of ``executor.kafka_user``; the executor's own effective uid when unset."""
    if kafka_user is None:
        return os.geteuid()
    if kafka_user.isdigit():
        return int(kafka_user)
    try:
        return pwd.getpwnam(kafka_user).pw_uid
    except KeyError:
        raise ConfigError(f"executor.kafka_user: no user {kafka_user!r} on this host") from None


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _check_node(path: Path, st: os.stat_result, trusted: frozenset[int], rule: str) -> None:
    if st.st_uid not in trusted:
        allowed = " or ".join(sorted({_owner_name(u) for u in trusted}))
        raise refuse(rule, f"{path} is owned by {_owner_name(st.st_uid)}, not by {allowed}")
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        who = "group and others" if writable == (stat.S_IWGRP | stat.S_IWOTH) else (
            "its group" if writable == stat.S_IWGRP else "others")
        raise refuse(rule, f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}); "
                           "only root or the Kafka user may be able to change it")


def check_trust_file(path: str | Path, *, key: str, rule: str, trusted: frozenset[int]) -> Path:
    """The absolute path of a vetted trust file. PolicyViolation ``[rule]`` when someone else could change it."""
    given = Path(os.path.abspath(path))
    try:
        real = given.resolve(strict=True)
        st = real.stat()
    except FileNotFoundError:
        raise ConfigError(f"executor.{key}: {given} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"executor.{key}: cannot read {given}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise refuse(rule, f"{given} is not a regular file")
    _check_node(real, st, trusted, rule)
    for directory in dict.fromkeys([*given.parents, *real.parents]):
        _check_node(directory, directory.stat(), trusted, rule)
    return real


def load_host_trust(executor: ExecutorConfig) -> HostTrust:
    """The host's trust files from ``executor.allowed_signers`` / ``revoked_keys``, each vetted."""
    if not executor.allowed_signers:
        raise ConfigError("executor.allowed_signers is not set, so no signed approval can be checked: name the "
                          "approvers' OpenSSH allowed_signers file, or set executor.require_signatures: false")
    trusted = frozenset({0, kafka_uid(executor.kafka_user)})
    allowed = check_trust_file(executor.allowed_signers, key="allowed_signers", rule="allowed_signers_permissions",
                               trusted=trusted)
    revoked = None
    if executor.revoked_keys:
        revoked = check_trust_file(executor.revoked_keys, key="revoked_keys", rule="revoked_keys_permissions",
                                   trusted=trusted)
    return HostTrust(allowed, revoked, trusted)
