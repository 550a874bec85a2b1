"""`run_pipeline` (what `logdir-gc run` and `demo` do) and the jobs on a generated cluster: real Spark + Delta."""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "signing"))

from ssh_keys import Keyring, require_openssh

from pipelines.config import load_config
from pipelines.config.models import ExecutorConfig, PolicyConfig
from pipelines.detect import classes as C
from pipelines.orchestrate import run_pipeline
from pipelines.plan import approval
from pipelines.plan.model import GcPlan
from pipelines.signing.decision import HostFacts, judge
from pipelines.signing.records import read_signatures
from pipelines.signing.trust import load_host_trust
from pipelines.simulate import PRESETS, ClusterSpec, generate, load_truth
from pipelines.tables import open_store

pytestmark = pytest.mark.spark

NOW_MS = 1_780_000_000_000
NOW = datetime.fromtimestamp(NOW_MS / 1000, tz=timezone.utc)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cluster")
    spec = ClusterSpec(brokers=3, jbod_dirs=2, anomalies=PRESETS["small"], now_ms=NOW_MS, seed=7)
    generate(spec, out, warehouse=str(out / "warehouse"), force=True)
    return out


def _keys(rows: list[dict]) -> list[tuple]:
    return sorted((r["broker_id"], r["log_dir"], r["dir_name"]) for r in rows)


def test_run_reproduces_truth_plans_only_garbage_and_reruns_idempotently(spark, cluster: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    config = load_config(cluster / "cluster.yaml")
    truth = load_truth(cluster / "truth.json")
    lines: list[str] = []

    report = run_pipeline(config, "r1", created_by="scheduler", progress=lines.append, now=NOW)

    assert [s.step for s in report.steps] == ["crawl", "ingest_metadata", "detect", "plan"]
    assert any(line.startswith("[4/4] plan done") for line in lines)
    store = open_store("rust", config.warehouse)
    findings = store.read_rows("findings", where={"run_id": "r1"})
    got = {(r["broker_id"], r["log_dir"], r["dir_name"]): (r["class"], r["protected"]) for r in findings}
    want = {(i.broker_id, i.log_dir, i.dir_name): (i.cls, i.protected) for i in truth.items}
    assert got == want

    plan = GcPlan.from_json((Path(config.warehouse) / "_plans" / f"{report.plan_id}.json").read_text())
    garbage = {(i.broker_id, i.log_dir, i.dir_name) for i in truth.items
               if i.cls in C.GARBAGE_CLASSES and not i.protected}
    assert {(i.broker_id, i.log_dir, i.dir_name) for i in plan.items} == garbage
    assert plan.cluster_id == truth.cluster_id
    [registered] = store.read_rows("gc_plans", where={"plan_id": report.plan_id})
    assert registered["status"] == "proposed" and registered["content_hash"] == plan.content_hash

    counts = {t: len(store.read_rows(t, where={"run_id": "r1"}))
              for t in ("partition_dirs", "log_dirs", "findings", "controller_topics", "controller_partitions")}
    events = len(store.read_rows("metadata_events"))
    commits = len(store.history("crawl_runs"))
    with caplog.at_level(logging.WARNING, logger="pipelines.orchestrate.run_status"):
        run_pipeline(config, "r1", created_by="scheduler", now=NOW)
    # delta-rs found the earlier row in the table Spark wrote: the rerun was marked running, then got its outcome
    assert len(store.history("crawl_runs")) == commits + 2
    assert not [r for r in caplog.records if r.name == "pipelines.orchestrate.run_status"]
    assert {t: len(store.read_rows(t, where={"run_id": "r1"})) for t in counts} == counts
    assert len(store.read_rows("metadata_events")) == events, "the event history is merged, never duplicated"
    assert _keys(store.read_rows("findings", where={"run_id": "r1"})) == _keys(findings)


def test_jobs_run_the_same_steps_and_the_plan_job_signs_with_its_service_key(spark, cluster: Path,
                                                                           tmp_path: Path) -> None:
    from jobs import crawl, detect, ingest_metadata, plan

    require_openssh()
    config_file = str(cluster / "cluster.yaml")
    for job in (crawl, ingest_metadata, detect):
        job.main(["--config", config_file, "--run-id", "j1"])
    keys = Keyring(tmp_path / "keys")
    service_key = keys.key("scheduler")
    keys.allow("scheduler", "scheduler")
    signing = yaml.safe_load(Path(config_file).read_text()) | {"signing": {"service_key": str(service_key)}}
    (tmp_path / "signing.yaml").write_text(yaml.safe_dump(signing))
    plan.main(["--config", str(tmp_path / "signing.yaml"), "--run-id", "j1", "--created-by", "scheduler"])
    store = open_store("rust", load_config(config_file).warehouse)
    truth = load_truth(cluster / "truth.json")
    assert len(store.read_rows("findings", where={"run_id": "j1"})) == len(truth.items)
    [registered] = store.read_rows("gc_plans", where={"run_id": "j1"})
    record = approval.get_plan(store, registered["plan_id"])
    trust = load_host_trust(ExecutorConfig(allowed_signers=str(keys.allowed_signers)))
    verdict = judge(record.plan(), read_signatures(store, record.plan_id), trust,
                    HostFacts(record.cluster, None, None), PolicyConfig(), datetime.now(timezone.utc))
    assert [(v.who, v.status) for v in verdict.signatures] == [("scheduler", "author")]
