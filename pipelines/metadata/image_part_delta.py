"""A pending change set over one read-only mapping: the building block of the non-topic image parts."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_DELETED: Any = object()


class MapDelta(Generic[K, V]):
    """Puts and deletes over ``base``; ``apply()`` returns ``base`` itself when nothing changed."""

    __slots__ = ("base", "changes")

    def __init__(self, base: Mapping[K, V]) -> None:
        self.base = base
        self.changes: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self.changes.get(key, None)
        if value is _DELETED:
            return None
        return self.base.get(key) if value is None else value

    def put(self, key: K, value: V) -> None:
        self.changes[key] = value

    def delete(self, key: K) -> None:
        self.changes[key] = _DELETED

    def finish_snapshot(self) -> list[K]:
        """Delete every base key the snapshot did not mention; returns those keys."""
        dropped = [k for k in self.base if k not in self.changes]
        for key in dropped:
            self.changes[key] = _DELETED
        return dropped

    def apply(self) -> Mapping[K, V]:
        if not self.changes:
            return self.base
        merged = dict(self.base)
        for key, value in self.changes.items():
            if value is _DELETED:
                merged.pop(key, None)
            else:
                merged[key] = value
        return MappingProxyType(merged)
