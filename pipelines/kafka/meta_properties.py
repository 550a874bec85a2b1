"""``meta.properties``: who owns a log dir (cluster, node, KIP-858 directory id).

Semantics (``metadata/.../properties/MetaProperties.java``, ``MetaPropertiesVersion.java``):

- ``version`` is optional (missing = 0); only 0 and 1 exist.
- v0 (ZooKeeper era): ``broker.id`` is the node id and is optional; ``cluster.id`` is optional.
- v1 (KRaft-formatted): ``node.id`` and ``cluster.id`` are required.
- ``directory.id`` (either version, 3.7+) goes through ``Uuid.fromString``; ids in the reserved range are refused
  by ``MetaPropertiesEnsemble``.
- Kafka never checks that ``cluster.id`` looks like a Uuid; we report one that does not as a warning.

``read_meta_properties`` never raises: everything Kafka would refuse is an ``error`` problem and the fields it
could still read are filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import clip, shorten
from pipelines.kafka.java_properties import MalformedProperties, load_properties, store_properties
from pipelines.kafka.javatext import parse_java_integer
from pipelines.kafka.problems import Problem
from pipelines.kafka.uuid import Uuid

FILE_NAME = "meta.properties"
VERSION, CLUSTER_ID, BROKER_ID, NODE_ID, DIRECTORY_ID = "version", "cluster.id", "broker.id", "node.id", "directory.id"
KNOWN_KEYS = frozenset({VERSION, CLUSTER_ID, BROKER_ID, NODE_ID, DIRECTORY_ID})


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """What one ``meta.properties`` says. ``version`` is None only when the version text is unusable."""

    version: int | None
    cluster_id: str | None
    node_id: int | None
    directory_id: Uuid | None
    raw: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    problems: tuple[Problem, ...] = ()

    @property
    def kafka_would_accept(self) -> bool:
        """False when Kafka's loader would classify this dir as an error dir."""
        return not any(p.severity in ("error", "fatal") for p in self.problems)


def _int(props: Mapping[str, str], key: str, problems: list[Problem]) -> int | None:
    text = props.get(key)
    if text is None:
        return None
    try:
        return parse_java_integer(text)
    except ValueError:
        problems.append(Problem("error", "meta_properties_bad_int", f"{key}={clip(text)} is not a base-10 int"))
        return None


def parse_meta_properties(props: Mapping[str, str]) -> MetaProperties:
    """Interpret already-loaded properties; never raises."""
    problems: list[Problem] = []
    version: int | None
    if VERSION not in props:
        version = 0
        problems.append(Problem("info", "meta_properties_no_version", "no version key; Kafka treats it as 0"))
    else:
        try:
            version = parse_java_integer(props[VERSION])
        except ValueError:
            version = None
        if version not in (0, 1):
            problems.append(
                Problem("error", "meta_properties_bad_version", f"version={clip(props[VERSION])} (Kafka knows 0 and 1)")
            )
    node_key = NODE_ID if version == 1 else BROKER_ID
    node_id = _int(props, node_key, problems)
    if version == 1 and NODE_ID not in props:
        problems.append(Problem("error", "meta_properties_missing_node_id", "version 1 requires node.id"))
    if version == 0 and NODE_ID in props and BROKER_ID not in props:
        problems.append(Problem("warning", "meta_properties_node_id_in_v0", "v0 file has node.id, not broker.id"))
    cluster_id = props.get(CLUSTER_ID)
    if cluster_id is None:
        if version == 1:
            problems.append(Problem("error", "meta_properties_missing_cluster_id", "version 1 requires cluster.id"))
    elif cluster_id == "":
        problems.append(Problem("warning", "meta_properties_empty_cluster_id", "cluster.id is empty"))
    else:
        try:
            Uuid.from_string(cluster_id)
        except DecodeError:
            problems.append(
                Problem(
                    "warning",
                    "meta_properties_cluster_id_not_uuid",
                    f"cluster.id {clip(cluster_id)} is not a 22-char base64url Uuid (Kafka does not check this)",
                )
            )
    directory_id: Uuid | None = None
    if DIRECTORY_ID in props:
        try:
            directory_id = Uuid.from_string(props[DIRECTORY_ID])
        except DecodeError as exc:
            problems.append(Problem("error", "meta_properties_bad_directory_id", f"directory.id: {exc}"))
        else:
            if directory_id.is_reserved_directory_id:
                problems.append(
                    Problem(
                        "error", "meta_properties_reserved_directory_id", f"directory.id {directory_id} is reserved"
                    )
                )
    unknown = sorted(set(props) - KNOWN_KEYS)
    if unknown:
        problems.append(Problem("info", "meta_properties_unknown_keys", f"unknown keys: {shorten(', '.join(unknown))}"))
    return MetaProperties(version, cluster_id, node_id, directory_id, MappingProxyType(dict(props)), tuple(problems))


def read_meta_properties(data: bytes | str) -> MetaProperties:
    """Load and interpret a ``meta.properties`` file's bytes; never raises."""
    try:
        props = load_properties(data)
    except MalformedProperties as exc:
        return MetaProperties(
            None, None, None, None, problems=(Problem("error", "meta_properties_unparseable", str(exc)),)
        )
    return parse_meta_properties(props)


def write_meta_properties(
    *,
    version: int,
    cluster_id: str | None,
    node_id: int | None,
    directory_id: Uuid | None = None,
    moment: datetime | None = None,
    extra: Mapping[str, str] | None = None,
) -> bytes:
    """Bytes in Kafka's style: ``#``, ``#<date>``, then ``key=value`` lines (keys sorted; Kafka's order is unspecified).

    v0 writes the node id as ``broker.id``, v1 as ``node.id``.
    """
    props: dict[str, str] = {VERSION: str(version)}
    if cluster_id is not None:
        props[CLUSTER_ID] = cluster_id
    if node_id is not None:
        props[BROKER_ID if version == 0 else NODE_ID] = str(node_id)
    if directory_id is not None:
        props[DIRECTORY_ID] = str(directory_id)
    props.update(extra or {})
    return store_properties(sorted(props.items()), moment=moment)
