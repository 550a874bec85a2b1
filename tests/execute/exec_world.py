"""A synthetic broker host for executor tests: log dirs built with ``tests/kafka/logdir_factory``, a KRaft metadata
log in Kafka's format that says what the controller assigns (the executor re-reads it), a plan made from what is on
disk (fingerprints from the shared crawl function), registered and approved in a real delta-rs warehouse, and an
``AppConfig`` pointing at all of it.

The controller's story (:func:`write_metadata_log`): ten days ago every topic of the world was created with this
broker in its replicas (``orders`` with broker 2 as well); three days ago the garbage topics were deleted. The
``-delete`` dirs are three days old by mtime. So every garbage item is past the default 24 h grace floor.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kafka"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "signing"))

from logdir_factory import CLUSTER_ID, PartitionSpec, make_log_dir, uuid_for
from ssh_keys import Keyring

from pipelines.config.models import AppConfig
from pipelines.kafka.logdir import fingerprint_dir
from pipelines.plan import approval
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.signing.workflow import approve_signed, propose_signed
from pipelines.tables.rust_engine import RustTableStore

BROKER = 1
GARBAGE = (PartitionSpec("gone", 0, segments=(0, 100), log_content=b"x" * 5000),
           PartitionSpec("gone", 1, segments=(0,), log_content=b"y" * 7000),
           PartitionSpec("old", 3, kind="delete", log_content=b"z" * 3000))
LIVE = (PartitionSpec("orders", 0, log_content=b"o" * 4000), PartitionSpec("orders", 1, log_content=b"p" * 100))


def tree_digest(root: Path, *, exclude: tuple[str, ...] = ()) -> dict[str, str]:
    """relative path → sha256 of content (dirs: 'dir'), for byte-identity checks."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.split(os.sep)[0] in exclude:
            dirs[:] = []
            continue
        for d in dirs:
            out[os.path.normpath(os.path.join(rel, d))] = "dir"
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.normpath(os.path.join(rel, f))] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


@dataclass
class World:
    root: Path
    log_dir: Path
    store: RustTableStore
    config: AppConfig
    plan: GcPlan
    garbage: dict[str, Path] = field(default_factory=dict)  # item_id → original path

    @property
    def state_dir(self) -> Path:
        return self.root / "state"


CLASS_OF_KIND = {"live": "deleted_topic", "delete": "stuck_delete", "stray": "stray", "future": "abandoned_future"}
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Topic:
    """A topic as the controller's log records it (``removed``: a RemoveTopicRecord three days ago)."""

    name: str
    topic_id: str
    partitions: tuple[int, ...] = (0,)
    replicas: tuple[int, ...] = (BROKER, 2)
    adding: tuple[int, ...] = ()
    removed: bool = False
    adding_in_replicas: bool = True  # as Kafka writes it; False pins a check of adding_replicas on its own


def topics_of(live=LIVE, deleted=GARBAGE) -> list[Topic]:
    """The world's topics: those of ``live`` with this broker as a replica, those of ``deleted`` removed."""
    parts: dict[tuple[str, str], set[int]] = {}
    for spec in (*live, *deleted):
        parts.setdefault((spec.topic, str(spec.resolved_topic_id)), set()).add(spec.partition)
    live_names = {s.topic for s in live}
    return [Topic(name, tid, tuple(sorted(ps)), removed=name not in live_names)
            for (name, tid), ps in sorted(parts.items())]


