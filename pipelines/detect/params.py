"""Rule parameters shared by the Spark detector and the plain-Python re-check (no logic, no Spark).

Only inputs live here (patterns, status groups, config keys, reserved ids); each classifier implements the rules
on its own so that one can check the other.
"""

from __future__ import annotations

from pipelines.config.models import DetectConfig
from pipelines.kafka.uuid import Uuid

INTERNAL_TOPIC_PATTERN = r"__.*"
"""Names starting with ``__`` are Kafka-internal by convention and always protected."""

PM_MISSING_STATUSES: frozenset[str] = frozenset({"missing"})
"""``partition_metadata_status`` values meaning "no file" (anything else but ``ok`` means a corrupt file)."""

PM_OK = "ok"

DELETE_DELAY_CONFIG_KEY = "log.segment.delete.delay.ms"
"""Broker synonym of ``file.delete.delay.ms``: the delay the ``kafka-delete-logs`` task waits after enqueueing."""

ASSIGNED_DELETE_REASON = ("-delete copy of a replica the controller assigns to this broker: never planned, Kafka "
                          "deletes it itself at the next broker start")
"""Reason of an old ``-delete`` dir whose replica is still assigned to its broker (both classifiers use it)."""

RESERVED_DIRECTORY_IDS: frozenset[str] = frozenset(str(Uuid(0, i)) for i in range(100))
"""KIP-858 reserved directory ids (MIGRATING, UNASSIGNED, LOST, ...): an assignment to one of them decides nothing."""


def protected_patterns(config: DetectConfig) -> tuple[str, ...]:
    """The configured full-match regexes plus the ``__`` internal-topic convention."""
    return (*config.protected_topic_patterns, INTERNAL_TOPIC_PATTERN)


NO_TOPIC_ID_REASON = ("the controller has this topic without a topic id (created before Kafka 2.8): the image is "
                      "incomplete for it")
"""Reason of a dir whose topic the controller (ZooKeeper mode) knows without a topic id (both classifiers)."""
