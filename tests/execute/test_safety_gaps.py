"""Safety rules a mutation audit found unguarded: each test fails if its one check is removed from the code.

Every test names the check it guards. Where a rule is defence in depth (another layer would also stop the action),
the test pins the layer itself, so removing it is noticed even while the other layer still holds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from exec_world import (
    GARBAGE,
    LIVE,
    Topic,
    approve,
    build_world,
    item_for,
    make_plan,
    topics_of,
    tree_digest,
    with_metadata,
)
from logdir_factory import PartitionSpec, uuid_for

from pipelines.config.models import MetadataConfig
from pipelines.errors import ExecutorBusy, PlanError, PreconditionFailed
from pipelines.execute import apply as apply_module
from pipelines.execute.apply import apply_plan
from pipelines.execute.confine import ConfinementError, confined_child
from pipelines.execute.controller_check import load_controller_check
from pipelines.execute.purge import purge
from pipelines.execute.restore import restore
from pipelines.plan import approval

_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("LOCKED", flush=True)
sys.stdin.read()
"""


class _Holder:
    """Another process holding a POSIX record lock (the JVM's kind, see test_locks.py) on ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> _Holder:
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(self.path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "LOCKED"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _actions(report) -> dict[str, str]:
    return {i.item_id: i.action for i in report.items}


def _reasons(report) -> dict[str, str]:
    return {i.item_id: i.reason for i in report.items}


# --- plan authority -------------------------------------------------------------------------------------------


def test_stored_plan_swapped_for_another_self_consistent_plan_is_refused(tmp_path: Path) -> None:
    """``PlanRecord.plan`` re-checks the stored JSON against the approved ``content_hash`` column, not only the
    hash embedded in the JSON: a writer who swaps in another, correctly self-hashed plan gets nothing applied."""
    w = build_world(tmp_path)
    live = item_for(w.log_dir, LIVE[0], item_id="live-orders-0")
    forged = make_plan(w.log_dir, (), items=(*w.plan.items, live), plan_id="plan-1")
    assert forged.content_hash != w.plan.content_hash
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"plan_json": forged.to_json()})
    before = tree_digest(w.log_dir)
    with pytest.raises(PlanError, match="does not match its recorded content_hash"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert tree_digest(w.log_dir) == before


def test_items_of_another_broker_are_never_applied_here(tmp_path: Path) -> None:
    """Brokers share log dir paths (``/var/lib/kafka``); an item planned for broker 2 must not be applied by
    broker 1's executor even when a directory of that name and content exists here."""
    w = build_world(tmp_path, approve_plan=False)
    other = item_for(w.log_dir, LIVE[0], broker=2, item_id="broker2-orders-0").model_copy(
        update={"directory_id": None})
    approve(w.store, make_plan(w.log_dir, (), items=(*w.plan.items, other), plan_id="mixed"), w.config)
    report = apply_plan(w.config, w.store, "mixed", 1, execute=True)
    assert "broker2-orders-0" not in _actions(report)
    assert report.count("quarantined") == len(w.plan.items)
    assert (w.log_dir / LIVE[0].dir_name).is_dir()


def test_plan_without_cluster_id_cannot_be_bound_to_a_host(tmp_path: Path) -> None:
    # unsigned: signed, such a plan cannot even be approved (tests/signing)
    w = build_world(tmp_path, approve_plan=False, signed=False)
    approve(w.store, make_plan(w.log_dir, GARBAGE, plan_id="unbound", cluster_id=None), w.config)
    with pytest.raises(PreconditionFailed, match="records no cluster_id"):
        apply_plan(w.config, w.store, "unbound", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


# --- confinement layers ---------------------------------------------------------------------------------------


def test_a_symlinked_child_is_refused_as_a_symlink(tmp_path: Path) -> None:
    """The ``lstat`` layer itself, not only the realpath layer behind it (message ends with 'is a symlink')."""
    log_dir = tmp_path / "logs"
    (log_dir / "real-0").mkdir(parents=True)
    (log_dir / "alias-0").symlink_to(log_dir / "real-0", target_is_directory=True)
    with pytest.raises(ConfinementError, match=r"alias-0 is a symlink$"):
        confined_child(str(log_dir), "alias-0")
    assert confined_child(str(log_dir), "real-0") == log_dir / "real-0"


def test_a_log_dir_with_dot_dot_is_refused_by_confinement(tmp_path: Path) -> None:
    """``confined_child`` on its own refuses a non-normalised log dir (apply's registration check is another
    layer)."""
    (tmp_path / "logs" / "gone-0").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    with pytest.raises(ConfinementError, match="not a normalised path"):
        confined_child(f"{tmp_path}/other/../logs", "gone-0")


def test_a_dir_containing_a_symlink_is_not_moved(tmp_path: Path) -> None:
    w = build_world(tmp_path, approve_plan=False)
    target = w.garbage[w.plan.items[0].item_id]
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"not kafka's")
    (target / "extra.log").symlink_to(outside)
    plan = make_plan(w.log_dir, GARBAGE, plan_id="plan-links")  # fingerprints taken with the link present
    approve(w.store, plan, w.config)
    report = apply_plan(w.config, w.store, "plan-links", 1, execute=True)
    first = plan.items[0].item_id
    assert _actions(report)[first] == "skipped" and "contains symlinks" in _reasons(report)[first]
    assert (target / "extra.log").is_symlink() and report.count("quarantined") == len(plan.items) - 1


