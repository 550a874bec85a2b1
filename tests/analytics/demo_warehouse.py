"""A demo warehouse for the analytics tests, built from the project's own pieces (no Spark).

simulate → ``crawl_local`` → ``load_metadata`` rows → findings (classified by the pure-Python
``pipelines.plan.recheck.classify``) → a GC plan per run, all written with the delta-rs table store. Two crawl runs:
between them one topic grows and one garbage dir disappears, so trends and plan diffs have something to show.

The ``findings`` grace clock (``garbage_since``) is derived here from the metadata events in a simple way (newest
event of the dir's topic id, the ``-delete`` dir's mtime for ``stuck_delete``): the analytics only read it, so
the tests need a plausible clock, not the detector's exact one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pipelines.config.load import load_config
from pipelines.config.models import DetectConfig, PolicyConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.detect import classes as C
from pipelines.metadata import event_rows, image_rows, load_metadata
from pipelines.plan import approval
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.plan.recheck import DirFacts, classify, is_protected_dir, live_copies
from pipelines.simulate import ClusterSpec, generate
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import ALL_TABLES, FINDINGS

CLUSTER = "demo"
GROWN_TOPIC_BYTES = 64 * 1024 * 1024
"""Bytes added to every ``.log`` file of the grown topic on broker 1 between run 1 and run 2."""


@dataclass
class DemoWarehouse:
    root: Path
    sim: Path
    warehouse: Path
    cluster: str
    runs: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    grown_topic: str = ""
    removed_dir: tuple[int, str, str] | None = None

    def store(self) -> RustTableStore:
        return RustTableStore(str(self.warehouse), allow_foreign_tables=True)  # built without Spark


def _full(table: str, row: dict[str, Any]) -> dict[str, Any]:
    return {c: row.get(c) for c in ALL_TABLES[table].column_names}


def _garbage_since(f: DirFacts, cls: str, events: list[dict[str, Any]]) -> datetime | None:
    if cls == C.STUCK_DELETE:
        return f.dir_mtime
    if cls not in C.GARBAGE_CLASSES or f.topic_id is None:
        return None
    times = [e["timestamp"] for e in events if e["topic_id"] == f.topic_id and e["timestamp"] is not None]
    if cls == C.RECREATED_TOPIC and f.topic is not None:
        times += [e["timestamp"] for e in events if e["event"] == "topic_created" and e["topic"] == f.topic]
    return max(times) if times else None


def _findings(run_id: str, at: datetime, crawl, replay, config: DetectConfig, events) -> list[dict[str, Any]]:
    dir_ids = {(r["broker_id"], r["log_dir"]): r["directory_id"] for r in crawl.log_dirs}
    facts = [DirFacts.from_partition_dir(r, dir_ids.get((r["broker_id"], r["log_dir"]))) for r in crawl.partition_dirs]
    copies = live_copies(facts)
    image = replay.image
    rows = []
    for f, pd in zip(facts, crawl.partition_dirs, strict=True):
        cls, reason = classify(f, image, copies=copies, config=config, now=at)
        protected = is_protected_dir(f, image, config)
        since = _garbage_since(f, cls, events)
        named = image.topics.by_name.get(f.topic) if f.topic else None
        plannable = (C.is_plannable(cls, protected) and since is not None
                     and (at - since).total_seconds() * 1000 >= config.grace_ms)
        evidence = {"disk": {"topic_id": f.topic_id, "partition_metadata_status": f.partition_metadata_status,
                             "directory_id": f.directory_id},
                    "controller": {"topic_id_for_name": None if named is None else str(named.topic_id)},
                    "image": {"metadata_offset": image.last_offset, "complete": image.complete}}
        rows.append(_full("findings", {
            "run_id": run_id, "cluster": pd["cluster"], "broker_id": f.broker_id, "log_dir": f.log_dir,
            "dir_name": f.dir_name, "topic": f.topic, "partition": f.partition, "topic_id": f.topic_id,
            "class": cls, "protected": protected, "reason": reason, "bytes": pd["bytes"], "kind": f.kind,
            "controller_topic_id": None if named is None else str(named.topic_id),
            "metadata_offset": image.last_offset, "garbage_since": since, "plannable": plannable,
            "evidence": json.dumps(evidence, sort_keys=True), "fingerprint": pd["fingerprint"],
            "directory_id": f.directory_id, "detected_at": at,
        }))
    return rows


def _plan(run_id: str, at: datetime, findings: list[dict[str, Any]], cluster: str, cluster_id: str | None) -> GcPlan:
    items = tuple(
        PlanItem.model_validate({
            "item_id": f"{r['broker_id']}:{Path(r['log_dir']).name}:{r['dir_name']}", "broker_id": r["broker_id"],
            "log_dir": r["log_dir"], "dir_name": r["dir_name"], "topic": r["topic"], "partition": r["partition"],
            "topic_id": r["topic_id"], "class": r["class"], "bytes": r["bytes"] or 0, "fingerprint": r["fingerprint"],
            "directory_id": r["directory_id"], "reason": r["reason"],
        })
        for r in findings if r["plannable"]
    )
    offset = findings[0]["metadata_offset"] if findings else None
    return GcPlan(plan_id=f"plan-{run_id}", cluster=cluster, cluster_id=cluster_id, created_at=at,
                  created_by="detector", run_id=run_id, metadata_offset=offset, items=items).with_hash()


def _grow(sim: Path, topic: str) -> None:
    for log_dir in sorted((sim / "broker-1").iterdir()):
        for pdir in sorted(log_dir.glob(f"{topic}-*")):
            if not pdir.name.removeprefix(f"{topic}-").isdigit():
                continue
            for seg in sorted(pdir.glob("*.log")):
                os.truncate(seg, seg.stat().st_size + GROWN_TOPIC_BYTES)


def ingest_run(demo: DemoWarehouse, run_id: str, at: datetime, config_path: Path, detect: DetectConfig) -> None:
    store = demo.store()
    for schema in ALL_TABLES.values():
        store.create_if_missing(schema)
    app = load_config(str(config_path))
    crawl = crawl_local(app.brokers, run_id=run_id, cluster=demo.cluster, crawled_at=at)
    crawl.run_row.update(started_at=at, finished_at=at)
    store.append("crawl_runs", [crawl.run_row])
    by_run = {"run_id": run_id}
    store.overwrite_partition("log_dirs", by_run, crawl.log_dirs)
    store.overwrite_partition("partition_dirs", by_run, crawl.partition_dirs)
    store.overwrite_partition("crawl_errors", by_run, crawl.errors)
    replay = load_metadata(app.metadata.source)
    for name, rows in image_rows(replay.image, run_id=run_id, cluster=demo.cluster, source="metadata_log").items():
        store.overwrite_partition(name, by_run, rows)
    known = {(r["offset"], r["event"], r["topic_id"], r["partition"])
             for r in store.read_rows("metadata_events", {"cluster": demo.cluster})}
    new = [r for r in event_rows(replay.events, cluster=demo.cluster, source="metadata_log", run_id=run_id)
           if (r["offset"], r["event"], r["topic_id"], r["partition"]) not in known]
    if new:
        store.append("metadata_events", new)
    events = store.read_rows("metadata_events", {"cluster": demo.cluster})
    findings = _findings(run_id, at, crawl, replay, detect, events)
    store.overwrite_partition(FINDINGS, by_run, findings)
    cluster_id = next((r["meta_cluster_id"] for r in crawl.log_dirs if r["meta_cluster_id"]), None)
    plan = _plan(run_id, at, findings, demo.cluster, cluster_id)
    approval.register_plan(store, plan, actor="detector", policy=PolicyConfig(), now=at)
    demo.runs.append(run_id)
    demo.plans.append(plan.plan_id)


def build_demo_warehouse(root: Path, *, seed: int = 7) -> DemoWarehouse:
    """Simulate a JBOD cluster under ``root/sim`` and crawl it twice into ``root/warehouse``."""
    spec = ClusterSpec(brokers=3, topics=4, partitions_per_topic=3, jbod_dirs=2, seed=seed)
    result = generate(spec, root / "sim", cluster=CLUSTER, warehouse=str(root / "warehouse"))
    demo = DemoWarehouse(root=root, sim=root / "sim", warehouse=root / "warehouse", cluster=CLUSTER)
    truth = json.loads(result.truth_path.read_text())
    now = datetime.fromtimestamp(truth["now_ms"] / 1000, tz=timezone.utc)
    detect = DetectConfig(file_delete_delay_ms=truth["file_delete_delay_ms"])
    ingest_run(demo, "run-1", now - timedelta(days=1), result.config_path, detect)

    ok_topics = sorted({i["topic"] for i in truth["items"] if i["class"] == C.OK and i["broker_id"] == 1
                        and i["topic"] and not i["topic"].startswith("_")})
    demo.grown_topic = ok_topics[0]
    _grow(demo.sim, demo.grown_topic)
    first_plan = demo.store().read_rows("gc_plan_items", {"plan_id": demo.plans[0]})
    gone = sorted(first_plan, key=lambda r: (r["broker_id"], r["log_dir"], r["dir_name"]))[0]
    shutil.rmtree(Path(gone["log_dir"]) / gone["dir_name"])
    demo.removed_dir = (gone["broker_id"], gone["log_dir"], gone["dir_name"])
    ingest_run(demo, "run-2", now, result.config_path, detect)
    return demo


def per_key(rows: list[dict[str, Any]], key: str, value: str = "bytes") -> dict[Any, int]:
    """Sum of ``value`` per ``key`` over ``rows`` (the tests' independent arithmetic)."""
    out: dict[Any, int] = defaultdict(int)
    for r in rows:
        out[r[key]] += r[value] or 0
    return dict(out)
