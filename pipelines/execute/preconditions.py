"""What the executor re-verifies immediately before it acts, from the disk, the controller and the HOST's config.

Host binding (whole run): every log dir the plan touches on this broker has a ``meta.properties`` whose
``cluster.id``, node id and ``directory.id`` match the plan.

Per item, in order (:func:`verify_item`), each failure an :class:`ItemSkipped` naming its rule:

1. ``confinement``: a plain, direct child directory of a registered log dir, no symlink anywhere (``observe``);
2. ``inconsistent``: the plan item's ``topic``, ``partition`` and ``topic_id`` equal what the directory name
   (Kafka's parsing rules) and ``partition.metadata`` say, and its class is one the dir's kind can have; the
   fingerprint equals the crawl's. A plan field can only narrow what happens, never widen it;
3. ``never_planned``: the metadata log, unparseable names, and live/``-stray``/``-future`` dirs without a readable
   topic id are never touched, whatever the plan says;
4. ``protected_topic``: the name on disk or the controller's name for the id matches the host's protected
   patterns (Kafka's internal topics and the metadata topic's sentinel id always);
5. ``assigned_replica``: the controller, re-read now, assigns the replica to this broker;
6. ``min_grace``: the host's grace floor, measured from the metadata event the executor itself re-read.

Budgets (``policy.max_broker_items``/``max_broker_bytes``, measured on disk) are checked over the whole run by
:func:`check_budgets` before anything moves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from pipelines.config.models import MIN_GRACE_FLOOR_MS, AppConfig
from pipelines.detect import classes as C
from pipelines.detect.params import protected_patterns
from pipelines.errors import PreconditionFailed
from pipelines.execute.controller_check import ControllerCheck
from pipelines.execute.observe import ItemSkipped, ObservedDir, observe_dir
from pipelines.kafka.listing import read_regular_file
from pipelines.kafka.meta_properties import read_meta_properties
from pipelines.kafka.uuid import Uuid
from pipelines.plan import policy as rules
from pipelines.plan.model import GcPlan, PlanItem

__all__ = ["PLANNABLE_BY_KIND", "HostRules", "ItemSkipped", "VerifiedItem", "check_budgets", "check_host",
           "verify_item"]

PLANNABLE_BY_KIND: dict[str, frozenset[str]] = {
    "live": frozenset({C.RECREATED_TOPIC, C.DELETED_TOPIC, C.PARTITION_OUT_OF_RANGE, C.NOT_A_REPLICA}),
    "delete": frozenset({C.STUCK_DELETE}),
    "stray": frozenset({C.STRAY}),
    "future": frozenset({C.ABANDONED_FUTURE}),
}
"""The only classes a plan item may have for each kind of directory name; any other kind is never touched."""


@dataclass(frozen=True, slots=True)
class VerifiedItem:
    item: PlanItem
    observed: ObservedDir

    @property
    def path(self) -> Path:
        return self.observed.path

    @property
    def bytes(self) -> int:
        return self.observed.bytes

    @property
    def fingerprint(self) -> str:
        return self.observed.fingerprint

    @property
    def identity(self) -> tuple[int, int]:
        """``(st_dev, st_ino)`` of the directory every check above was made on."""
        return self.observed.identity


@dataclass(frozen=True, slots=True)
class HostRules:
    """The policy of THIS host's config, applied at apply time whatever the plan or the warehouse say."""

    protected_patterns: tuple[str, ...]
    min_grace: timedelta
    now: datetime
    max_broker_items: int | None
    max_broker_bytes: int | None

    @classmethod
    def from_config(cls, config: AppConfig, now: datetime) -> HostRules:
        policy = config.policy
        return cls(
            protected_patterns=(*rules.ALWAYS_PROTECTED, *policy.protected_topic_patterns,
                                *protected_patterns(config.detect)),
            min_grace=timedelta(milliseconds=max(policy.min_grace_ms, MIN_GRACE_FLOOR_MS)),
            now=now, max_broker_items=policy.max_broker_items, max_broker_bytes=policy.max_broker_bytes,
        )


def normalise_fingerprint(value: str) -> str:
    return value.split(":", 1)[1] if value.startswith("sha256:") else value


