"""The whole product on a warehouse in a bucket: Spark jobs (delta-spark over s3a), the CLI and an executor
(delta-rs), all at once. The S3 endpoint is moto's standalone server on 127.0.0.1, reached through
:class:`~tests.objectstore.s3_servers.FaultProxy` (its own process), which throttles or slows chosen requests.

moto, not S3Proxy: these tests run concurrent writers, and moto enforces conditional writes (``If-None-Match``)
as S3 does; S3Proxy's filesystem backend ignores them.

The demo runs once per module as a user would run it (``logdir-gc demo`` in a subprocess with only the standard AWS
variables set). The other Spark runs use the test session in this process; its JVM was started without those
variables, so they pass the endpoint and keys through ``warehouse_storage_options``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.config import AppConfig, load_config
from pipelines.errors import StorageUnavailable
from pipelines.plan.model import GcPlan
from pipelines.tables.base import TableStore
from pipelines.tables.warehouse_store import warehouse_store
from tests.objectstore.conftest import Bucket, upload_tree
from tests.objectstore.s3_servers import ACCESS_KEY, REGION, SECRET_KEY, FaultProxy, MotoServer, fault_proxy

pytestmark = pytest.mark.spark

#: ``KLGC_TEST_WITHOUT_COORDINATION=1`` runs the concurrency test as the code was before the engines had owners:
#: the plan step registers plans through delta-spark. It must then fail (see the README's object-storage section).
WITHOUT_COORDINATION = os.environ.get("KLGC_TEST_WITHOUT_COORDINATION") == "1"


def cli(*args: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@dataclass
class DemoInBucket:
    bucket: Bucket
    proxy: FaultProxy
    out: Path
    run_id: str
    plan_id: str
    dirs: int
    outputs: list[str]

    @property
    def config_path(self) -> Path:
        return self.out / "cluster.yaml"

    def env(self) -> dict[str, str]:
        return self.bucket.env(self.proxy.endpoint)

    def options(self) -> dict[str, str]:
        """What an in-process Spark run needs in ``warehouse_storage_options`` (its JVM has no AWS variables)."""
        return {"AWS_ENDPOINT_URL": self.proxy.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def config(self) -> AppConfig:
        return load_config(str(self.config_path), {"warehouse_storage_options": self.options()})

    def reader(self) -> TableStore:
        """delta-rs straight to moto (no proxy): what the tests check with."""
        direct = {**self.options(), "AWS_ENDPOINT_URL": self.bucket.server.endpoint}
        return warehouse_store(self.bucket.warehouse, direct)


@pytest.fixture(scope="module")
def demo(moto: MotoServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoInBucket]:
    bucket = Bucket(moto, moto.create_bucket(f"klgc-demo-{os.getpid()}"))
    out = tmp_path_factory.mktemp("demo") / "demo"
    with fault_proxy(moto.port) as proxy:
        result = cli("demo", "--out", str(out), "--warehouse", bucket.warehouse, "--brokers", "2", "--jbod", "1",
                     "--json", env=bucket.env(proxy.endpoint))
        assert result.returncode == 0, result.stderr[-4000:]
        report = json.loads(result.stdout[result.stdout.index("{"):])  # Spark's Ivy may print a line first
        yield DemoInBucket(bucket, proxy, out, report["run_id"], report["plan_id"],
                           report["steps"]["detect"]["counts"]["dirs"], [result.stdout, result.stderr])


def test_the_demo_runs_in_the_bucket_and_the_executor_applies_its_plan(demo: DemoInBucket) -> None:
    keys = demo.bucket.keys("wh/")
    assert any(k.startswith("wh/findings/_delta_log/") for k in keys)
    assert f"wh/_plans/{demo.plan_id}.json" in keys
    store = demo.reader()
    assert len(store.read_rows("findings", {"run_id": demo.run_id})) == demo.dirs  # Spark wrote, delta-rs reads
    plan = GcPlan.from_json(demo.bucket.read(f"wh/_plans/{demo.plan_id}.json"))
    broker = plan.items[0].broker_id
    mine = [i for i in plan.items if i.broker_id == broker]

    approved = cli("plans", "approve", demo.plan_id, "--by", "alice", "--key", str(demo.out / "keys" / "alice"),
                   "--config", str(demo.config_path), env=demo.env())  # the demo's approver key, as the README shows
    assert approved.returncode == 0, approved.stderr
    applied = cli("apply", demo.plan_id, "--broker", str(broker), "--config", str(demo.config_path), "--execute",
                  "--json", env=demo.env())
    assert applied.returncode == 0, applied.stderr
    demo.outputs += [approved.stdout, approved.stderr, applied.stdout, applied.stderr]
    assert all(not (Path(i.log_dir) / i.dir_name).exists() for i in mine)  # quarantined
    journal = store.read_rows("gc_journal", {"plan_id": demo.plan_id})
    done = {r["item_id"] for r in journal if r["step"] == "item" and r["state"] == "done"}
    assert done == {i.item_id for i in mine}


@pytest.mark.second_tier  # ~66 s in CI: a second Spark run; the demo above keeps the bucket in make test
def test_scheduled_jobs_read_inventories_and_a_metadata_log_copy_from_the_bucket(
        spark: Any, demo: DemoInBucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jobs.crawl
    import jobs.detect
    import jobs.ingest_metadata
    import jobs.plan

    for key, value in demo.env().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)  # the driver's s3fs reads the metadata copy with these alone
    base = load_config(str(demo.config_path))
    first, *others = base.brokers
    inventory = f"s3://{demo.bucket.name}/inventories/broker-{first.broker_id}.jsonl.gz"
    made = cli("inventory", *first.log_dirs, "--out", inventory, "--broker-id", str(first.broker_id), env=demo.env())
    assert made.returncode == 0, made.stderr
    metadata = upload_tree(demo.bucket, Path(base.metadata.source), "metadata/__cluster_metadata-0")
    warehouse = demo.bucket.warehouse  # the demo's tables: a new run id beside the demo's run
    s3fs_options = {"key": ACCESS_KEY, "secret": SECRET_KEY, "client_kwargs": {"endpoint_url": demo.proxy.endpoint}}
    config = {
        "cluster": base.cluster, "warehouse": warehouse, "warehouse_storage_options": demo.options(),
        "brokers": [{"broker_id": first.broker_id, "log_dirs": list(first.log_dirs), "inventory": inventory,
                     "storage_options": s3fs_options},
                    *({"broker_id": b.broker_id, "log_dirs": list(b.log_dirs)} for b in others)],
        "metadata": {"kind": "metadata_log", "source": metadata},
        "detect": base.detect.model_dump(),
    }
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump(config))
    argv = ["--config", str(path), "--run-id", "jobs-1"]
    for job in (jobs.crawl, jobs.ingest_metadata, jobs.detect, jobs.plan):
        job.main(argv)

    store = demo.reader()
    [run] = store.read_rows("crawl_runs", {"run_id": "jobs-1"})
    assert run["status"] in ("ok", "partial") and run["partition_dirs"] > 0
    assert SECRET_KEY not in run["config_json"] and ACCESS_KEY not in run["config_json"]
    from_inventory = store.read_rows("partition_dirs", {"run_id": "jobs-1", "broker_id": first.broker_id})
    assert from_inventory and not store.read_rows("crawl_errors", {"run_id": "jobs-1", "stage": "inventory"})
    assert store.read_rows("metadata_events", {"cluster": base.cluster})
    [plan] = store.read_rows("gc_plans", {"run_id": "jobs-1"})
    assert plan["status"] == "proposed"


@pytest.mark.second_tier  # ~88 s in CI: two more Spark runs; delta-rs' throttling is in test_s3_delta_rs
def test_a_store_throttling_mid_run_fails_the_run_cleanly_and_a_rerun_recovers(
        spark: Any, demo: DemoInBucket, caplog: pytest.LogCaptureFixture) -> None:
    from pipelines.orchestrate import run_pipeline

    config = demo.config()
    demo.proxy.throttle(r"/wh/gc_plans/")  # S3 throttles per prefix: the plan table answers SlowDown
    try:
        with pytest.raises(StorageUnavailable) as failed:
            run_pipeline(config, "fault-1", created_by="ops")
    finally:
        demo.proxy.clear()
    message = str(failed.value)
    demo.outputs.append(message)
    assert "\n" not in message and "throttling" in message and demo.bucket.warehouse in message
    store = demo.reader()
    [run] = store.read_rows("crawl_runs", {"run_id": "fault-1"})
    assert run["status"] == "failed"
    assert not store.read_rows("gc_plans", {"run_id": "fault-1"})  # no half-written plan shows as proposed

    commits = len(store.history("crawl_runs"))
    with caplog.at_level(logging.WARNING, logger="pipelines.orchestrate.run_status"):
        report = run_pipeline(config, "fault-1", created_by="ops")
    # delta-rs read the failed row in the bucket: the rerun was marked running, then got its outcome
    assert len(store.history("crawl_runs")) == commits + 2
    assert not [r for r in caplog.records if r.name == "pipelines.orchestrate.run_status"]
    [run] = store.read_rows("crawl_runs", {"run_id": "fault-1"})
    assert run["status"] in ("ok", "partial")
    [plan] = store.read_rows("gc_plans", {"run_id": "fault-1"})
    assert plan["status"] == "proposed" and plan["plan_id"] == report.plan_id
    assert_replaced_once(store, "fault-1")


def assert_replaced_once(store: TableStore, run_id: str) -> None:
    """The run's crawl and findings rows were replaced by the rerun, never duplicated."""
    dirs = Counter((r["broker_id"], r["log_dir"], r["dir_name"]) for r in store.read_rows("partition_dirs",
                                                                                          {"run_id": run_id}))
    findings = Counter((r["broker_id"], r["log_dir"], r["dir_name"]) for r in store.read_rows("findings",
                                                                                              {"run_id": run_id}))
    assert dirs and set(dirs.values()) == {1} and findings == dirs


