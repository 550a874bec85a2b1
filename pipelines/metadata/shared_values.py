"""One object per distinct value of what a large image repeats in every partition: replica lists, ISRs, directory
lists, leaders and directory ids.

A fleet's 633k partitions hold a few thousand distinct replica lists over a thousand brokers. Each decoded copy is a
tuple (64 bytes) plus, for broker ids above 256 (which Python does not cache), an int object per replica (32 bytes);
shared, they were 155 of the image's 345 MiB. Values are immutable, so sharing changes nothing but memory.

The tables are module-wide (the replay paths that build registrations have no common owner) and bounded: past
``SHARED_MAX`` distinct values a table starts over rather than grow.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pipelines.kafka.uuid import Uuid

__all__ = ["SHARED_MAX", "SHARED_VALUES", "shared", "shared_dirs", "shared_table"]

T = TypeVar("T")

SHARED_MAX = 1 << 18
SHARED_VALUES: dict[Any, Any] = {}
"""Tuples of ints or of directory ids, and ints. Never ``Uuid``s: a ``Uuid`` is a ``(msb, lsb)`` tuple and would
equal a two-replica list of the same ints (``_IDS`` holds them)."""
_IDS: dict[Uuid, Uuid] = {}


def shared_table() -> dict[Any, Any]:
    """``SHARED_VALUES``, emptied first when over its bound: a hot loop checks once and then calls its ``setdefault``
    (``table.setdefault(value, value)`` is :func:`shared` without the check)."""
    if len(SHARED_VALUES) > SHARED_MAX:
        SHARED_VALUES.clear()
    return SHARED_VALUES


def shared(value: T) -> T:
    """The one object equal to ``value`` (a tuple of ints or of ``Uuid``s, or an int); ``value`` itself when new."""
    return shared_table().setdefault(value, value)


def shared_dirs(dirs: Any) -> tuple[Uuid, ...]:
    """The directory ids as one shared tuple; a tuple seen first is made of shared ``Uuid`` objects."""
    table = shared_table()
    found = table.get(dirs) if type(dirs) is tuple else None
    if found is not None:
        return found
    if len(_IDS) > SHARED_MAX:
        _IDS.clear()
    made = tuple(map(_IDS.setdefault, dirs, dirs))
    return table.setdefault(made, made)
