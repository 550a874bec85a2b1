"""Partition registration rules: PartitionRecord → ``PartitionImage`` and the PartitionChangeRecord merge.

Follows Kafka's ``PartitionRegistration``
(``metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java``):

- PartitionRecord: Directories absent, empty or all-MIGRATING become MIGRATING × |Replicas|; a non-empty array of
  another length is invalid. Absent ELR / LastKnownElr are empty.
- PartitionChangeRecord: a null list keeps the old one, an empty list clears it. Directories: null keeps the old
  array; the result (old or new) is turned into MIGRATING × |new Replicas| when it is empty or all-MIGRATING, and
  must otherwise match the replica count. Leader -2 keeps leader and epoch; any other value (-1 too) sets the
  leader and bumps the leader epoch. LeaderRecoveryState -1 keeps. The partition epoch always goes up by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
from typing import Any

from pipelines.errors import ReplayError
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.uuid import MIGRATING, Uuid
from pipelines.metadata.image import PartitionImage
from pipelines.metadata.shared_values import shared, shared_dirs, shared_table

NO_LEADER_CHANGE = -2
NO_LEADER = -1
KEEP_RECOVERY_STATE = -1
"""A PartitionChangeRecord's LeaderRecoveryState that keeps the old one."""

_new_partition = fast_constructor(PartitionImage)


def _ints(value: Any) -> tuple[int, ...]:
    return () if value is None else tuple(value)


def _default_to_migrating(directories: tuple[Uuid, ...] | None, replica_count: int) -> tuple[Uuid, ...]:
    if not directories or directories.count(MIGRATING) == len(directories):
        return shared((MIGRATING,) * replica_count)
    return directories


def partition_from_record(fields: Mapping[str, Any]) -> PartitionImage:
    """Build a registration from PartitionRecord fields.

    Raises:
        ReplayError: a non-empty Directories array whose length differs from Replicas.
    """
    share = shared_table().setdefault  # replica lists, ISRs and leaders repeat across partitions: one object each
    replicas = _ints(fields["replicas"])
    replicas = share(replicas, replicas)
    raw_dirs = fields.get("directories")
    dirs = shared_dirs(raw_dirs) if raw_dirs else ()
    if dirs and len(dirs) != len(replicas):
        raise ReplayError(f"{len(dirs)} directories for {len(replicas)} replicas")
    isr = _ints(fields.get("isr"))
    leader = fields.get("leader", NO_LEADER)
    return _new_partition(
        fields["partition_id"],
        replicas,
        replicas if isr == replicas else share(isr, isr),
        _ints(fields.get("removing_replicas")),
        _ints(fields.get("adding_replicas")),
        share(leader, leader),
        fields.get("leader_epoch", 0),
        fields.get("partition_epoch", 0),
        _default_to_migrating(dirs, len(replicas)),
        fields.get("leader_recovery_state", 0) or 0,
        _ints(fields.get("eligible_leader_replicas")),
        _ints(fields.get("last_known_elr")),
    )


CHANGE_KEYS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "eligible_leader_replicas",
               "last_known_elr", "leader", "leader_recovery_state")
"""The PartitionChangeRecord fields the merge reads, in the order of ``change_values``."""
_CHANGE_DEFAULTS = (None, None, None, None, None, None, None, NO_LEADER_CHANGE, KEEP_RECOVERY_STATE)
all_change_values = itemgetter(*CHANGE_KEYS)
"""``change_values`` of a mapping that has every key (raises KeyError otherwise)."""


def change_values(fields: Mapping[str, Any]) -> tuple:
    """The PartitionChangeRecord values ``merge_change`` reads, in ``CHANGE_KEYS`` order (absent ones at the
    "no change" defaults). The first four tell whether the replica set changes (what events report)."""
    try:
        return all_change_values(fields)
    except KeyError:
        return tuple(fields.get(k, d) for k, d in zip(CHANGE_KEYS, _CHANGE_DEFAULTS, strict=True))


def merge_partition_change(old: PartitionImage, fields: Mapping[str, Any]) -> PartitionImage:
    """Apply PartitionChangeRecord fields to ``old``.

    Raises:
        ReplayError: Directories that do not match the (new) replica count.
    """
    return merge_change(old, change_values(fields))


