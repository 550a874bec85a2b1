"""The hot path of PartitionChangeRecord replay, as one call the loader makes before the ordinary replay.

Most records of a live metadata log are PartitionChangeRecords that only move ISR, leader, leader recovery state or
ELRs. ``TopicsDelta.replay_partition_change`` folds those into a per-partition pending state
(:func:`pipelines.metadata.partition_merge.pending_change`) once one exists. :func:`fold_pending` does exactly that
fold without the calls in between, and declines (returns False, touching nothing) every other record, which the
caller then replays the ordinary way. ``_native_fold.c`` is its compiled twin; :func:`folder` picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pipelines import native
from pipelines.metadata.partition_merge import (
    CHANGE_KEYS,
    KEEP_RECOVERY_STATE,
    NO_LEADER_CHANGE,
    fold_change,
    pending_change,
)

__all__ = ["FOLD_CONTEXT", "Folder", "fold_pending", "folder"]

MODULE = "pipelines.metadata._native_fold"

FOLD_CONTEXT = ("topic_id", "partition_id", CHANGE_KEYS, "pending", NO_LEADER_CHANGE, KEEP_RECOVERY_STATE, "changed",
                "base", pending_change)
"""What the compiled twin is told instead of knowing it: field names, the attributes of a topic change (pending, changed
and base partitions), the "no change" values and how a pending state is made."""

Folder = Callable[[tuple, dict, Any], bool]

_TUPLE_OR_NONE = (tuple, type(None))
_INT_OR_NONE = (int, type(None))


def fold_pending(context: tuple, changed: dict[Any, Any], fields: Mapping[str, Any]) -> bool:
    """Fold ``fields`` into ``changed[topic id].pending[partition]`` (made when absent) and return True, or return False
    and touch nothing.

    Takes only what the decoder produces (an exact dict; None, tuples and ints as values): the compiled twin declines
    the same records, so both leave the same state.
    """
    topic_key, partition_key, keys = context[0], context[1], context[2]
    if type(fields) is not dict:
        return False
    try:
        change = changed.get(fields[topic_key])
        if change is None:
            return False
        partition = fields[partition_key]
        values = tuple(fields[k] for k in keys)
    except (KeyError, TypeError):
        return False
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


def folder() -> Folder:
    """The compiled ``fold`` when built (and not ruled out by ``KLGC_PURE_PYTHON``), else :func:`fold_pending`."""
    compiled = native.load(MODULE)
    return fold_pending if compiled is None else compiled.fold
