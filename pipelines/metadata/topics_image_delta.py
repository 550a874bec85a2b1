"""Changes to the topics part of an image (Kafka's ``TopicsDelta`` + ``TopicDelta``).

- TopicRecord creates a topic with no partitions; for an id already known it REPLACES it with an empty topic.
- RemoveTopicRecord: a topic created and removed in the same delta leaves no trace; removing an id neither the delta
  nor the base image knows is an error.
- ``apply()`` runs deletions first, then upserts; topics that were not touched keep their ``TopicImage`` object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pipelines.errors import ReplayError
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.image import EMPTY_MAP, PartitionImage, TopicImage, TopicsImage
from pipelines.metadata.partition_merge import (
    all_change_values,
    change_values,
    clear_elr,
    fold_change,
    merge_change,
    partition_from_record,
    pending_change,
    settle_change,
)

#: emit(event, topic_id, topic, partition, detail)
Emit = Callable[[str, Uuid | None, str | None, int | None, Mapping[str, Any]], None]


@dataclass(slots=True)
class _TopicChange:
    topic_id: Uuid
    name: str
    base: Mapping[int, PartitionImage]
    changed: dict[int, PartitionImage] = field(default_factory=dict)
    pending: dict[int, list] = field(default_factory=dict)
    """ISR/leader/ELR-only changes folded per partition (``partition_merge.pending_change``), not yet in
    ``changed``: everything but the hot path of ``replay_partition_change`` calls ``settle()`` first."""

    def settle(self) -> None:
        if self.pending:
            for partition, state in self.pending.items():
                self.changed[partition] = settle_change(state)
            self.pending.clear()

    def get(self, partition: int) -> PartitionImage | None:
        self.settle()
        found = self.changed.get(partition)
        return self.base.get(partition) if found is None else found

    def build(self, previous: TopicImage | None) -> TopicImage:
        self.settle()
        if previous is not None and not self.changed and previous.partitions is self.base and (
            previous.name == self.name
        ):
            return previous
        merged = dict(self.base)
        merged.update(self.changed)
        return TopicImage(self.topic_id, self.name, MappingProxyType(merged))


def _replicas_detail(old: PartitionImage, new: PartitionImage) -> dict[str, Any]:
    return {
        "old_replicas": list(old.replicas),
        "new_replicas": list(new.replicas),
        "adding_replicas": list(new.adding_replicas),
        "removing_replicas": list(new.removing_replicas),
    }


def _dirs_detail(old: PartitionImage, new: PartitionImage) -> dict[str, Any]:
    return {
        "replicas": list(new.replicas),
        "old_directories": [str(d) for d in old.directories],
        "new_directories": [str(d) for d in new.directories],
    }


def _emit_partition_diff(emit: Emit, change: _TopicChange, old: PartitionImage, new: PartitionImage) -> None:
    if (old.replicas, old.adding_replicas, old.removing_replicas) != (
        new.replicas, new.adding_replicas, new.removing_replicas,
    ):
        emit(ev.REPLICAS_CHANGED, change.topic_id, change.name, new.partition, _replicas_detail(old, new))
    if old.directories != new.directories:
        emit(ev.DIRECTORIES_CHANGED, change.topic_id, change.name, new.partition, _dirs_detail(old, new))


class TopicsDelta:
    """Pending topic changes over ``base``. Replay methods raise ``ReplayError``; the caller reports it."""

    __slots__ = ("base", "changed", "created_names", "deleted")

    def __init__(self, base: TopicsImage) -> None:
        self.base = base
        self.changed: dict[Uuid, _TopicChange] = {}
        self.deleted: set[Uuid] = set()
        self.created_names: dict[str, Uuid] = {}

    # -- queries ---------------------------------------------------------------------------------
    def _topic(self, topic_id: Uuid) -> _TopicChange:
        change = self.changed.get(topic_id)
        if change is None:
            image = None if topic_id in self.deleted else self.base.by_id.get(topic_id)
            if image is None:
                raise ReplayError(f"unknown topic id {topic_id}")
            change = _TopicChange(topic_id, image.name, image.partitions)
            self.changed[topic_id] = change
        return change

    def topic_name(self, topic_id: Uuid) -> str | None:
        change = self.changed.get(topic_id)
        if change is not None:
            return change.name
        image = self.base.by_id.get(topic_id)
        return None if image is None or topic_id in self.deleted else image.name

    # -- replay ----------------------------------------------------------------------------------
    def replay_topic(self, fields: Mapping[str, Any], emit: Emit) -> None:
        topic_id, name = fields["topic_id"], fields["name"]
        self.changed[topic_id] = _TopicChange(topic_id, name, EMPTY_MAP)
        self.created_names[name] = topic_id
        emit(ev.TOPIC_CREATED, topic_id, name, None, {})

    def replay_partition(self, fields: Mapping[str, Any], emit: Emit) -> None:
        change = self._topic(fields["topic_id"])
        new = partition_from_record(fields)
        old = change.get(new.partition)
        change.changed[new.partition] = new
        if old is None:
            emit(ev.PARTITION_ADDED, change.topic_id, change.name, new.partition,
                 ev.AssignmentDetail(new.replicas, new.directories))
        else:
            _emit_partition_diff(emit, change, old, new)

    def replay_partition_change(self, fields: Mapping[str, Any], emit: Emit) -> None:
        topic_id = fields["topic_id"]
        change = self.changed.get(topic_id)
        if change is None:
            change = self._topic(topic_id)
        partition = fields["partition_id"]
        try:
            values = all_change_values(fields)  # a decoded record has every field: one call
        except KeyError:
            values = change_values(fields)
        if values[0] is None and values[1] is None and values[3] is None and values[4] is None:
            # ISR/leader/ELR-only (the common case): no event can differ; folded, settled when read
            state = change.pending.get(partition)
            if state is None:
                old = change.changed.get(partition)
                if old is None:
                    old = change.base.get(partition)
                    if old is None:
                        raise ReplayError(f"unknown partition {change.name}-{partition} (topic id {change.topic_id})")
                state = change.pending[partition] = pending_change(old)
            fold_change(state, values)
            return
        change.settle()
        changed = change.changed
        old = changed.get(partition)
        if old is None:
            old = change.base.get(partition)
            if old is None:
                raise ReplayError(f"unknown partition {change.name}-{partition} (topic id {change.topic_id})")
        changed[partition] = new = merge_change(old, values)
        _emit_partition_diff(emit, change, old, new)

    def replay_remove_topic(self, fields: Mapping[str, Any], emit: Emit) -> str:
        """Remove a topic; returns its name (the caller drops the topic's configs)."""
        topic_id = fields["topic_id"]
        change = self.changed.pop(topic_id, None)
        in_base = topic_id in self.base.by_id and topic_id not in self.deleted
        if change is not None:
            name = change.name
            if self.created_names.get(name) == topic_id:
                del self.created_names[name]
        elif in_base:
            name = self.base.by_id[topic_id].name
        else:
            raise ReplayError(f"cannot remove unknown topic id {topic_id}")
        if in_base:
            self.deleted.add(topic_id)
        emit(ev.TOPIC_REMOVED, topic_id, name, None, {})
        return name

    def replay_clear_elr(self, fields: Mapping[str, Any], emit: Emit) -> None:
        name = fields.get("topic_name") or ""
        if name:
            image = self.base.by_name.get(name)
            topic_id = image.topic_id if image is not None else self.created_names.get(name)
            if topic_id is None:
                raise ReplayError(f"cannot clear ELR of unknown topic {name!r}")
            ids = [topic_id]
        else:
            ids = list(self.base.by_id)
        for topic_id in ids:
            change = self._topic(topic_id)
            change.settle()
            for partition in set(change.base) | set(change.changed):
                old = change.get(partition)
                if old is not None:
                    new = clear_elr(old)
                    if new is not old:
                        change.changed[partition] = new

    def finish_snapshot(self, emit: Emit) -> None:
        """After a full snapshot: every base topic the snapshot did not mention is deleted."""
        for topic_id, image in self.base.by_id.items():
            if topic_id not in self.changed and topic_id not in self.deleted:
                self.deleted.add(topic_id)
                emit(ev.TOPIC_REMOVED, topic_id, image.name, None, {})

    # -- apply -----------------------------------------------------------------------------------
    @property
    def touched(self) -> bool:
        return bool(self.changed or self.deleted)

    def apply(self) -> TopicsImage:
        if not self.touched:
            return self.base
        by_id = dict(self.base.by_id)
        by_name = dict(self.base.by_name)
        for topic_id in self.deleted:
            old = by_id.pop(topic_id, None)
            if old is not None and by_name.get(old.name) is old:
                del by_name[old.name]
        for topic_id, change in self.changed.items():
            previous = by_id.get(topic_id)
            if previous is not None and previous.name != change.name and by_name.get(previous.name) is previous:
                del by_name[previous.name]
            topic = change.build(previous)
            by_id[topic_id] = topic
            by_name[topic.name] = topic
        return TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name))