def merge_change(old: PartitionImage, values: tuple) -> PartitionImage:
    """``merge_partition_change`` over ``change_values(fields)``."""
    replicas_field, dirs_field, isr, removing, adding, elr, last_known_elr, leader, recovery = values
    if dirs_field is None and replicas_field is None:
        replicas = old.replicas
        dirs = old.directories  # hot path (ISR/leader changes): already normalised for these replicas
    else:
        replicas = old.replicas if replicas_field is None else shared(tuple(replicas_field))
        if dirs_field is not None:
            dirs = shared_dirs(dirs_field)
            if replicas_field is not None and dirs and len(dirs) != len(replicas):
                raise ReplayError(f"{len(dirs)} directories for {len(replicas)} replicas")
        else:
            dirs = old.directories
        dirs = _default_to_migrating(dirs, len(replicas))
        if len(dirs) != len(replicas):
            raise ReplayError(f"directories {len(dirs)} do not match {len(replicas)} replicas after the change")
    if leader is None or leader == NO_LEADER_CHANGE:
        leader, leader_epoch = old.leader, old.leader_epoch
    else:
        leader, leader_epoch = shared(leader), old.leader_epoch + 1
    return _new_partition(
        old.partition,
        replicas,
        old.isr if isr is None else shared(tuple(isr)),
        old.removing_replicas if removing is None else tuple(removing),
        old.adding_replicas if adding is None else tuple(adding),
        leader,
        leader_epoch,
        old.partition_epoch + 1,
        dirs,
        old.leader_recovery_state if recovery is None or recovery == KEEP_RECOVERY_STATE else recovery,
        old.elr if elr is None else tuple(elr),
        old.last_known_elr if last_known_elr is None else tuple(last_known_elr),
    )


def pending_change(old: PartitionImage) -> list:
    """A pending state over ``old`` that ``fold_change`` folds ISR/leader/ELR-only changes into and ``settle_change``
    turns into the registration ``merge_change`` would have given record by record: ``[old, isr, leader,
    leader changes, leader recovery state, elr, last known elr, changes]`` (None = unchanged)."""
    return [old, None, None, 0, None, None, None, 0]


def fold_change(state: list, values: tuple) -> None:
    """Fold ``change_values`` that leave replicas, directories, adding and removing replicas alone (the first four
    are None: checked by the caller) into ``state``."""
    isr, _rm, _ad, elr, last_known_elr, leader, recovery = values[2:]
    if isr is not None:
        state[1] = tuple(isr)  # converted here, as merge_change does: a bad value fails on its own record
    if leader is not None and leader != NO_LEADER_CHANGE:
        state[2] = leader
        state[3] += 1
    if recovery is not None and recovery != KEEP_RECOVERY_STATE:
        state[4] = recovery
    if elr is not None:
        state[5] = tuple(elr)
    if last_known_elr is not None:
        state[6] = tuple(last_known_elr)
    state[7] += 1


def settle_change(state: list) -> PartitionImage:
    """The registration a ``pending_change`` state stands for."""
    old, isr, leader, leader_changes, recovery, elr, last_known_elr, changes = state
    return _new_partition(
        old.partition,
        old.replicas,
        old.isr if isr is None else shared(isr),
        old.removing_replicas,
        old.adding_replicas,
        old.leader if leader_changes == 0 else shared(leader),
        old.leader_epoch + leader_changes,
        old.partition_epoch + changes,
        old.directories,
        old.leader_recovery_state if recovery is None else recovery,
        old.elr if elr is None else elr,
        old.last_known_elr if last_known_elr is None else last_known_elr,
    )


def clear_elr(old: PartitionImage) -> PartitionImage:
    """ClearElrRecord: drop ELR and LastKnownElr (the partition epoch goes up like any registration change)."""
    if not old.elr and not old.last_known_elr:
        return old
    return _new_partition(
        old.partition, old.replicas, old.isr, old.removing_replicas, old.adding_replicas, old.leader,
        old.leader_epoch, old.partition_epoch + 1, old.directories, old.leader_recovery_state, (), (),
    )
