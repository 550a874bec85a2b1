"""Apply, dry-run, purge and restore end to end on a synthetic broker host (real delta-rs warehouse)."""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from exec_world import LIVE, build_world, tree_digest
from logdir_factory import PartitionSpec

from pipelines.execute.apply import apply_plan
from pipelines.execute.purge import Pacer, purge
from pipelines.execute.restore import restore
from pipelines.plan import approval


def test_dry_run_changes_nothing_then_apply_restore_bit_identical(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    before = tree_digest(w.log_dir)
    report = apply_plan(w.config, w.store, "plan-1", 1)
    assert [i.action for i in report.items] == ["would_quarantine"] * 3
    assert tree_digest(w.log_dir) == before and not (w.root / ".logdir-gc-quarantine").exists()
    assert approval.get_plan(w.store, "plan-1").status == "approved"

    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert [i.action for i in report.items] == ["quarantined"] * 3, report
    assert report.status == "applied" and approval.get_plan(w.store, "plan-1").status == "applied"
    assert not any(p.exists() for p in w.garbage.values())
    assert sorted(p.name for p in w.log_dir.iterdir() if p.is_dir()) == ["orders-0", "orders-1"]
    q = w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1"
    assert len(list(q.glob("*/manifest.json"))) == 3
    assert {r["step"] for r in w.store.read_rows("gc_journal")} >= {"run", "item", "manifest", "rename"}

    again = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert [i.action for i in again.items] == ["already_done"] * 3

    quarantined = tree_digest(w.root)
    dry = restore(w.config, w.store, "plan-1", 1)  # like apply_plan and purge, a dry run unless told to execute
    assert not dry.executed and sorted(dry.restored) == sorted(w.garbage) and tree_digest(w.root) == quarantined
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert sorted(report.restored) == sorted(w.garbage)
    assert tree_digest(w.log_dir) == before
    assert not list(q.glob("*/manifest.json"))


@pytest.fixture
def quiet_dir(tmp_path: Path):
    """A directory on tmpfs when available (little unrelated write traffic disturbs statvfs), else tmp_path."""
    base = "/dev/shm"
    if os.path.isdir(base) and os.access(base, os.W_OK):
        d = Path(tempfile.mkdtemp(prefix="klgc-purge-", dir=base))
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path


def test_purge_after_retention_reclaims_what_the_plan_expected(quiet_dir: Path) -> None:
    big = tuple(PartitionSpec(f"big{i}", 0, segments=(0, 1), log_content=os.urandom(1 << 20)) for i in range(4))
    w = build_world(quiet_dir, garbage=big, live=LIVE)
    apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    live_before = tree_digest(w.log_dir)

    kept = purge(w.config, 1, execute=True)  # retention (7 days) not reached: nothing goes
    assert kept.items == [] and kept.kept == 4

    later = datetime.now(timezone.utc) + timedelta(hours=1, seconds=1)  # past the 1 h retention floor
    listed = purge(w.config, 1, older_than_ms=3_600_000, now=later)  # dry run lists
    assert len(listed.items) == 4 and not listed.measured_bytes
    report = purge(w.config, 1, older_than_ms=3_600_000, execute=True, now=later, store=w.store)
    expected = sum(i.bytes for i in w.plan.items)
    assert report.expected_bytes == expected
    files = sum(i.files for i in report.items)
    (measured,) = report.measured_bytes.values()
    assert abs(measured - expected) <= files * 4096 + (1 << 20), (measured, expected)
    assert not list((w.root / ".logdir-gc-quarantine").glob("*/*/*/manifest.json"))
    assert tree_digest(w.log_dir) == live_before
    assert approval.get_plan(w.store, "plan-1").status == "purged"


def test_pacer_sleeps_to_hold_the_rate() -> None:
    slept: list[float] = []
    now = [0.0]
    pacer = Pacer(1000, None, sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)),
                  clock=lambda: now[0])
    for _ in range(4):
        pacer.account(500)
    assert sum(slept) == pytest.approx(2.0)
    unpaced = Pacer(None, None, sleep=lambda s: slept.append(-1), clock=lambda: 0.0)
    unpaced.account(10**9)
    assert -1 not in slept



def test_an_item_restored_by_hand_is_not_re_applied(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    first = w.plan.items[0].item_id
    assert restore(w.config, w.store, "plan-1", 1, item_id=first, execute=True).restored == [first]
    assert w.garbage[first].exists()
    again = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    outcome = {i.item_id: (i.action, i.reason) for i in again.items}
    assert outcome[first] == ("skipped", "restored or purged earlier; never re-applied")
    assert w.garbage[first].exists()
