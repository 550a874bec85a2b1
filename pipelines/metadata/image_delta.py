"""``MetadataDelta``: a mutable change set over a base image, filled by ``replay(record)``.

After Kafka's ``MetadataDelta``: one lazily created sub-delta per image part, a dispatch table from record name to
handler (instead of a 22-case switch), ``finish_snapshot()`` for full reloads and ``apply()`` that returns a new
``MetadataImage`` sharing every untouched part with the base.

A record that cannot be applied (a change to an unknown partition, removing an unknown topic, a broker epoch
mismatch, an unknown record type) is NOT applied: it becomes a ``ReplayProblem`` in ``delta.errors`` (later in
``image.replay_errors``) and is handed to the injected ``fault_handler``, which may raise (strict mode).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Protocol

from pipelines.errors import ReplayError
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.uuid import Uuid
from pipelines.metadata import events as ev
from pipelines.metadata.image import (
    BROKER_RESOURCE,
    EMPTY,
    EMPTY_MAP,
    TOPIC_RESOURCE,
    BrokerImage,
    ConfigsImage,
    Endpoint,
    MetadataImage,
    MetadataProvenance,
    ReplayProblem,
)
from pipelines.metadata.image_part_delta import MapDelta
from pipelines.metadata.topics_image_delta import TopicsDelta

_new_event = fast_constructor(ev.MetadataEvent)

__all__ = ["BROKER_RESOURCE", "FaultHandler", "MetadataDelta", "RecordLike", "raise_on_fault"]

FaultHandler = Callable[[ReplayProblem], None]


class RecordLike(Protocol):
    """What replay needs from ``pipelines.kafka.metadata_codec.MetadataRecord``."""

    @property
    def name(self) -> str: ...

    @property
    def fields(self) -> Mapping[str, Any]: ...


def raise_on_fault(problem: ReplayProblem) -> None:
    """Strict mode: a replay problem stops the replay."""
    raise ReplayError(str(problem))


def _attr(item: Any, key: str) -> Any:
    return item[key] if isinstance(item, Mapping) else getattr(item, key)


_PARTITION_CHANGE = "PartitionChangeRecord"
_MISC_MAPS = ("controllers", "acls", "scram", "delegation_tokens", "client_quotas")


class MetadataDelta:
    """Changes over ``base``; not thread-safe, used once (apply, then discard)."""

    def __init__(self, base: MetadataImage = EMPTY, *, fault_handler: FaultHandler | None = None,
                 from_snapshot: bool = False) -> None:
        self.base = base
        self.fault_handler = fault_handler
        self.from_snapshot = from_snapshot
        self.events: list[ev.MetadataEvent] = []
        self.errors: list[ReplayProblem] = []
        self.records = 0
        self._topics: TopicsDelta | None = None
        self._brokers: MapDelta[int, BrokerImage] | None = None
        self._features: MapDelta[str, int] | None = None
        self._configs: dict[tuple[int, str], MapDelta[str, str]] | None = None
        self._configs_finished = False
        self._misc: dict[str, MapDelta] = {}
        self._scalars: dict[str, Any] = {}
        self._offset = -1
        self._timestamp_ms = -1

    # -- lazily created parts ----------------------------------------------------------------------
    @property
    def changed_topics(self) -> dict[Uuid, Any] | None:
        """The topic changes by id (``TopicsDelta.changed``) once a record made the topics part, else None: where
        the loader's fold (``pipelines.metadata.fold``) finds a partition's pending state."""
        return None if self._topics is None else self._topics.changed

    @property
    def topics(self) -> TopicsDelta:
        if self._topics is None:
            self._topics = TopicsDelta(self.base.topics)
        return self._topics

    @property
    def brokers(self) -> MapDelta[int, BrokerImage]:
        if self._brokers is None:
            self._brokers = MapDelta(self.base.brokers)
        return self._brokers

    @property
    def features(self) -> MapDelta[str, int]:
        if self._features is None:
            self._features = MapDelta(self.base.features)
        return self._features

    def config_resource(self, resource: tuple[int, str], *, reset: bool = False) -> MapDelta[str, str]:
        if self._configs is None:
            self._configs = {}
        part = self._configs.get(resource)
        if part is None or reset:
            part = MapDelta(EMPTY_MAP if reset else self.base.configs.resources.get(resource, EMPTY_MAP))
            self._configs[resource] = part
        return part

    def misc(self, name: str) -> MapDelta:
        part = self._misc.get(name)
        if part is None:
            part = self._misc[name] = MapDelta(getattr(self.base.misc, name))
        return part

    # -- replay --------------------------------------------------------------------------------------
    def replay(self, record: RecordLike, offset: int = -1, timestamp_ms: int = -1) -> None:
        """Apply one record; a record that cannot be applied is reported, not raised (unless strict)."""
        self.replay_fields(record.name, record.fields, offset, timestamp_ms)

    def replay_fields(self, name: str, fields: Mapping[str, Any], offset: int = -1, timestamp_ms: int = -1) -> None:
        """``replay`` of a record given as its name and fields (the loader's hot path has them unpacked)."""
        self._offset = offset
        self._timestamp_ms = timestamp_ms
        self.records += 1
        if name == _PARTITION_CHANGE:  # most records of a live log: no dispatch hop
            try:
                (self._topics or self.topics).replay_partition_change(fields, self.emit)
            except ReplayError as exc:
                self.fail(name, str(exc))
            except (KeyError, TypeError, AttributeError) as exc:
                self.fail(name, f"malformed record ({type(exc).__name__}: {exc})")
            return
        handler = _DISPATCH.get(name)
        if handler is None:
            self.fail(name, "unknown metadata record type")
            return
        try:
            handler(self, fields)
        except ReplayError as exc:
            self.fail(name, str(exc))
        except (KeyError, TypeError, AttributeError) as exc:
            self.fail(name, f"malformed record ({type(exc).__name__}: {exc})")

    def fail(self, record_name: str, message: str) -> None:
        problem = ReplayProblem(self._offset, record_name, message)
        self.errors.append(problem)
        if self.fault_handler is not None:
            self.fault_handler(problem)

    def emit(self, event: str, topic_id: Uuid | None, topic: str | None, partition: int | None,
             detail: Mapping[str, Any]) -> None:
        if self.from_snapshot:
            detail = ev.marked_from_snapshot(detail)
        self.events.append(_new_event(self._offset, self._timestamp_ms, event, topic_id, topic, partition, detail))

    def finish_snapshot(self) -> None:
        """The records replayed so far were a FULL image: drop everything of the base they did not mention."""
        self.topics.finish_snapshot(self.emit)
        for broker_id in self.brokers.finish_snapshot():
            self.emit(ev.BROKER_UNREGISTERED, None, None, None, {"broker_id": broker_id})
        self.features.finish_snapshot()
        for resource in self.base.configs.resources:
            if self._configs is None or resource not in self._configs:
                self.config_resource(resource, reset=True)
        for part in (self._configs or {}).values():
            part.finish_snapshot()
        for name in _MISC_MAPS:
            self.misc(name).finish_snapshot()
        self._scalars.setdefault("zk_migration_state", None)

    # -- apply ---------------------------------------------------------------------------------------
    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        base = self.base
        topics = base.topics if self._topics is None else self._topics.apply()
        brokers = base.brokers if self._brokers is None else self._brokers.apply()
        features = base.features if self._features is None else self._features.apply()
        configs = base.configs
        if self._configs:
            resources = dict(base.configs.resources)
            for resource, part in self._configs.items():
                values = part.apply()
                if values:
                    resources[resource] = values
                else:
                    resources.pop(resource, None)
            configs = ConfigsImage(MappingProxyType(resources))
        misc = base.misc
        if self._misc or self._scalars:
            updates: dict[str, Any] = {name: part.apply() for name, part in self._misc.items()}
            updates.update(self._scalars)
            misc = replace(base.misc, **updates)
        return MetadataImage(
            provenance=base.provenance if provenance is None else provenance,
            features=features,
            topics=topics,
            brokers=brokers,
            configs=configs,
            misc=misc,
            complete=base.complete,
            incomplete_reasons=base.incomplete_reasons,
            replay_errors=base.replay_errors + tuple(self.errors),
        )


# -- handlers: one per record name -----------------------------------------------------------------------
def _topic(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.topics.replay_topic(f, d.emit)


def _partition(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.topics.replay_partition(f, d.emit)


def _partition_change(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    (d._topics or d.topics).replay_partition_change(f, d.emit)


def _remove_topic(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    name = d.topics.replay_remove_topic(f, d.emit)
    d.config_resource((TOPIC_RESOURCE, name), reset=True)


def _clear_elr(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.topics.replay_clear_elr(f, d.emit)


def _config(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    part = d.config_resource((f["resource_type"], f["resource_name"]))
    if f.get("value") is None:
        part.delete(f["name"])
    else:
        part.put(f["name"], f["value"])


def _feature_level(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    name, level = f["name"], f["feature_level"]
    if level == 0 and name != "metadata.version":
        d.features.delete(name)
    else:
        d.features.put(name, level)


def _register_broker(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    broker_id = f["broker_id"]
    previous = d.brokers.get(broker_id)
    endpoints = tuple(
        Endpoint(_attr(e, "name"), _attr(e, "host"), _attr(e, "port"), _attr(e, "security_protocol"))
        for e in f.get("end_points") or ()
    )
    broker = BrokerImage(
        broker_id,
        f["broker_epoch"],
        bool(f.get("fenced", True)),
        bool(f.get("in_controlled_shutdown", False)),
        tuple(f.get("log_dirs") or ()),
        f.get("rack"),
        f.get("incarnation_id"),
        endpoints,
        bool(f.get("is_migrating_zk_broker", False)),
    )
    d.brokers.put(broker_id, broker)
    d.emit(ev.BROKER_REGISTERED, None, None, None, {
        "broker_id": broker_id, "epoch": broker.epoch, "log_dirs": [str(x) for x in broker.log_dirs],
        "rack": broker.rack, "re_registration": previous is not None,
    })


def _unregister_broker(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    broker_id = f["broker_id"]
    if d.brokers.get(broker_id) is None:
        raise ReplayError(f"cannot unregister unknown broker {broker_id}")
    d.brokers.delete(broker_id)
    d.emit(ev.BROKER_UNREGISTERED, None, None, None, {"broker_id": broker_id, "epoch": f.get("broker_epoch")})


def _broker_with_epoch(d: MetadataDelta, broker_id: int, epoch: int, action: str) -> BrokerImage:
    broker = d.brokers.get(broker_id)
    if broker is None:
        raise ReplayError(f"cannot {action} unknown broker {broker_id}")
    if broker.epoch != epoch:
        raise ReplayError(f"cannot {action} broker {broker_id}: epoch {epoch} != registered {broker.epoch}")
    return broker


def _fence(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    broker = _broker_with_epoch(d, f["id"], f["epoch"], "fence")
    d.brokers.put(broker.broker_id, replace(broker, fenced=True))


def _unfence(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    broker = _broker_with_epoch(d, f["id"], f["epoch"], "unfence")
    d.brokers.put(broker.broker_id, replace(broker, fenced=False))


def _broker_change(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    broker = _broker_with_epoch(d, f["broker_id"], f["broker_epoch"], "change")
    fenced_change = f.get("fenced", 0)
    if fenced_change not in (-1, 0, 1):
        raise ReplayError(f"invalid Fenced value {fenced_change}")
    shutdown_change = f.get("in_controlled_shutdown", 0)
    if shutdown_change not in (0, 1):
        raise ReplayError(f"invalid InControlledShutdown value {shutdown_change}")
    log_dirs = tuple(f.get("log_dirs") or ())
    fenced = broker.fenced if fenced_change == 0 else fenced_change == 1
    in_shutdown = broker.in_controlled_shutdown or shutdown_change == 1
    new = replace(broker, fenced=fenced, in_controlled_shutdown=in_shutdown, log_dirs=log_dirs or broker.log_dirs)
    d.brokers.put(broker.broker_id, new)
    if new.log_dirs != broker.log_dirs:
        d.emit(ev.BROKER_LOG_DIRS_CHANGED, None, None, None, {
            "broker_id": broker.broker_id, "old_log_dirs": [str(x) for x in broker.log_dirs],
            "new_log_dirs": [str(x) for x in new.log_dirs],
        })


def _register_controller(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.misc("controllers").put(f["controller_id"], f.get("incarnation_id"))


def _producer_ids(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d._scalars["next_producer_id"] = f["next_producer_id"]


def _acl(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.misc("acls").put(f["id"], tuple(sorted((k, str(v)) for k, v in f.items() if k != "id")))


def _remove_acl(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    part = d.misc("acls")
    if part.get(f["id"]) is None:
        raise ReplayError(f"cannot remove unknown ACL {f['id']}")
    part.delete(f["id"])


def _scram(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.misc("scram").put((f["name"], f["mechanism"]), f.get("iterations", 0))


def _remove_scram(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.misc("scram").delete((f["name"], f["mechanism"]))


def _token(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.misc("delegation_tokens").put(f["token_id"], f.get("owner", ""))


def _remove_token(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d.misc("delegation_tokens").delete(f["token_id"])


def _quota(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    entity = tuple(sorted((_attr(e, "entity_type"), _attr(e, "entity_name")) for e in f["entity"]))
    key = (entity, f["key"])
    if f.get("remove"):
        d.misc("client_quotas").delete(key)
    else:
        d.misc("client_quotas").put(key, f["value"])


def _zk_migration(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    d._scalars["zk_migration_state"] = f["zk_migration_state"]


def _ignore(d: MetadataDelta, f: Mapping[str, Any]) -> None:
    """NoOp, and transaction markers (the loader handles those before the delta sees them)."""


_DISPATCH: Mapping[str, Callable[[MetadataDelta, Mapping[str, Any]], None]] = MappingProxyType({
    "RegisterBrokerRecord": _register_broker,
    "UnregisterBrokerRecord": _unregister_broker,
    "TopicRecord": _topic,
    "PartitionRecord": _partition,
    "ConfigRecord": _config,
    "PartitionChangeRecord": _partition_change,
    "FenceBrokerRecord": _fence,
    "UnfenceBrokerRecord": _unfence,
    "RemoveTopicRecord": _remove_topic,
    "DelegationTokenRecord": _token,
    "UserScramCredentialRecord": _scram,
    "FeatureLevelRecord": _feature_level,
    "ClientQuotaRecord": _quota,
    "ProducerIdsRecord": _producer_ids,
    "BrokerRegistrationChangeRecord": _broker_change,
    "AccessControlEntryRecord": _acl,
    "RemoveAccessControlEntryRecord": _remove_acl,
    "NoOpRecord": _ignore,
    "ZkMigrationStateRecord": _zk_migration,
    "RemoveUserScramCredentialRecord": _remove_scram,
    "BeginTransactionRecord": _ignore,
    "EndTransactionRecord": _ignore,
    "AbortTransactionRecord": _ignore,
    "RemoveDelegationTokenRecord": _remove_token,
    "RegisterControllerRecord": _register_controller,
    "ClearElrRecord": _clear_elr,
})
