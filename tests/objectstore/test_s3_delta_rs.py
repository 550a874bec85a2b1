"""The delta-rs side of a warehouse in a bucket, against moto's standalone S3 server on 127.0.0.1 (no JVM).

moto is used for every test here because it enforces conditional writes (``If-None-Match``), which delta-rs
commits rely on; the fault tests put :class:`~tests.objectstore.s3_servers.FaultProxy` in front of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from pipelines.config.models import PolicyConfig
from pipelines.errors import StorageUnavailable
from pipelines.plan import approval
from pipelines.tables.base import RetryPolicy
from pipelines.tables.warehouse_store import warehouse_store
from tests.objectstore.conftest import Bucket
from tests.objectstore.s3_servers import SECRET_KEY, fault_proxy, free_port
from tests.plan.plan_factory import plan
from tests.signing.ssh_keys import Keyring

FAST = RetryPolicy(attempts=3, base_delay_s=0.05, max_delay_s=0.2)


def cli(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_moto_refuses_a_conditional_put_over_an_existing_key(bucket: Bucket) -> None:
    """What the concurrency tests stand on: the server enforces ``If-None-Match: *``."""
    s3 = bucket.server.client()
    s3.put_object(Bucket=bucket.name, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(Exception, match="PreconditionFailed"):
        s3.put_object(Bucket=bucket.name, Key="k", Body=b"second", IfNoneMatch="*")
    assert bucket.read("k") == b"first"


def test_plans_workflow_in_a_bucket_with_only_the_aws_variables(bucket: Bucket, tmp_path: Path) -> None:
    env = bucket.env()
    wh = bucket.warehouse
    listed = cli("plans", "list", "--warehouse", wh, env=env)
    assert listed.returncode == 0 and "no plans" in listed.stdout.lower(), listed.stderr
    plan_file = tmp_path / "p1.json"
    p1 = plan("p1", author="alice", created_at=datetime.now(timezone.utc))
    plan_file.write_text(p1.model_copy(update={"cluster_id": "MkU3OEVBNTcwNTJENDM2Qg"}).with_hash().to_json())
    keys = Keyring(tmp_path / "trust")  # approvals are signed and judged by the reviewers' trust file, as in production
    alice, bob = keys.key("alice"), keys.key("bob")
    keys.allow("alice", "alice")
    keys.allow("bob", "bob")
    config = tmp_path / "reviewers.yaml"
    config.write_text(yaml.safe_dump({"cluster": p1.cluster, "warehouse": wh,
                                      "signing": {"allowed_signers": str(keys.allowed_signers)}}))
    c = ("--config", str(config))
    registered = cli("plans", "register", str(plan_file), "--key", str(alice), *c, env=env)
    assert registered.returncode == 0, registered.stderr
    approved = cli("plans", "approve", "p1", "--by", "bob", "--key", str(bob), *c, "--json", env=env)
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["status"] == "approved"
    assert any(k.startswith("wh/gc_plan_audit/_delta_log/") for k in bucket.keys("wh/"))
    shown = cli("plans", "show", "p1", *c, env=env)
    assert shown.returncode == 0 and "bob" in shown.stdout


def test_concurrent_delta_rs_writers_from_processes_lose_no_commit(aws: Bucket) -> None:
    store = warehouse_store(aws.warehouse)
    approval.register_plan(store, plan("p1", author="alice"), actor="alice", policy=PolicyConfig())
    writers = 6
    script = ("import sys; from pipelines.tables.warehouse_store import warehouse_store\n"
              "from pipelines.tables.base import RetryPolicy\n"
              "s = warehouse_store(sys.argv[1], retry=RetryPolicy(attempts=60, base_delay_s=0.02, max_delay_s=0.5))\n"
              "s.append('gc_journal', [{'cluster': 'c1', 'broker_id': int(sys.argv[2]), 'plan_id': 'p1',"
              " 'item_id': f'i{n}', 'seq': n, 'step': 'item', 'state': 'done'} for n in range(3)])\n")
    store.ensure_tables(["gc_journal"])
    procs = [subprocess.Popen([sys.executable, "-c", script, aws.warehouse, str(b)]) for b in range(writers)]
    assert [p.wait(120) for p in procs] == [0] * writers
    rows = store.read_rows("gc_journal")
    assert sorted((r["broker_id"], r["seq"]) for r in rows) == [(b, n) for b in range(writers) for n in range(3)]
    assert store.version("gc_journal") == writers  # one commit each, none overwritten


def test_a_throttling_store_is_retried_with_backoff(aws: Bucket) -> None:
    store = warehouse_store(aws.warehouse)
    approval.register_plan(store, plan("p1", author="alice"), actor="alice", policy=PolicyConfig())
    with fault_proxy(aws.server.port) as proxy:
        throttled = warehouse_store(aws.warehouse, {"AWS_ENDPOINT_URL": proxy.endpoint, "max_retries": "0"},
                                    storage_retry=FAST)
        rule = proxy.throttle(r"/gc_plans/", limit=2)
        assert approval.get_plan(throttled, "p1").status == "proposed"
        assert proxy.hits(rule) == 2  # two whole-operation retries absorbed the SlowDown answers
        proxy.throttle(r"/gc_plans/")
        with pytest.raises(StorageUnavailable, match=r"throttling .* after 3 attempts.*SlowDown|Service Unavailable"):
            approval.get_plan(throttled, "p1")


def test_an_unreachable_store_is_one_line_and_exit_code_10_without_the_secret(bucket: Bucket) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    result = cli("plans", "list", "--warehouse", bucket.warehouse, env=bucket.env(dead))
    assert result.returncode == 10, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unreachable" in lines[0] and bucket.warehouse in lines[0], lines
    assert SECRET_KEY not in result.stderr + result.stdout


def test_parallel_threads_appending_through_one_store_all_land(aws: Bucket) -> None:
    store = warehouse_store(aws.warehouse, retry=RetryPolicy(attempts=60, base_delay_s=0.02, max_delay_s=0.5))
    store.ensure_tables(["gc_plan_audit"])
    rows = [{"plan_id": "p", "actor": f"a{i}", "action": "approve"} for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda r: store.append("gc_plan_audit", [r]), rows))
    assert sorted(r["actor"] for r in store.read_rows("gc_plan_audit")) == sorted(r["actor"] for r in rows)
