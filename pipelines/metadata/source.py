"""One interface over the controller metadata sources: each ``metadata.kind`` is one module holding one
:class:`ControllerSource`, imported only when that kind is configured (a client library such as kazoo or
kafka-python is needed only by its own source).

- ``metadata_log`` (``metadata_log_source``): event times from the log's batches; the executor re-reads it.
- ``zookeeper`` (``zookeeper_source``): event times from znode ctime/mtime, removals stamped by the run that sees
  them (``removed_topic_events``); the executor re-reads it.
- ``topics_describe`` (``topics_describe``) and ``admin`` (``admin_source``): the present only, no event times; the
  executor refuses them.
- ``none`` (here): nothing to classify against; nothing is planned.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from pipelines.errors import ConfigError
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.image import EMPTY, MetadataImage

if TYPE_CHECKING:  # the config (pydantic) is not needed to replay a metadata log
    from pipelines.config.models import MetadataConfig


@dataclass(frozen=True)
class ControllerView:
    """The image the pipeline classifies against, the events it saw, and where it came from."""

    image: MetadataImage
    events: tuple[MetadataEvent, ...]
    source: str
    notes: tuple[str, ...] = ()
    removals_seen_at_ms: int | None = None
    """Set by a source that keeps no history of deletions (ZooKeeper): a topic id the event history has as live but
    this complete image lacks was removed by this time (:func:`removed_topic_events`)."""

    def with_events(self, extra: Iterable[MetadataEvent]) -> ControllerView:
        return replace(self, events=(*self.events, *extra))

    def without_events(self) -> ControllerView:
        """The same view without its events (once they are in ``metadata_events``, only the image is needed)."""
        return replace(self, events=())


class ControllerSource(ABC):
    """One kind of controller metadata source, configured by ``metadata.*``."""

    kind: ClassVar[str]

    def __init__(self, config: MetadataConfig) -> None:
        self.config = config

    @abstractmethod
    def load(self) -> ControllerView:
        """Read the source now. Raises FileNotFoundError/OSError (a missing file), SourceUnavailable (an
        unreachable service), ConfigError (a missing client library)."""


class NoSource(ControllerSource):
    """``kind: none``: an empty, INCOMPLETE image, so every topic id is unknown and nothing is planned."""

    kind = "none"

    def load(self) -> ControllerView:
        why = "no controller metadata source configured"
        return ControllerView(EMPTY.with_completeness(False, (why,)), (), "none", (why,))


#: kind → ``module:class``.
SOURCES: Mapping[str, str] = {
    "metadata_log": "pipelines.metadata.metadata_log_source:MetadataLogSource",
    "zookeeper": "pipelines.metadata.zookeeper_source:ZooKeeperSource",
    "topics_describe": "pipelines.metadata.topics_describe:TopicsDescribeSource",
    "admin": "pipelines.metadata.admin_source:AdminSource",
    "none": "pipelines.metadata.source:NoSource",
}


def open_source(config: MetadataConfig) -> ControllerSource:
    """The configured source (not read yet). Raises ConfigError for a kind without a source."""
    target = SOURCES.get(config.kind)
    if target is None:
        raise ConfigError(f"metadata.kind {config.kind!r} has no source")
    module, _, name = target.partition(":")
    cls: type[ControllerSource] = getattr(importlib.import_module(module), name)
    return cls(config)


def load_view(config: MetadataConfig) -> ControllerView:
    return open_source(config).load()


def removed_topic_events(history: Iterable[Mapping[str, Any]], view: ControllerView) -> tuple[MetadataEvent, ...]:
    """``topic_removed`` events for topic ids that ``history`` (``metadata_events`` rows of the cluster) has as
    created and not removed, but the view's COMPLETE image no longer has, timed ``view.removals_seen_at_ms``.

    Nothing for a view whose source keeps its own history, or an incomplete image (absence proves nothing there).
    """
    at = view.removals_seen_at_ms
    image = view.image
    if at is None or not image.complete:
        return ()
    created: dict[str, str | None] = {}
    removed: set[str] = set()
    for row in history:
        topic_id = row.get("topic_id")
        if topic_id is None:
            continue
        if row.get("event") == ev.TOPIC_CREATED:
            created[topic_id] = row.get("topic")
        elif row.get("event") == ev.TOPIC_REMOVED:
            removed.add(topic_id)
    live = {str(t) for t in image.topics.by_id}
    detail = {"observed": "gone when this run read the source, which keeps no deletion time"}
    return tuple(
        MetadataEvent(image.last_offset, at, ev.TOPIC_REMOVED, Uuid.from_string(topic_id), name, None, detail)
        for topic_id, name in sorted(created.items()) if topic_id not in removed and topic_id not in live
    )