# --- controller assignment re-check ----------------------------------------------------------------------------


def test_a_replica_being_added_to_this_broker_is_never_touched(tmp_path: Path) -> None:
    """``adding_replicas`` counts as assigned (Kafka also lists them in ``replicas``; this pins the defensive
    check on its own)."""
    w = build_world(tmp_path, approve_plan=False)
    live = item_for(w.log_dir, LIVE[0], item_id="live-orders-0")
    approve(w.store, make_plan(w.log_dir, (), items=(*w.plan.items, live), plan_id="adding"), w.config)
    config = with_metadata(w, [*topics_of(), Topic("orders", str(LIVE[0].resolved_topic_id), (0, 1), (2, 3), (1,),
                                                    adding_in_replicas=False)])
    report = apply_plan(config, w.store, "adding", 1, execute=True)
    assert _actions(report)["live-orders-0"] == "skipped" and "live replica" in _reasons(report)["live-orders-0"]
    assert (w.log_dir / LIVE[0].dir_name).is_dir()


def test_a_delete_dir_without_topic_id_is_matched_by_topic_name(tmp_path: Path) -> None:
    """No readable ``partition.metadata`` in an old ``-delete`` dir: the controller's assignment is looked up by the
    topic NAME in the dir's name."""
    legacy = PartitionSpec("legacy", 0, kind="delete", partition_metadata=False, log_content=b"l" * 100)
    w = build_world(tmp_path, garbage=(*GARBAGE, legacy), approve_plan=False)
    items = tuple(item_for(w.log_dir, s, topic_id=None if s is legacy else "auto") for s in (*GARBAGE, legacy))
    approve(w.store, make_plan(w.log_dir, (), items=items, plan_id="by-name"), w.config)
    config = with_metadata(w, [*topics_of(), Topic("legacy", str(uuid_for("legacy-now")), (0,), (1, 2))])
    report = apply_plan(config, w.store, "by-name", 1, execute=True)
    legacy_id = legacy.dir_name.replace(".", "_")
    assert _actions(report)[legacy_id] == "skipped" and "live replica" in _reasons(report)[legacy_id]
    assert (w.log_dir / legacy.dir_name).is_dir()


def test_a_live_dir_without_topic_id_is_never_touched(tmp_path: Path) -> None:
    """A live (or ``-stray``/``-future``) dir with no readable topic id is never planned; a plan that lists one
    anyway (its ``topic_id`` claim matching the disk's "none") is refused by the executor."""
    legacy = PartitionSpec("legacy", 0, partition_metadata=False, log_content=b"l" * 100)
    w = build_world(tmp_path, garbage=(*GARBAGE, legacy), approve_plan=False)
    items = tuple(item_for(w.log_dir, s, topic_id=None if s is legacy else "auto") for s in (*GARBAGE, legacy))
    approve(w.store, make_plan(w.log_dir, (), items=items, plan_id="no-id"), w.config)
    report = apply_plan(w.config, w.store, "no-id", 1, execute=True)
    outcome = next(i for i in report.items if i.item_id == "legacy-0")
    assert outcome.action == "skipped" and outcome.rule == "never_planned" and (w.log_dir / "legacy-0").is_dir()


