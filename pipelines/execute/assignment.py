"""Re-reading the controller metadata at apply time: is this replica (still) assigned to this broker?

A replica is assigned when the controller image has a topic with the directory's topic id (or, when the
directory has no readable id, the same topic name) whose partition lists the broker in ``replicas`` or
``adding_replicas``. When the image is incomplete and the topic id is unknown to it, the answer is unknown, and
unknown counts as assigned: the item is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipelines import native
from pipelines.config.models import MetadataConfig
from pipelines.errors import DecodeError, PipelinesError, PreconditionFailed
from pipelines.kafka.uuid import Uuid
from pipelines.plan.model import PlanItem


def assignment_from_image(image: Any) -> Callable[[PlanItem, int], str | None]:
    """An AssignmentCheck over a ``pipelines.metadata.image.MetadataImage``."""

    def check(item: PlanItem, broker_id: int) -> str | None:
        if item.topic is not None and item.topic in image.topics_without_id:
            return (f"the controller has topic {item.topic} without a topic id (ZooKeeper, created before Kafka 2.8);"
                    " not proven garbage")
        topic = None
        if item.topic_id is not None:
            try:
                tid = Uuid.from_string(item.topic_id)
            except DecodeError as exc:
                return f"plan item topic id is not a Kafka Uuid ({exc}); not proven garbage"
            topic = image.topics.by_id.get(tid)
            if topic is None and not image.complete:
                return (f"topic id {item.topic_id} is unknown to an incomplete controller image "
                        f"({'; '.join(image.incomplete_reasons)}); not proven garbage")
        elif item.topic is not None:
            topic = image.topics.by_name.get(item.topic)
            if topic is None and not image.complete:
                return "no topic id on disk and the controller image is incomplete; not proven garbage"
        if topic is None or item.partition is None:
            return None
        part = topic.partitions.get(item.partition)
        if part is None:
            return None
        if broker_id in part.replicas or broker_id in part.adding_replicas:
            return (f"the controller assigns {topic.name}-{item.partition} (topic id {topic.topic_id}) to broker "
                    f"{broker_id}: live replica, never touched")
        return None

    return check


def load_assignment_check(metadata: MetadataConfig) -> Callable[[PlanItem, int], str | None] | None:
    """The check for a configured metadata source, re-read now; None when no source is configured.

    Raises:
        PreconditionFailed: a source is configured but cannot be loaded (then nothing may be applied).
    """
    if metadata.kind == "none":
        return None
    if metadata.kind == "zookeeper":  # read-only, live or a dump; unreadable -> PreconditionFailed
        from pipelines.metadata.zookeeper_source import image_for_executor

        return assignment_from_image(image_for_executor(metadata))
    if metadata.kind != "metadata_log":  # ``admin`` has no source: it must refuse too, never fall through to None
        raise PreconditionFailed(f"metadata.kind {metadata.kind} cannot be re-read by the executor; use "
                                 "metadata_log, zookeeper or none")
    if metadata.source is None:
        raise PreconditionFailed("metadata.kind metadata_log needs metadata.source for the executor's re-check")
    from pipelines.metadata import load_metadata

    try:
        with native.pure_python():  # the reference decoder: no compiled code shared with the planner's replay
            result = load_metadata(metadata.source, metadata.storage_options or None)
    except (OSError, ValueError, PipelinesError) as exc:
        raise PreconditionFailed(f"cannot re-read controller metadata {metadata.source}: {exc}") from None
    return assignment_from_image(result.image)