def check_host(plan: GcPlan, broker_id: int, log_dir: str, items: list[PlanItem]) -> None:
    """Raises PreconditionFailed unless ``log_dir/meta.properties`` matches the plan's cluster, broker and dir id."""
    path = Path(log_dir) / "meta.properties"
    try:
        meta = read_meta_properties(read_regular_file(str(path)))
    except OSError as exc:
        raise PreconditionFailed(f"cannot read {path}: {exc.strerror or exc}") from None
    if not meta.kafka_would_accept:
        raise PreconditionFailed(f"{path} is not a valid meta.properties: {[str(p) for p in meta.problems]}")
    if plan.cluster_id is None:
        raise PreconditionFailed(f"plan {plan.plan_id} records no cluster_id; it cannot be bound to this host")
    if meta.cluster_id != plan.cluster_id:
        raise PreconditionFailed(f"{path}: cluster.id {meta.cluster_id} is not the plan's {plan.cluster_id} "
                                 "(plan from another cluster)")
    if meta.node_id != broker_id:
        raise PreconditionFailed(f"{path}: node id {meta.node_id} is not broker {broker_id} (plan for another "
                                 "broker, or wrong --broker)")
    for item in items:
        if item.directory_id is not None and str(meta.directory_id) != item.directory_id:
            raise PreconditionFailed(f"{path}: directory.id {meta.directory_id} is not the plan's "
                                     f"{item.directory_id} (another disk is mounted here)")


def _consistent(item: PlanItem, d: ObservedDir) -> None:
    """The item's claims against the disk: any difference is a plan that lies (or a crawl gone stale)."""
    for field, claimed, seen in (("topic", item.topic, d.topic), ("partition", item.partition, d.partition),
                                 ("topic_id", item.topic_id, d.topic_id)):
        if claimed != seen:
            raise ItemSkipped(f"{d.path}: plan says {field} {claimed!r}, the disk says {seen!r}", "inconsistent")
    allowed = PLANNABLE_BY_KIND.get(d.kind, frozenset())
    if not allowed:
        raise ItemSkipped(f"{d.path} is a {d.kind} directory: never touched", "never_planned")
    if item.class_ not in allowed:
        raise ItemSkipped(f"{d.path}: class {item.class_!r} is not one a {d.kind} dir can have "
                          f"({sorted(allowed)})", "inconsistent")
    if d.topic_id is None and d.kind != "delete":
        raise ItemSkipped(f"{d.path} has no readable topic id: never touched", "never_planned")
    if d.fingerprint != normalise_fingerprint(item.fingerprint):
        raise ItemSkipped(f"{d.path} changed since the crawl (fingerprint {d.fingerprint[:12]}… is not "
                          f"{normalise_fingerprint(item.fingerprint)[:12]}…)", "changed")


def _protected(d: ObservedDir, controller: ControllerCheck, patterns: tuple[str, ...]) -> str | None:
    tid = None if d.topic_id is None else Uuid.from_string(d.topic_id)
    for name in sorted(controller.names_of(d)) or [None]:
        if C.is_protected(name, tid, patterns):
            return name or str(tid)
    return None


def verify_item(item: PlanItem, broker_id: int, controller: ControllerCheck, host: HostRules) -> VerifiedItem:
    """Every per-item precondition, from the disk and the controller only; raises ItemSkipped naming the rule."""
    d = observe_dir(item.log_dir.rstrip("/"), item.dir_name)
    _consistent(item, d)
    hit = _protected(d, controller, host.protected_patterns)
    if hit is not None:
        raise ItemSkipped(f"{d.path} belongs to protected topic {hit!r}", "protected_topic")
    reason = controller.assigned(d, broker_id)
    if reason is not None:
        raise ItemSkipped(reason, "assigned_replica")
    since, why = controller.garbage_since(d, host.now)
    if since is None:
        raise ItemSkipped(f"{d.path}: garbage age unknown ({why}); the grace floor cannot be checked", "min_grace")
    if host.now - since < host.min_grace:
        raise ItemSkipped(f"{d.path} is garbage only since {since.isoformat()} ({why}); the host's grace floor is "
                          f"{host.min_grace}", "min_grace")
    return VerifiedItem(item, d)


def check_budgets(host: HostRules, broker_id: int, verified: Iterable[VerifiedItem], done_bytes: int,
                  done_items: int) -> None:
    """Refuse the run (PolicyViolation) when this broker's measured items or bytes exceed the host's budgets."""
    items = list(verified)
    count = done_items + len(items)
    size = done_bytes + sum(v.bytes for v in items)
    if host.max_broker_items is not None and count > host.max_broker_items:
        raise rules.refuse("max_broker_items", f"broker {broker_id} would quarantine {count} items, the host's "
                           f"budget is {host.max_broker_items} (policy.max_broker_items)")
    if host.max_broker_bytes is not None and size > host.max_broker_bytes:
        raise rules.refuse("max_broker_bytes", f"broker {broker_id} would quarantine {size} bytes (measured on "
                           f"disk), the host's budget is {host.max_broker_bytes} (policy.max_broker_bytes)")
