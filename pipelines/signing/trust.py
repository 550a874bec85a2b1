"""The broker host's own trust: an OpenSSH ``allowed_signers`` file, an optional ``revoked_keys`` file, and the
``ssh-keygen`` that reads them (``executor.ssh_keygen``, an absolute path).

All three are refused unless only root or the Kafka user can change them: the file, its directory, every
directory above it and every symbolic link on the way must be owned by one of them and not writable by group or
others (a world-writable directory with the sticky bit, like ``/tmp``, is accepted: nobody else can rename or
replace an entry owned by root or the Kafka user there; see :mod:`pipelines.signing.owned_path`). Then their
content is read: a damaged trust file fails closed (:mod:`pipelines.signing.trust_content`). Whoever can change
these files decides who may approve a deletion; a file the data platform's service accounts can write would make
signatures as weak as the warehouse. POSIX ACLs are not inspected.

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
from pipelines.signing.openssh import DEFAULT_SSH_KEYGEN
from pipelines.signing.owned_path import vet_path
from pipelines.signing.trust_content import check_allowed_signers, check_revoked_keys


@dataclass(frozen=True, slots=True)
class HostTrust:
    """Paths of the vetted trust files, and the uids allowed to own them."""

    allowed_signers: Path
    revoked_keys: Path | None
    trusted_uids: frozenset[int]
    ssh_keygen: Path = Path(DEFAULT_SSH_KEYGEN)


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


def check_trust_file(path: str | Path, *, key: str, rule: str, trusted: frozenset[int],
                     section: str = "executor") -> Path:
    """The real path of a vetted trust file. PolicyViolation ``[rule]`` when someone else could change it.

    Every node on the way is judged, links included (:func:`~pipelines.signing.owned_path.vet_path`).
    """
    vetted = vet_path(path, key=f"{section}.{key}", rule=rule, trusted=trusted)
    if not stat.S_ISREG(vetted.st.st_mode):
        raise refuse(rule, f"{os.path.abspath(path)} is not a regular file")
    return vetted.real


def check_ssh_keygen(path: str, trusted: frozenset[int]) -> Path:
    """``executor.ssh_keygen`` vetted like a trust file, and executable: PolicyViolation ``[ssh_keygen_permissions]``
    otherwise."""
    real = check_trust_file(path, key="ssh_keygen", rule="ssh_keygen_permissions", trusted=trusted)
    if not os.access(real, os.X_OK):
        raise refuse("ssh_keygen_permissions", f"{path} is not executable")
    return real


def load_host_trust(executor: ExecutorConfig) -> HostTrust:
    """The host's trust files from ``executor.allowed_signers`` / ``revoked_keys``, each vetted."""
    if not executor.allowed_signers:
        raise ConfigError("executor.allowed_signers is not set, so no signed approval can be checked: name the "
                          "approvers' OpenSSH allowed_signers file, or set executor.require_signatures: false")
    trusted = frozenset({0, kafka_uid(executor.kafka_user)})
    ssh_keygen = check_ssh_keygen(executor.ssh_keygen, trusted)
    allowed = check_trust_file(executor.allowed_signers, key="allowed_signers", rule="allowed_signers_permissions",
                               trusted=trusted)
    revoked = None
    if executor.revoked_keys:
        revoked = check_trust_file(executor.revoked_keys, key="revoked_keys", rule="revoked_keys_permissions",
                                   trusted=trusted)
    check_allowed_signers(allowed, str(ssh_keygen))
    if revoked is not None:
        check_revoked_keys(revoked, str(ssh_keygen))
    return HostTrust(allowed, revoked, trusted, ssh_keygen)