def _journal(state_dir: Path, cluster: str, broker: int, entries: int) -> None:
    from pipelines.execute.journal import Journal

    journal = Journal(state_dir, cluster, broker)
    for n in range(entries):
        journal.write("plan-x", f"item-{n}", "item", "done")


MIRROR = ("import sys\nfrom pathlib import Path\nfrom pipelines.execute.journal import Journal, mirror_to_store\n"
          "from pipelines.tables.warehouse_store import warehouse_store\n"
          "store = warehouse_store(sys.argv[1])\n"
          "print(mirror_to_store(Journal(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])), store))\n")


@pytest.mark.second_tier  # ~106 s in CI; the commit rule's own proofs are in test_fleet_concurrent_log_store
def test_approvers_journal_mirrors_and_a_crawl_rerun_at_once_lose_no_commit(
        spark: Any, demo: DemoInBucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """N approvers (CLI processes), two executors mirroring journals and a crawl rerun (which registers a new plan)
    write the same warehouse at once: every commit is there exactly once.

    The proxy holds any delta-spark commit to the audit table until a delta-rs writer has written the same commit
    file (at most 20 s): the worst interleaving for delta-spark's check-then-write on S3. With ownership in force
    Spark never writes the plan tables, so nothing is lost.
    """
    from datetime import datetime, timezone

    from pipelines.orchestrate import run_pipeline, steps
    from pipelines.plan import approval

    config = demo.config()
    reader = demo.reader()
    demo_plan = GcPlan.from_json(demo.bucket.read(f"wh/_plans/{demo.plan_id}.json"))
    race = demo_plan.model_copy(update={"plan_id": "race-1", "created_by": "ops",
                                        "created_at": datetime.now(timezone.utc), "expires_at": None}).with_hash()
    approval.register_plan(reader, race, actor="ops", policy=config.policy)
    plan_id = race.plan_id
    approvers_config = tmp_path / "approvers.yaml"  # many approvals needed: the plan keeps taking them
    base = yaml.safe_load(demo.config_path.read_text())
    # unsigned decisions: what is raced here is the commits of the plan tables, not who signs (tests/signing)
    approvers_config.write_text(yaml.safe_dump({**base, "policy": {"approvals_required": 50},
                                                "executor": {**base.get("executor", {}), "require_signatures": False}}))
    if WITHOUT_COORDINATION:  # the plan step registering through delta-spark, as before the engines had owners
        from pipelines.tables.spark_engine import SparkTableStore

        monkeypatch.setattr(steps, "plan_store",
                            lambda cfg: SparkTableStore(spark, cfg.warehouse, allow_foreign_tables=True))
    slow = demo.proxy.hold_until_written_by_another(r"^PUT .*/wh/gc_plan_audit/_delta_log/\d+\.json", 20,
                                                    agent="aws-sdk-java|Hadoop")
    state = tmp_path / "state"
    for broker in (101, 102):
        _journal(state, config.cluster, broker, 40)

    rerun_error: list[BaseException] = []

    def rerun() -> None:
        try:
            run_pipeline(config, demo.run_id, created_by="scheduler")
        except BaseException as exc:  # reported by the assertion below
            rerun_error.append(exc)

    crawl = threading.Thread(target=rerun)
    crawl.start()
    env = demo.env()
    calls: list[tuple[str, subprocess.Popen[str]]] = []
    mirrors = [subprocess.Popen([sys.executable, "-c", MIRROR, demo.bucket.warehouse, str(state), config.cluster,
                                 str(b)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for b in (101, 102)]
    n = 0
    while crawl.is_alive() or n < 6:  # approvers keep coming for as long as the rerun runs
        running = [p for _, p in calls if p.poll() is None]
        if len(running) < 3:
            name = f"approver-{n}"
            calls.append((name, subprocess.Popen(
                [sys.executable, "-m", "pipelines.cli.main", "plans", "approve", plan_id, "--by", name, "--config",
                 str(approvers_config)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            n += 1
        time.sleep(0.2)
    crawl.join()
    outcomes = {name: (p.wait(300), *p.communicate()) for name, p in calls}
    mirrored = [(p.wait(300), *p.communicate()) for p in mirrors]
    spark_commits_to_plan_tables = demo.proxy.hits(slow)
    demo.proxy.clear()
    demo.outputs += [out + err for _, out, err in outcomes.values()]

    assert not rerun_error, rerun_error
    assert [code for code, _, _ in mirrored] == [0, 0], mirrored
    journal = reader.read_rows("gc_journal", {"plan_id": "plan-x"})
    assert sorted(Counter((r["broker_id"], r["seq"]) for r in journal).values()) == [1] * 80  # each row once

    audit = reader.read_rows("gc_plan_audit", {"plan_id": plan_id})
    by_actor = Counter((r["actor"], r["action"]) for r in audit)
    record = reader.read_rows("gc_plans", {"plan_id": plan_id})[0]
    for name, (code, _, err) in outcomes.items():
        assert code in (0, 5), (name, err)
        if code == 5:  # one error line (after the unsigned-decision warning)
            errors = [line for line in err.strip().splitlines() if not line.startswith("logdir-gc plans: warning")]
            assert len(errors) == 1, err
        action = "approve" if code == 0 else "approve_refused"
        assert by_actor[(name, action)] == 1, (name, action, by_actor)  # every decision recorded exactly once
    accepted = sorted(name for name, (code, _, _) in outcomes.items() if code == 0)
    assert sorted(a for a in record["approvals"] if a.startswith("approver-")) == accepted
    new_plans = reader.read_rows("gc_plans", {"run_id": demo.run_id})
    registered = Counter(r["plan_id"] for r in reader.read_rows("gc_plan_audit") if r["action"] == "register")
    assert new_plans and all(registered[p["plan_id"]] == 1 for p in new_plans)
    assert_replaced_once(reader, demo.run_id)
    assert spark_commits_to_plan_tables == 0 or WITHOUT_COORDINATION


def test_no_credential_in_any_output_table_or_plan_file(demo: DemoInBucket) -> None:
    """Runs last in the module: every command's output, each run's config_json and the plan files."""
    texts = list(demo.outputs)
    texts += [r["config_json"] for r in demo.reader().read_rows("crawl_runs")]
    texts += [demo.bucket.read(k).decode() for k in demo.bucket.keys("wh/_plans/")]
    assert texts and all(SECRET_KEY not in t for t in texts)
