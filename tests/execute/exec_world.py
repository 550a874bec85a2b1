"""A synthetic broker host for executor tests: log dirs built with ``tests/kafka/logdir_factory``, a plan made
from what is on disk (fingerprints from the shared crawl function), registered and approved in a real delta-rs
warehouse, and an ``AppConfig`` pointing at all of it."""

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
from pipelines.signing.workflow import approve_signed
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


def item_for(log_dir: Path, spec: PartitionSpec, *, broker: int = BROKER, item_id: str | None = None,
             topic_id: str | None = "auto") -> PlanItem:
    path = log_dir / spec.dir_name
    size = sum(p.stat().st_size for p in path.iterdir())
    return PlanItem.model_validate({
        "item_id": item_id or spec.dir_name.replace(".", "_"), "broker_id": broker, "log_dir": str(log_dir),
        "dir_name": spec.dir_name, "topic": spec.topic, "partition": spec.partition,
        "topic_id": str(spec.resolved_topic_id) if topic_id == "auto" else topic_id, "class": "deleted_topic",
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
    """Register ``plan`` and approve it as ``by``: signed with ``by``'s key when the world is signed."""
    approval.register_plan(store, plan, actor=plan.created_by, policy=config.policy)
    if config.executor.require_signatures:
        approve_signed(store, plan.plan_id, by=by, policy=config.policy, key=keyring_of(config).key(by))
    else:
        approval.approve(store, plan.plan_id, by=by, policy=config.policy)


def build_world(tmp_path: Path, *, garbage=GARBAGE, live=LIVE, approve_plan: bool = True,
                node_id: int = BROKER, metadata: dict | None = None, signed: bool = True) -> World:
    """A broker host with a warehouse. ``signed``: the executor requires signatures and trusts the keys of
    ``reviewer`` and ``detector`` (a keyring under ``tmp_path/trust``); else ``require_signatures: false``."""
    root = tmp_path / "host"
    log_dir = make_log_dir(root / "kafka-logs", node_id=node_id, partitions=[*garbage, *live])
    store = RustTableStore(str(tmp_path / "warehouse"))
    executor: dict = {"state_dir": str(root / "state"), "require_signatures": signed}
    if signed:
        keys = Keyring(tmp_path / "trust")
        for name in ("reviewer", "detector"):
            keys.key(name)
            keys.allow(name, name)
        executor["allowed_signers"] = str(keys.allowed_signers)
    config = AppConfig.model_validate({
        "cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
        "brokers": [{"broker_id": BROKER, "log_dirs": [str(log_dir)]}],
        "executor": executor,
        **({"metadata": metadata} if metadata else {}),
    })
    plan = make_plan(log_dir, garbage)
    if approve_plan:
        approve(store, plan, config)
    return World(root, log_dir, store, config, plan, {i.item_id: log_dir / i.dir_name for i in plan.items})
