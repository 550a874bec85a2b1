"""Plan state tells the truth across brokers: every broker's apply, restore and purge has its own audit row, even
when brokers apply at once, and the plan's status is what all of them add up to."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml
from exec_world import two_broker_world

from pipelines.execute.apply import apply_plan
from pipelines.execute.purge import purge
from pipelines.execute.restore import restore
from pipelines.plan import approval, broker_status

LATER = datetime.now(timezone.utc) + timedelta(days=8)


def _status(w) -> str:
    return approval.get_plan(w.store, "plan-1").status


def _broker_states(w) -> dict[int, str]:
    return broker_status.broker_states(approval.audit_rows(w.store, "plan-1"))


def test_restoring_one_broker_does_not_mark_the_plan_restored(tmp_path: Path) -> None:
    w = two_broker_world(tmp_path)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).status == "applied"
    assert _status(w) == "partially_applied"  # broker 2 has not applied yet
    apply_plan(w.config, w.store, "plan-1", 2, execute=True)
    assert _status(w) == "applied" and _broker_states(w) == {1: "applied", 2: "applied"}

    restore(w.config, w.store, "plan-1", 1, execute=True)
    assert _status(w) == "partially_restored" and _broker_states(w) == {1: "restored", 2: "applied"}
    b2 = [p for i, p in w.garbage.items() if i.startswith("b2-")]
    assert not any(p.exists() for p in b2)  # broker 2's items are still in quarantine, and the plan says so

    restore(w.config, w.store, "plan-1", 2, execute=True)
    assert _status(w) == "restored" and all(p.is_dir() for p in w.garbage.values())


def test_purge_is_recorded_per_broker(tmp_path: Path) -> None:
    w = two_broker_world(tmp_path)
    for b in (1, 2):
        apply_plan(w.config, w.store, "plan-1", b, execute=True)
    purge(w.config, 1, execute=True, now=LATER, store=w.store)
    assert _broker_states(w) == {1: "purged", 2: "applied"} and _status(w) == "applied"
    restore(w.config, w.store, "plan-1", 2, execute=True)
    assert _status(w) == "purged"  # nothing left in quarantine anywhere, and not everything came back


def test_concurrent_applies_on_two_brokers_each_leave_their_rows(tmp_path: Path) -> None:
    w = two_broker_world(tmp_path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    procs = [subprocess.Popen([sys.executable, "-m", "pipelines.cli.main", "apply", "plan-1", "--broker", str(b),
                               "--execute", "--config", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for b in (1, 2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    rows = [r for r in approval.audit_rows(w.store, "plan-1") if r["action"] == broker_status.BROKER_STATE]
    assert sorted((r["actor"], r["to_status"]) for r in rows) == [
        ("executor@broker-1", "applied"), ("executor@broker-1", "applying"),
        ("executor@broker-2", "applied"), ("executor@broker-2", "applying")]
    assert _status(w) == "applied"
    assert not any(p.exists() for p in w.garbage.values())


def test_aggregate_of_broker_states() -> None:
    agg = broker_status.aggregate
    assert agg({}, {1, 2}) is None
    assert agg({1: "applying", 2: "applied"}, {1, 2}) == "applying"
    assert agg({1: "applied"}, {1, 2}) == "partially_applied"
    assert agg({1: "applied", 2: "applied"}, {1, 2}) == "applied"
    assert agg({1: "failed"}, {1, 2}) == "failed"
    assert agg({1: "restored", 2: "applied"}, {1, 2}) == "partially_restored"
    assert agg({1: "restored"}, {1, 2}) == "restored"  # broker 2 never applied: nothing of it to restore
    assert agg({1: "restored", 2: "purged"}, {1, 2}) == "purged"
    assert agg({1: "purged", 2: "applied"}, {1, 2}) == "applied"