@pytest.mark.parametrize("kind", ["topics_describe", "admin"])
def test_metadata_sources_the_executor_cannot_re_read_refuse_the_run(tmp_path: Path, kind: str) -> None:
    source = {"source": str(tmp_path / "topics.json")} if kind == "topics_describe" else {
        "bootstrap_servers": "127.0.0.1:9"}
    metadata = {"kind": kind, **source}
    with pytest.raises(PreconditionFailed, match="cannot be re-read by the executor"):
        load_controller_check(MetadataConfig.model_validate(metadata))
    w = build_world(tmp_path, metadata=metadata)
    with pytest.raises(PreconditionFailed, match="cannot be re-read by the executor"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


LATER = datetime.now(timezone.utc) + timedelta(days=8)  # past the default 7-day purge retention

# --- locks of restore and purge -------------------------------------------------------------------------------


def _applied(tmp_path: Path):
    w = build_world(tmp_path)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == len(w.garbage)
    return w


def _quarantined(w) -> list[Path]:
    return sorted((w.root / ".logdir-gc-quarantine").glob("*/*/*/manifest.json"))


def test_restore_refuses_while_the_broker_holds_its_log_dir_lock(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    with _Holder(w.log_dir / ".lock"), pytest.raises(ExecutorBusy, match="broker is running"):
        restore(w.config, w.store, "plan-1", 1, execute=True)
    assert not any(p.exists() for p in w.garbage.values()) and len(_quarantined(w)) == len(w.garbage)


def test_restore_refuses_while_another_executor_runs(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    with _Holder(w.state_dir / "executor-broker-1.lock"), pytest.raises(ExecutorBusy, match="already running"):
        restore(w.config, w.store, "plan-1", 1, execute=True)
    assert not any(p.exists() for p in w.garbage.values()) and len(_quarantined(w)) == len(w.garbage)


def test_purge_refuses_while_another_executor_runs(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    with _Holder(w.state_dir / "executor-broker-1.lock"), pytest.raises(ExecutorBusy, match="already running"):
        purge(w.config, 1, execute=True, now=LATER)
    assert len(_quarantined(w)) == len(w.garbage)


# --- crash recovery -------------------------------------------------------------------------------------------


class _Crash(BaseException):
    """Stands in for a SIGKILL between ``rename.intent`` and the rename (test_crash_injection.py kills for real;
    here the process must survive to build the odd destination below)."""


def test_recovery_does_not_trust_a_destination_that_differs_from_its_manifest(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Journal ends in ``rename.intent``, the rename never happened, and something else sits at the destination:
    the rerun must not journal the item as moved (its data is still in the log dir)."""
    w = build_world(tmp_path, garbage=GARBAGE[:1])
    (item_id, src), = w.garbage.items()

    def crash(a: object, b: object) -> None:
        raise _Crash

    monkeypatch.setattr(apply_module, "rename_noreplace", lambda *args: crash(*args[:2]))
    with pytest.raises(_Crash):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    monkeypatch.undo()
    dst = w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1" / item_id / src.name
    shutil.copytree(src, dst)
    with open(dst / "00000000000000000000.log", "ab") as f:
        f.write(b"not what was verified")
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert _actions(report) == {item_id: "failed"} and "does not match its manifest" in _reasons(report)[item_id]
    assert src.is_dir()
    assert approval.get_plan(w.store, "plan-1").status == "failed"



def test_an_occupied_quarantine_destination_fails_the_item_and_keeps_the_dir(tmp_path: Path) -> None:
    """Without a journalled ``rename.intent`` an existing destination is not ours: never rename onto it."""
    w = build_world(tmp_path)
    item = w.plan.items[0]
    dst = w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1" / item.item_id / item.dir_name
    dst.mkdir(parents=True)
    (dst / "someone-elses.txt").write_bytes(b"keep me")
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert _actions(report)[item.item_id] == "failed" and "already exists" in _reasons(report)[item.item_id]
    assert w.garbage[item.item_id].is_dir() and (dst / "someone-elses.txt").read_bytes() == b"keep me"
    assert report.count("quarantined") == len(w.plan.items) - 1


# --- restore refusals -----------------------------------------------------------------------------------------


def _quarantined_dir(w, item_id: str) -> Path:
    return w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1" / item_id / w.garbage[item_id].name


def test_restore_never_overwrites_a_reoccupied_original_path(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    item_id, original = next(iter(w.garbage.items()))
    original.mkdir()
    (original / "new-data.log").write_bytes(b"the broker recreated this partition")
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "is taken" in report.skipped[item_id] and item_id not in report.restored
    assert (original / "new-data.log").read_bytes() == b"the broker recreated this partition"
    assert _quarantined_dir(w, item_id).is_dir() and len(report.restored) == len(w.garbage) - 1


def test_restore_refuses_a_quarantined_copy_that_no_longer_matches_its_manifest(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    item_id, original = next(iter(w.garbage.items()))
    with open(_quarantined_dir(w, item_id) / "00000000000000000000.log", "ab") as f:
        f.write(b"changed in quarantine")
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "no longer matches its manifest" in report.failed[item_id] and not original.exists()
    assert _quarantined_dir(w, item_id).is_dir() and len(report.restored) == len(w.garbage) - 1


def test_purge_leaves_items_another_broker_quarantined(tmp_path: Path) -> None:
    """A manifest in this log dir's quarantine area that names another broker (log dirs moved between brokers on
    one host) is not this broker's to purge."""
    w = _applied(tmp_path)
    manifest = _quarantined(w)[0]
    manifest.write_text(manifest.read_text().replace('"broker_id": 1,', '"broker_id": 2,', 1))
    report = purge(w.config, 1, execute=True, now=LATER)
    assert "broker 2" in report.failed[f"plan-1/{manifest.parent.name}"] and len(report.items) == len(w.garbage) - 1
    assert _quarantined(w) == [manifest] and any(manifest.parent.glob("*-*"))
