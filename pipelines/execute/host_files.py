"""The executor's host files: the config and every local file it names that decides what is trusted or compared.

Whoever can change the config decides everything the executor does: which warehouse and plans it reads, which
controller metadata it re-checks items against, which keys it trusts and who else may own its files
(``executor.kafka_user``). So ``apply``, ``restore``, ``purge``, ``prestart`` and ``plans verify`` refuse
(``[host_config_permissions]``) a config file that anyone but root or the user the executor runs as could change:
the file, every directory above it and every link on the way must be owned by one of them and writable by nobody
else (:func:`~pipelines.signing.owned_path.vet_path`). ``executor.kafka_user`` never vouches for the config that
names it.

Once the config is vetted, the files it names are judged the same way, root, the executor's user and
``executor.kafka_user`` being trusted:

- ``metadata.source`` when it is a local copy (a ``__cluster_metadata-0`` dir, a snapshot or segment, a
  ``metadata dump-zk`` file): the path and, for a directory, every entry in it (``[metadata_source_permissions]``);
  so is ``metadata.zookeeper_tls.ca_file``, which decides which ZooKeeper is believed. Remote sources (a live
  ZooKeeper ensemble, sftp or object-store URLs) are not files and are left alone;
- the parent of each quarantine root (the parent of each log dir of the brokers acted on): whoever can write it
  can swap the quarantine root between its check and a rename (``[quarantine_parent_permissions]``);
- ``executor.state_dir`` (journal, locks), or the nearest existing directory above it (``[state_dir_permissions]``).

The trust files and ``executor.ssh_keygen`` are vetted where they are read (:mod:`pipelines.signing.trust`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from pipelines.config.models import AppConfig
from pipelines.crawl.backends.registry import local_path, scheme_of
from pipelines.errors import ConfigError
from pipelines.plan.policy import refuse
from pipelines.signing.owned_path import check_node, vet_path
from pipelines.signing.trust import kafka_uid

#: A metadata copy with more entries than this is not a copy of one metadata partition.
MAX_SOURCE_ENTRIES = 100_000


def config_uids() -> frozenset[int]:
    """Who may own the config: root and the user the executor runs as, never ``executor.kafka_user``."""
    return frozenset({0, os.geteuid()})


def host_uids(config: AppConfig) -> frozenset[int]:
    """Who may own the files a vetted config names: root, the executor's user and ``executor.kafka_user``."""
    return frozenset({0, os.geteuid(), kafka_uid(config.executor.kafka_user)})


def vet_config_file(path: str | os.PathLike[str]) -> Path:
    """The config file's real path. PolicyViolation ``[host_config_permissions]`` when someone else could change it;
    ConfigError when it does not exist."""
    rule = "host_config_permissions"
    if not os.path.exists(path):  # worded as the config loader words it (a documented message)
        raise ConfigError(f"cannot read config {path}: {os.strerror(errno.ENOENT)}")
    vetted = vet_path(path, key="--config", rule=rule, trusted=config_uids())
    if not stat.S_ISREG(vetted.st.st_mode):  # as the config loader words it (exit 4), never opened
        raise ConfigError(f"cannot read config {path}: not a regular file (FIFO, socket or device)")
    return vetted.real


def local_file_path(url: str | None) -> str | None:
    """``url`` as a local path when the local backend would read it (a plain path, ``file://``, ``local://``: the
    crawl's own ``registry.local_path``), or None for a remote URL or nothing."""
    if not url or scheme_of(url) not in ("local", "file"):
        return None
    return local_path(url)


def vet_metadata_source(config: AppConfig) -> None:
    """``metadata.source`` when local (the path and every entry below it) and the ZooKeeper TLS CA file."""
    rule, trusted = "metadata_source_permissions", host_uids(config)
    source = local_file_path(config.metadata.source)
    if source is not None:
        vetted = vet_path(source, key="metadata.source", rule=rule, trusted=trusted)
        if stat.S_ISDIR(vetted.st.st_mode):
            _vet_tree(vetted.real, rule, trusted)
    tls = config.metadata.zookeeper_tls
    if tls is not None and tls.ca_file:
        vet_path(tls.ca_file, key="metadata.zookeeper_tls.ca_file", rule=rule, trusted=trusted)


def _vet_tree(root: Path, rule: str, trusted: frozenset[int]) -> None:
    """Every entry under ``root`` (a vetted directory); a link is walked to wherever it leads."""
    pending, seen = [root], 0
    while pending:
        directory = pending.pop()
        for entry in os.scandir(directory):
            seen += 1
            if seen > MAX_SOURCE_ENTRIES:
                raise ConfigError(f"metadata.source: {root} holds more than {MAX_SOURCE_ENTRIES} entries; name the "
                                  "__cluster_metadata-0 directory itself")
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                vetted = vet_path(entry.path, key="metadata.source", rule=rule, trusted=trusted)
                if stat.S_ISDIR(vetted.st.st_mode):
                    pending.append(vetted.real)
                continue
            check_node(entry.path, st, trusted, rule)
            if stat.S_ISDIR(st.st_mode):
                pending.append(Path(entry.path))


def vet_broker_dirs(config: AppConfig, broker_ids: Iterable[int]) -> None:
    """The parent of each quarantine root of ``broker_ids`` and the state dir of each of them."""
    from pipelines.execute.apply import broker_config, local_path, state_dir

    trusted = host_uids(config)
    for broker_id in broker_ids:
        broker = broker_config(config, broker_id)
        for url in broker.log_dirs:
            parent = Path(local_path(url)).parent
            vetted = vet_path(parent, key="quarantine root's parent", rule="quarantine_parent_permissions",
                              trusted=trusted)
            if not stat.S_ISDIR(vetted.st.st_mode):
                raise refuse("quarantine_parent_permissions", f"{parent} is not a directory")
        vet_path(_existing(state_dir(config, broker)), key="executor.state_dir", rule="state_dir_permissions",
                 trusted=trusted)


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (what decides who can create it)."""
    path = Path.cwd() / path  # an absolute path stays as it is; never shortened by hand (see owned_path)
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def vet_named_files(config: AppConfig, broker_ids: Iterable[int], *, controller: bool) -> None:
    """Every local file ``config`` names for a command acting on ``broker_ids``; ``controller``: the command
    re-reads the controller metadata (``apply``, ``prestart``)."""
    if controller:
        vet_metadata_source(config)
    vet_broker_dirs(config, broker_ids)
