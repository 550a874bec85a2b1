"""Several clusters' ``logdir-gc run`` started at the same moment into one warehouse, each its own process (its own
Spark driver, as scheduled pipelines are), and the check that every table then holds each cluster's rows once.

``KLGC_TEST_WITHOUT_COORDINATION=1`` runs the same pipelines with Delta's default log stores (the runs name them in
``spark.conf``): how the tests were shown to fail without the multi-driver log stores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from pipelines.orchestrate.run_status import SUCCEEDED
from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.tables.base import TableStore

NOW = datetime.fromtimestamp(1_780_000_000, tz=timezone.utc)
WITHOUT_COORDINATION = os.environ.get("KLGC_TEST_WITHOUT_COORDINATION") == "1"
#: Delta's own defaults, named explicitly (a choice the session honours with a warning).
DEFAULT_LOG_STORES = {"spark.delta.logStore.s3.impl": "io.delta.storage.S3SingleDriverLogStore",
                      "spark.delta.logStore.s3a.impl": "io.delta.storage.S3SingleDriverLogStore",
                      "spark.delta.logStore.file.impl": "io.delta.storage.HDFSLogStore"}


@dataclass
class Outcome:
    cluster: str
    code: int
    report: dict[str, Any]
    stderr: str


def make_cluster(root: Path, name: str, seed: int, warehouse: str, extra: dict[str, Any] | None = None) -> Path:
    """A small generated cluster named ``name`` whose config points at ``warehouse``; returns the config path."""
    spec = ClusterSpec(brokers=2, jbod_dirs=1, anomalies=PRESETS["small"], now_ms=int(NOW.timestamp() * 1000),
                       seed=seed)
    out = root / name
    generate(spec, out, warehouse=warehouse, force=True)
    config = out / "cluster.yaml"
    document = yaml.safe_load(config.read_text())
    document["cluster"] = name
    spark = document.setdefault("spark", {})
    spark["master"] = "local[1]"  # three drivers on two cores
    if WITHOUT_COORDINATION:
        spark["conf"] = {**(spark.get("conf") or {}), **DEFAULT_LOG_STORES}
    document.update(extra or {})
    config.write_text(yaml.safe_dump(document))
    return config


def run_at_once(configs: dict[str, Path], env: dict[str, str], timeout: float = 2400) -> list[Outcome]:
    """``logdir-gc run --json`` of every config, all started before any is waited for (each run makes its own run
    id, as scheduled runs do: all from the same second)."""
    procs = {name: subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli.main", "run", "--config", str(path), "--now", NOW.isoformat(),
         "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, path in configs.items()}
    outcomes = []
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=timeout)
        report = json.loads(out[out.index("{"):]) if proc.returncode == 0 and "{" in out else {}
        outcomes.append(Outcome(name, proc.returncode, report, err))
    return outcomes


def _keys(store: TableStore, table: str, where: dict[str, Any], columns: tuple[str, ...]) -> Counter[tuple]:
    return Counter(tuple(r[c] for c in columns) for r in store.read_rows(table, where, columns=columns))


def assert_each_cluster_once(store: TableStore, outcomes: list[Outcome], log_dirs: dict[str, int]) -> None:
    """Every run succeeded, and each table holds each cluster's rows exactly once: none lost, none doubled.

    ``log_dirs``: cluster → the number of log dirs its config lists.
    """
    failed = {o.cluster: (o.code, o.stderr.strip().splitlines()[-3:]) for o in outcomes if o.code != 0}
    assert not failed, failed
    for outcome in outcomes:
        run = {"cluster": outcome.cluster, "run_id": outcome.report["run_id"]}
        counts = {step: outcome.report["steps"][step]["counts"] for step in ("ingest_metadata", "detect")}
        assert [r["status"] for r in store.read_rows("crawl_runs", run)] in (["ok"], ["partial"]), outcome.cluster
        assert [r["status"] for r in store.read_rows("ingest_runs", run)] == [SUCCEEDED], outcome.cluster
        dirs = _keys(store, "partition_dirs", run, ("broker_id", "log_dir", "dir_name"))
        findings = _keys(store, "findings", run, ("broker_id", "log_dir", "dir_name"))
        assert dirs and set(dirs.values()) == {1}, (outcome.cluster, dirs.most_common(2))
        assert findings == dirs and sum(dirs.values()) == counts["detect"]["dirs"], outcome.cluster
        logs = _keys(store, "log_dirs", run, ("broker_id", "log_dir"))
        assert set(logs.values()) == {1} and len(logs) == log_dirs[outcome.cluster], (outcome.cluster, logs)
        partitions = _keys(store, "controller_partitions", run, ("topic_id", "partition"))
        assert set(partitions.values()) == {1}, outcome.cluster
        assert sum(partitions.values()) == counts["ingest_metadata"]["partitions"], outcome.cluster
        topics = _keys(store, "controller_topics", run, ("topic_id",))
        assert set(topics.values()) == {1} and len(topics) == counts["ingest_metadata"]["topics"], outcome.cluster
        brokers = _keys(store, "controller_brokers", run, ("broker_id",))
        assert set(brokers.values()) == {1} and len(brokers) == counts["ingest_metadata"]["brokers"], outcome.cluster
        events = _keys(store, "metadata_events", {"cluster": outcome.cluster}, ("offset", "event", "topic_id",
                                                                                 "partition"))
        assert set(events.values()) == {1} and len(events) == counts["ingest_metadata"]["events"], outcome.cluster
        plans = [p["plan_id"] for p in store.read_rows("gc_plans", run)]
        assert plans == ([outcome.report["plan_id"]] if outcome.report.get("plan_id") else []), outcome.cluster