def write_metadata_log(path: Path, topics: list[Topic], *, now_ms: int | None = None, base_offset: int = 0) -> Path:
    """``path`` (a ``__cluster_metadata-0`` dir) holding one segment in Kafka's format: every topic created ten days
    before ``now_ms``, the removed ones deleted three days before it. With ``base_offset`` > 0 the log misses its
    start, so the image it gives is incomplete."""
    from pipelines.simulate.controller import Batch, Rec
    from pipelines.simulate.metadata_files import encode_log_batch

    now_ms = now_ms or int(datetime.now(timezone.utc).timestamp() * 1000)
    created: list[Rec] = [Rec("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 21})]
    for t in topics:
        created.append(Rec("TopicRecord", 0, {"name": t.name, "topic_id": t.topic_id}))
        created += [Rec("PartitionRecord", 0, {
            "partition_id": p, "topic_id": t.topic_id, "isr": list(t.replicas),
            "replicas": [*t.replicas, *t.adding] if t.adding_in_replicas else list(t.replicas),
            "removing_replicas": [], "adding_replicas": list(t.adding), "leader": t.replicas[0], "leader_epoch": 0,
            "partition_epoch": 0}) for p in t.partitions]
    removed = tuple(Rec("RemoveTopicRecord", 0, {"topic_id": t.topic_id}) for t in topics if t.removed)
    batches = [Batch(base_offset, now_ms - 10 * DAY_MS, 1, tuple(created))]
    if removed:
        batches.append(Batch(base_offset + len(created), now_ms - 3 * DAY_MS, 1, removed))
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{base_offset:020d}.log").write_bytes(b"".join(encode_log_batch(b) for b in batches))
    return path


def with_metadata(w: World, topics: list[Topic], name: str = "alt", **kwargs) -> AppConfig:
    """The world's config re-pointed at a controller log that says ``topics``."""
    log = write_metadata_log(w.root / name / "__cluster_metadata-0", topics, **kwargs)
    return w.config.model_copy(update={"metadata": w.config.metadata.model_copy(update={"source": str(log)})})


def item_for(log_dir: Path, spec: PartitionSpec, *, broker: int = BROKER, item_id: str | None = None,
             topic_id: str | None = "auto") -> PlanItem:
    path = log_dir / spec.dir_name
    size = sum(p.stat().st_size for p in path.iterdir())
    return PlanItem.model_validate({
        "item_id": item_id or spec.dir_name.replace(".", "_"), "broker_id": broker, "log_dir": str(log_dir),
        "dir_name": spec.dir_name, "topic": spec.topic, "partition": spec.partition,
        "topic_id": str(spec.resolved_topic_id) if topic_id == "auto" else topic_id,
        "class": CLASS_OF_KIND[spec.kind],
        "bytes": size, "fingerprint": fingerprint_dir(str(path)), "directory_id": str(uuid_for(f"dir-{log_dir.name}")),
    })


def make_plan(log_dir: Path, specs, *, plan_id: str = "plan-1", author: str = "detector",
              cluster_id: str | None = CLUSTER_ID, items: tuple[PlanItem, ...] | None = None) -> GcPlan:
    return GcPlan(
        plan_id=plan_id, cluster="c1", cluster_id=cluster_id,
        created_at=datetime.now(timezone.utc) - timedelta(hours=1),
        created_by=author, run_id="run-1",
        items=items if items is not None else tuple(item_for(log_dir, s) for s in specs),
    ).with_hash()


def keyring_of(config: AppConfig) -> Keyring:
    """The keyring whose allowed_signers the config's executor trusts."""
    assert config.executor.allowed_signers, "a world built with signed=False has no keyring"
    return Keyring(Path(config.executor.allowed_signers).parent)


def approve(store: RustTableStore, plan: GcPlan, config: AppConfig, *, by: str = "reviewer") -> None:
    """Register ``plan`` and approve it as ``by``: when the world is signed, its author (``created_by``) signs the
    proposal and ``by`` the approval, each with their own key."""
    approval.register_plan(store, plan, actor=plan.created_by, policy=config.policy)
    if config.executor.require_signatures:
        propose_signed(store, plan.plan_id, policy=config.policy, key=keyring_of(config).key(plan.created_by))
        approve_signed(store, plan.plan_id, by=by, policy=config.policy, key=keyring_of(config).key(by))
    else:
        approval.approve(store, plan.plan_id, by=by, policy=config.policy)


def force_approve(store: RustTableStore, plan: GcPlan, config: AppConfig, *, by: str = "reviewer") -> None:
    """What someone holding ONE approver key and an author's key (``detector``'s, e.g. the plan job's) who can also
    write the warehouse can do: sign any plan (no approval policy runs on their machine) and write the rows that say
    it is approved. The executor's own checks are all that stand between such a plan and the disk."""
    from pipelines.signing.records import store_signature
    from pipelines.signing.signer import sign
    from pipelines.signing.workflow import statement_for

    now = datetime.now(timezone.utc)
    approval.register_plan(store, plan, actor=plan.created_by, policy=config.policy)
    store.update("gc_plans", {"plan_id": plan.plan_id}, {"status": "approved", "approvals": [by]})
    approval.append_audit(store, plan.plan_id, now, by, "approve", "proposed", "approved", "", plan.content_hash)
    if config.executor.require_signatures:
        author = statement_for(plan, "propose", "detector", config.policy, now=now)
        store_signature(store, plan.plan_id, now, sign(author, key=keyring_of(config).key("detector")))
        statement = statement_for(plan, "approve", by, config.policy, now=now)
        store_signature(store, plan.plan_id, now, sign(statement, key=keyring_of(config).key(by)))


def age_delete_dirs(log_dir: Path, days: float = 3) -> None:
    """Make every ``-delete`` dir look ``days`` old (the executor dates those by their mtime)."""
    when = datetime.now(timezone.utc).timestamp() - days * 86_400
    for d in log_dir.iterdir():
        if d.name.endswith("-delete"):
            os.utime(d, (when, when))


def executor_section(tmp_path: Path, state_dir: Path, *, signed: bool = True) -> dict:
    """The ``executor`` config of a test host; signed: trusting the keys of ``reviewer`` and ``detector`` (a keyring
    under ``tmp_path/trust``)."""
    executor: dict = {"state_dir": str(state_dir), "require_signatures": signed}
    if signed:
        keys = Keyring(tmp_path / "trust")
        for name in ("reviewer", "detector"):
            keys.key(name)
            keys.allow(name, name)
        executor["allowed_signers"] = str(keys.allowed_signers)
    return executor


def build_world(tmp_path: Path, *, garbage=GARBAGE, live=LIVE, approve_plan: bool = True,
                node_id: int = BROKER, metadata: dict | None = None, policy: dict | None = None,
                signed: bool = True) -> World:
    """A broker host with a warehouse. ``signed``: the executor requires signatures and trusts the keys of
    ``reviewer`` and ``detector`` (a keyring under ``tmp_path/trust``); else ``require_signatures: false``."""
    root = tmp_path / "host"
    log_dir = make_log_dir(root / "kafka-logs", node_id=node_id, partitions=[*garbage, *live])
    age_delete_dirs(log_dir)
    if metadata is None:
        metadata = {"kind": "metadata_log",
                    "source": str(write_metadata_log(root / "meta" / "__cluster_metadata-0", topics_of(live, garbage)))}
    store = RustTableStore(str(tmp_path / "warehouse"))
    executor = executor_section(tmp_path, root / "state", signed=signed)
    config = AppConfig.model_validate({
        "cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
        "brokers": [{"broker_id": BROKER, "log_dirs": [str(log_dir)]}],
        "executor": executor,
        "metadata": metadata,
        **({"policy": policy} if policy else {}),
    })
    plan = make_plan(log_dir, garbage)
    if approve_plan:
        approve(store, plan, config)
    return World(root, log_dir, store, config, plan, {i.item_id: log_dir / i.dir_name for i in plan.items})


def backdate_journal(state_dir: Path, *, hours: float) -> None:
    """Shift every journal record's time back by ``hours`` (purge dates a quarantined item by its ``rename.done``)."""
    import json

    for path in state_dir.glob("journal-broker-*.jsonl"):
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            rec["at"] = (datetime.fromisoformat(rec["at"]) - timedelta(hours=hours)).isoformat()
            lines.append(json.dumps(rec, sort_keys=True))
        path.write_text("".join(f"{line}\n" for line in lines))


def two_broker_world(tmp_path: Path) -> World:
    """Brokers 1 and 2 on one host, each with its own log dir holding a replica of every garbage and live topic;
    one plan with items on both (``garbage`` maps each item id to its dir)."""
    root = tmp_path / "host"
    dirs = {b: make_log_dir(root / f"kafka-logs-{b}", node_id=b, partitions=[*GARBAGE, *LIVE]) for b in (1, 2)}
    for d in dirs.values():
        age_delete_dirs(d)
    log = write_metadata_log(root / "meta" / "__cluster_metadata-0", topics_of())
    store = RustTableStore(str(tmp_path / "warehouse"))
    config = AppConfig.model_validate({
        "cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
        "brokers": [{"broker_id": b, "log_dirs": [str(d)]} for b, d in dirs.items()],
        "executor": executor_section(tmp_path, root / "state"),
        "metadata": {"kind": "metadata_log", "source": str(log)},
    })
    items = tuple(item_for(d, s, broker=b, item_id=f"b{b}-{s.dir_name.replace('.', '_')}")
                  for b, d in dirs.items() for s in GARBAGE)
    plan = make_plan(dirs[1], (), items=items)
    approve(store, plan, config)
    return World(root, dirs[1], store, config, plan, {i.item_id: Path(i.log_dir) / i.dir_name for i in plan.items})
