"""A remote tier for the remote executor's tests: Aiven-layout objects under an owned prefix (a ``file://`` folder
or a moto bucket), a controller log that deleted topic ``gone`` three days ago and keeps ``orders`` live, a plan
made by the product's own listing (``list_location`` → ``listing_rows``) and planner (``plan_remote_items``),
registered and signed in a real delta-rs warehouse.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import CLUSTER_ID, Topic, approve, executor_section, force_approve, write_metadata_log

from pipelines.config.models import AppConfig
from pipelines.execute_remote.apply import RemoteTools
from pipelines.execute_remote.target import RemoteTarget
from pipelines.execute_remote.tier_store import TierStore
from pipelines.kafka.uuid import Uuid
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.plan.remote_items import plan_remote_items
from pipelines.remote_tier.object_listing import list_location, listing_rows
from pipelines.tables.rust_engine import RustTableStore

__all__ = ["CLUSTER_ID", "Topic", "force_approve", "write_metadata_log"]  # re-exported for the tests

OWNED = "clusterA/"
GONE_ID = Uuid(0x1111, 0x2222)
LIVE_ID = Uuid(0x3333, 0x4444)
SEGMENTS = (Uuid(0x5555, 1), Uuid(0x5555, 2))
KINDS = ("log", "indexes", "rsm-manifest")
DAY_MS = 86_400_000


def key_of(topic: str, tid: Uuid, partition: int, sid: Uuid, start: int, kind: str, prefix: str = OWNED) -> str:
    return f"{prefix}{topic}-{tid}/{partition}/{start:020d}-{sid}.{kind}"


def content(key: str) -> bytes:
    """Distinct, reproducible bytes per key (a few KiB)."""
    return hashlib.sha256(key.encode()).digest() * (64 + len(key))


class Tier:
    """Write and read objects of the tier, whichever store it is."""

    def __init__(self, tools: RemoteTools) -> None:
        self.tools = tools

    @property
    def fs(self):
        return self.tools.tier.fs

    def path(self, key: str) -> str:
        return self.tools.tier.loc.path(key)

    def put(self, key: str, data: bytes, *, age_days: float | None = 3) -> None:
        path = self.path(key)
        if self.fs.protocol in ("file", ("file", "local")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Path(path).write_bytes(data)
            if age_days is not None:
                when = datetime.now(timezone.utc).timestamp() - age_days * 86_400
                os.utime(path, (when, when))
        else:
            self.fs.pipe_file(path, data)
        self.fs.invalidate_cache()

    def read(self, key: str) -> bytes | None:
        self.fs.invalidate_cache()
        try:
            return self.fs.cat_file(self.path(key))
        except FileNotFoundError:
            return None

    def objects(self) -> dict[str, bytes]:
        """Every object of the store's root, relative key → bytes."""
        self.fs.invalidate_cache()
        root = self.tools.tier.loc.root
        found = self.fs.find(root)
        return {self.tools.tier.loc.relative(p): self.fs.cat_file(p) for p in found}


@dataclass
class RemoteWorld:
    root: Path
    store: RustTableStore
    config: AppConfig
    tools: RemoteTools
    tier: Tier
    plan: GcPlan
    originals: dict[str, bytes] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        return Path(self.config.executor.state_dir or "")

    def quarantine(self, key: str) -> str:
        return self.tools.target.quarantine_key(self.plan.plan_id, key)


def findings_of(tier_rows: list[dict[str, Any]], cls: str = "remote_deleted_topic", plannable: bool = True,
                ) -> list[dict[str, Any]]:
    """One finding per segment of the listed rows (what classify_remote would say for a deleted topic)."""
    seen: dict[tuple, dict[str, Any]] = {}
    for r in tier_rows:
        if r["segment_id"] is None:
            continue
        ref = (r["topic_id"], r["partition"], r["segment_id"])
        seen.setdefault(ref, {"cluster": "c1", "run_id": "run-1", "topic": r["topic"], "topic_id": r["topic_id"],
                              "partition": r["partition"], "segment_id": r["segment_id"],
                              "start_offset": r["start_offset"], "class": cls, "reason": "test", "bytes": 0,
                              "objects": 0, "plannable": plannable, "garbage_since": None})
    return list(seen.values())


def listed_rows(tools: RemoteTools, layout: str = "aiven", prefix: str = OWNED) -> list[dict[str, Any]]:
    """``remote_objects`` rows of the tier as the crawl lists it (the product's own listing)."""
    rows = listing_rows(list_location(tools.tier.loc, layout, prefix), layout, prefix)
    return [{**r.as_row(), "cluster": "c1", "run_id": "run-1"} for r in rows]


def make_plan(items: tuple[PlanItem, ...], *, plan_id: str = "plan-r", created_hours_ago: float = 1) -> GcPlan:
    return GcPlan(plan_id=plan_id, cluster="c1", cluster_id=CLUSTER_ID,
                  created_at=datetime.now(timezone.utc) - timedelta(hours=created_hours_ago),
                  created_by="detector", run_id="run-1", items=items).with_hash()


def config_of(tmp_path: Path, *, policy: dict | None = None,
              gone_removed: bool = True) -> AppConfig:
    """The host's config; its controller log removed ``gone`` three days ago (``gone_removed``) or keeps it."""
    topics = [Topic("gone", str(GONE_ID), (0, 1), removed=gone_removed), Topic("orders", str(LIVE_ID), (0,))]
    log = write_metadata_log(tmp_path / "meta" / "__cluster_metadata-0", topics)
    return AppConfig.model_validate({
        "cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
        "executor": executor_section(tmp_path, tmp_path / "state"),
        "metadata": {"kind": "metadata_log", "source": str(log)},
        **({"policy": policy} if policy else {}),
    })


def build_remote_world(tmp_path: Path, location: str | None = None, *, storage_options: dict | None = None,
                       approve_plan: bool = True, cls: str = "remote_deleted_topic", segments=SEGMENTS,
                       topic: tuple[str, Uuid] = ("gone", GONE_ID), metadata_source: Path | None = None,
                       policy: dict | None = None, outside: bool = True) -> RemoteWorld:
    """The tier at ``location`` (default a ``file://`` folder) with ``segments`` of ``topic`` under the owned prefix,
    and (``outside``) the same segment names under another cluster's prefix ``clusterB/``."""
    location = location or f"file://{tmp_path / 'tier'}"
    target = RemoteTarget(location=location, layout="aiven", owned_prefix=OWNED, prefix=OWNED,
                          storage_options=storage_options or {},
                          metadata_source=None if metadata_source is None else str(metadata_source))
    tools = RemoteTools(target, TierStore.open(location, storage_options or {}))
    tier = Tier(tools)
    originals: dict[str, bytes] = {}
    name, tid = topic
    for n, sid in enumerate(segments):
        for kind in KINDS:
            key = key_of(name, tid, 0, sid, 100 * n, kind)
            originals[key] = content(key)
            tier.put(key, originals[key])
            if outside:
                other = key_of(name, tid, 0, sid, 100 * n, kind, prefix="clusterB/")
                tier.put(other, content(other))
    rows = listed_rows(tools)
    planning = plan_remote_items(findings_of(rows, cls), rows, owned_prefix=OWNED,
                                 quarantine_folder=target.quarantine_folder)
    assert len(planning.items) == len(segments), planning.left_out
    plan = make_plan(tuple(planning.items))
    config = config_of(tmp_path, policy=policy)
    store = RustTableStore(str(tmp_path / "warehouse"))
    if approve_plan:
        approve(store, plan, config)
    return RemoteWorld(tmp_path, store, config, tools, tier, plan, originals)
