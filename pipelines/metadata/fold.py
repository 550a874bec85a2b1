"""The hot paths of PartitionChangeRecord and PartitionRecord replay, as one call the loader makes before the
ordinary replay.

Most records of a live metadata log are PartitionChangeRecords that only move ISR, leader, leader recovery state or
ELRs. ``TopicsDelta.replay_partition_change`` folds those into a per-partition pending state
(:func:`pipelines.metadata.partition_merge.pending_change`) once one exists. :func:`fold_pending` does exactly that
fold without the calls in between, and declines (returns False, touching nothing) every other record, which the
caller then replays the ordinary way. ``_native_fold.c`` is its compiled twin; :func:`folder` picks one.

Likewise most PartitionRecords register a partition of a topic created in the same delta. For a caller that counts
events rather than keeps them (``MetadataLoader(keep_partition_added=False)``), :func:`add_partition` does what
``TopicsDelta.replay_partition`` does to the delta for a partition the topic's change does not know yet (the
registration ``partition_from_record`` makes; the caller counts its one ``partition_added`` event) and declines every
other record; ``_native_fold.c``'s ``add`` is its compiled twin, :func:`adder` picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pipelines import native
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.uuid import MIGRATING
from pipelines.metadata.image import PartitionImage
from pipelines.metadata.partition_merge import (
    CHANGE_KEYS,
    KEEP_RECOVERY_STATE,
    NO_LEADER_CHANGE,
    fold_change,
    pending_change,
)
from pipelines.metadata.shared_values import SHARED_MAX, SHARED_VALUES

__all__ = ["ADD_CONTEXT", "FOLD_CONTEXT", "PARTITION_KEYS", "Adder", "Folder", "add_partition", "adder",
           "fold_pending", "folder"]

MODULE = "pipelines.metadata._native_fold"

FOLD_CONTEXT = ("topic_id", "partition_id", CHANGE_KEYS, "pending", NO_LEADER_CHANGE, KEEP_RECOVERY_STATE, "changed",
                "base", pending_change)
"""What the compiled twin is told instead of knowing it: field names, the attributes of a topic change (pending, changed
and base partitions), the "no change" values and how a pending state is made."""

Folder = Callable[[tuple, dict, Any], bool]

PARTITION_KEYS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "leader", "leader_epoch",
                  "partition_epoch", "leader_recovery_state", "eligible_leader_replicas", "last_known_elr")
"""The PartitionRecord fields a registration is made of (``partition_merge.partition_from_record``)."""

ADD_CONTEXT = ("topic_id", "partition_id", PARTITION_KEYS, "pending", "changed", "base",
               fast_constructor(PartitionImage), MIGRATING, SHARED_VALUES, SHARED_MAX)
"""What :func:`add_partition` and its compiled twin are told: field names, the attributes of a topic change, how a
registration is made, the directory id that stands for "not assigned yet", and the table of shared values
(``pipelines.metadata.shared_values``) with its bound."""

Adder = Callable[[tuple, dict, Any], bool]

_TUPLE_OR_NONE = (tuple, type(None))
_INT_OR_NONE = (int, type(None))


def _record_of_changed_topic(changed: dict[Any, Any], fields: Any, topic_key: str, partition_key: str,
                             keys: tuple[str, ...]) -> tuple[Any, Any, tuple] | None:
    """``(topic change, partition, the values of keys)`` of a record whose topic ``changed`` holds; None for anything
    but an exact dict with every key, or a topic the delta has not touched."""
    if type(fields) is not dict:
        return None
    try:
        change = changed.get(fields[topic_key])
        if change is None:
            return None
        return change, fields[partition_key], tuple(fields[k] for k in keys)
    except (KeyError, TypeError):
        return None


def fold_pending(context: tuple, changed: dict[Any, Any], fields: Mapping[str, Any]) -> bool:
    """Fold ``fields`` into ``changed[topic id].pending[partition]`` (made when absent) and return True, or return False
    and touch nothing.

    Takes only what the decoder produces (an exact dict; None, tuples and ints as values): the compiled twin declines
    the same records, so both leave the same state.
    """
    found = _record_of_changed_topic(changed, fields, context[0], context[1], context[2])
    if found is None:
        return False
    change, partition, values = found
    replicas, dirs, isr, removing, adding, elr, last_known_elr, leader, recovery = values
    if (
        replicas is not None or dirs is not None or removing is not None or adding is not None
        or type(isr) not in _TUPLE_OR_NONE or type(elr) not in _TUPLE_OR_NONE
        or type(last_known_elr) not in _TUPLE_OR_NONE
        or type(leader) not in _INT_OR_NONE or type(recovery) not in _INT_OR_NONE
    ):  # fmt: skip
        return False
    state = _pending_state(change, partition)
    if type(state) is not list or len(state) != 8 or type(state[3]) is not int or type(state[7]) is not int:
        return False
    fold_change(state, values)
    return True


def _pending_state(change: Any, partition: Any) -> Any:
    """``change.pending[partition]``, made by ``pending_change`` when absent; None for an unknown partition."""
    try:
        pending = change.pending
        if type(pending) is not dict:
            return None
        state = pending.get(partition)
        if state is not None:
            return state
        partitions = change.changed
        old = partitions.get(partition) if type(partitions) is dict else None
        if old is None:
            old = change.base[partition]
    except (LookupError, TypeError, AttributeError):
        return None
    if old is None:
        return None
    state = pending[partition] = pending_change(old)
    return state


def add_partition(context: tuple, changed: dict[Any, Any], fields: Mapping[str, Any]) -> bool:
    """Register a partition new to ``changed[topic id]`` in its ``changed`` as ``TopicsDelta.replay_partition`` does
    and return True (the caller counts the one ``partition_added`` event that replay would emit); or return False and
    touch nothing: a record that is not an exact dict of the decoder's types, an unknown topic, a partition the
    change knows (pending, changed or in its base: its events differ), or directories that do not fit the replicas
    (an error the ordinary replay reports)."""
    topic_key, partition_key, keys, pending_attr, changed_attr, base_attr, new_partition, migrating, table, bound = (
        context)
    found = _record_of_changed_topic(changed, fields, topic_key, partition_key, keys)
    if found is None:
        return False
    change, partition, values = found
    replicas, dirs, isr, removing, adding, leader, leader_epoch, partition_epoch, recovery, elr, last_known_elr = values
    if (
        type(partition) is not int or type(replicas) is not tuple
        or any(type(x) not in _TUPLE_OR_NONE for x in (dirs, isr, removing, adding, elr, last_known_elr))
        or any(type(x) is not int for x in (leader, leader_epoch, partition_epoch, recovery))
    ):  # fmt: skip
        return False
    if dirs and len(dirs) != len(replicas):
        return False
    try:
        pending, partitions, base = (getattr(change, a) for a in (pending_attr, changed_attr, base_attr))
        if type(pending) is not dict or type(partitions) is not dict:
            return False
        if partition in pending or partition in partitions or partition in base:
            return False
    except Exception:  # whatever the change's attributes raise, the ordinary replay meets it too
        return False
    if not dirs or dirs.count(migrating) == len(dirs):
        dirs = (migrating,) * len(replicas)
    if len(table) > bound:  # checked once, before the first of this record's values is added
        table.clear()
    share = table.setdefault
    partitions[partition] = new_partition(
        partition, share(replicas, replicas), () if isr is None else share(isr, isr),
        () if removing is None else removing, () if adding is None else adding, share(leader, leader), leader_epoch,
        partition_epoch, share(dirs, dirs), recovery, () if elr is None else elr,
        () if last_known_elr is None else last_known_elr)
    return True


def adder() -> Adder:
    """The compiled ``add`` when built (and not ruled out by ``KLGC_PURE_PYTHON``), else :func:`add_partition`."""
    compiled = native.load(MODULE)
    return add_partition if compiled is None else compiled.add


def folder() -> Folder:
    """The compiled ``fold`` when built (and not ruled out by ``KLGC_PURE_PYTHON``), else :func:`fold_pending`."""
    compiled = native.load(MODULE)
    return fold_pending if compiled is None else compiled.fold
