"""A KRaft cluster with tiered storage (KIP-405) on, remote tier = Kafka's own ``LocalTieredStorage``.

``LocalTieredStorage`` ships only in Kafka's test jars: ``org.apache.kafka:kafka-storage:<v>:test`` (the RSM) and
``org.apache.kafka:kafka-clients:<v>:test`` (its ``TestUtils``). They are resolved with ``mvn`` into
``.cache/kafka/<v>-tiered-test/lib`` (cached like the Kafka download, by :mod:`jars`) and put on the brokers'
classpath after Kafka's own jars. Every broker writes to one shared ``rsm.config.dir`` (the remote "bucket"); the
remote log metadata manager is Kafka's default (``TopicBasedRemoteLogMetadataManager``), writing
``__remote_log_metadata`` in the brokers' log dirs. Nothing here asserts: tests do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cluster import KafkaCluster, Node
from jars import CACHE, JarsUnavailable, KafkaJars, _pom_of, _resolve, resolve

RSM_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
TEST_ARTIFACTS = ("kafka-storage", "kafka-clients")
#: ``__remote_log_metadata``'s partitions in these tests (Kafka's default is 50: 50 dirs per broker for nothing).
METADATA_PARTITIONS = 3


@dataclass(frozen=True)
class TieredJars(KafkaJars):
    """Kafka's jars plus the two test jars that hold ``LocalTieredStorage`` (and class dirs of test hooks)."""

    test_lib: Path = Path()
    classes: tuple[Path, ...] = ()

    @property
    def classpath(self) -> str:
        own = sorted(self.lib.glob("*.jar"))
        return os.pathsep.join(str(p) for p in [*own, *sorted(self.test_lib.glob("*-test.jar")), *self.classes])


def _test_jars_pom(version: str) -> str:
    """The two test jars only (``test`` classifier; every transitive artifact excluded: they are Kafka's own jars,
    already in its lib)."""
    pom = _pom_of(f"kafka-test-jars-{version}", [("org.apache.kafka", a, version) for a in TEST_ARTIFACTS])
    only = ("<classifier>test</classifier><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
            "</exclusion></exclusions></dependency>")
    return pom.replace("</version></dependency>", "</version>" + only)


def resolve_tiered(version: str, *, quiet: bool = True) -> TieredJars:
    """Kafka ``version``'s jars and its ``LocalTieredStorage`` test jars (each resolved once, then cached).

    Raises:
        JarsUnavailable: no java/mvn, or an artifact is not served.
    """
    base = resolve(version, quiet=quiet)
    lib = _resolve(CACHE / f"{version}-tiered-test", _test_jars_pom(version), "kafka-storage-*-test.jar",
                   quiet=quiet)
    return TieredJars(version, base.lib, lib)


def tiered_or_skip(version: str) -> TieredJars:
    """For tests: :func:`resolve_tiered`, or ``pytest.skip`` with the reason."""
    import pytest

    try:
        return resolve_tiered(version)
    except JarsUnavailable as exc:
        pytest.skip(f"Kafka {version} tiered-storage test jars unavailable: {exc}")


class TieredKafkaCluster(KafkaCluster):
    """A :class:`KafkaCluster` whose controller knows tiered storage is on: the controller validates topic configs
    and refuses ``remote.storage.enable=true`` unless its own ``remote.log.storage.system.enable`` is true."""

    def _properties(self, node: Node) -> dict[str, str]:
        props = super()._properties(node)
        if node.role == "controller":
            props["remote.log.storage.system.enable"] = "true"
        return props


def tiered_broker_config(rsm_dir: Path, *, metadata_replication: int) -> dict[str, str]:
    """Broker properties turning tiered storage on with ``LocalTieredStorage`` under ``rsm_dir``.

    Tasks run every second so segments are copied and local copies removed within seconds of a roll.
    """
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": RSM_CLASS,
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rsm.config.dir": str(rsm_dir),
        "rlmm.config.remote.log.metadata.topic.replication.factor": str(metadata_replication),
        "rlmm.config.remote.log.metadata.topic.num.partitions": str(METADATA_PARTITIONS),
        "remote.log.manager.task.interval.ms": "1000",
        "log.retention.check.interval.ms": "1000",
    }


def tiered_topic_config(segment_ms: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A tiered topic: segments rolled by time (Kafka 4 refuses ``segment.bytes`` below 1 MiB), local copies kept
    one second after their upload, remote copies kept forever (``retention.ms`` -1)."""
    return {
        "remote.storage.enable": "true",
        "segment.ms": str(segment_ms),
        "local.retention.ms": "1000",
        "retention.ms": "-1",
        "file.delete.delay.ms": "1000",
        **(extra or {}),
    }
