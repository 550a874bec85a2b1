"""The remote executor on a ``file://`` tier: dry run, apply, restore, purge, and every input that lies."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from remote_world import (
    GONE_ID,
    LIVE_ID,
    OWNED,
    SEGMENTS,
    RemoteWorld,
    Topic,
    build_remote_world,
    config_of,
    content,
    force_approve,
    key_of,
    make_plan,
    write_metadata_log,
)

from pipelines.errors import ExecutorBusy, PlanError, PolicyViolation
from pipelines.execute import faults
from pipelines.execute_remote.apply import apply_remote
from pipelines.execute_remote.restore_purge import purge_remote, restore_remote
from pipelines.execute_remote.target import RemoteTarget
from pipelines.execute_remote.tier_lease import LEASE_NAME
from pipelines.plan import approval
from pipelines.plan.model import GcPlan, RemoteKey
from pipelines.remote_tier.events import SegmentState
from pipelines.remote_tier.metadata_writer import write_metadata_replica


def _apply(w: RemoteWorld, **kw):
    return apply_remote(w.config, w.store, w.plan.plan_id, tools=w.tools, **kw)


def _actions(report) -> dict[str, str]:
    return {i.item_id: i.action for i in report.items}


def _rules(report) -> set[str]:
    return {i.rule for i in report.items if i.action in ("skipped", "failed")}


def test_dry_run_changes_nothing_then_apply_restore_are_byte_identical(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    before = w.tier.objects()
    dry = _apply(w)
    assert set(_actions(dry).values()) == {"would_quarantine"} and w.tier.objects() == before
    assert not w.state_dir.exists() or not any(w.state_dir.glob("journal-remote*"))
    done = _apply(w, execute=True)
    assert set(_actions(done).values()) == {"quarantined"} and done.status == "applied"
    after = w.tier.objects()
    for key, data in w.originals.items():
        assert key not in after and after[w.quarantine(key)] == data
    assert {k: v for k, v in after.items() if k.startswith("clusterB/")} == \
        {k: v for k, v in before.items() if k.startswith("clusterB/")}
    assert set(_actions(_apply(w, execute=True)).values()) == {"already_done"}  # nothing twice
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert len(r.restored) == 2 and not r.failed and r.status == "restored"
    assert w.tier.objects() == before
    assert approval.get_plan(w.store, w.plan.plan_id).status == "restored"


def test_a_key_changed_since_the_crawl_is_skipped(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    victim = sorted(w.originals)[0]
    w.tier.put(victim, b"z" * len(w.originals[victim]))  # same size, new bytes, a concurrent upload
    report = _apply(w, execute=True)
    assert _rules(report) == {"changed"} and report.count("quarantined") == 1
    assert w.tier.read(victim) == b"z" * len(w.originals[victim])
    assert w.tier.read(w.quarantine(victim)) is None


def test_a_new_key_of_the_segment_is_a_concurrent_upload_and_skips_it(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    extra = key_of("gone", GONE_ID, 0, SEGMENTS[0], 0, "log") + ".uploading"
    w.tier.put(extra, b"new")
    report = _apply(w, execute=True)
    assert _rules(report) == {"changed"} and report.count("quarantined") == 1
    assert all(w.tier.read(k) == v for k, v in w.originals.items() if str(SEGMENTS[0]) in k)


def _tampered(w: RemoteWorld, key: str) -> GcPlan:
    """The plan with ``key`` (another cluster's object) added to its first item, re-hashed."""
    item = w.plan.items[0]
    info = w.tools.tier.head(key)
    assert info is not None
    keys = (*(item.keys or ()), RemoteKey(key=key, size=info.size, etag=info.etag,
                                           last_modified_ms=info.last_modified_ms))
    forged = item.model_copy(update={"keys": keys})
    return GcPlan.model_validate({**w.plan.model_dump(by_alias=True), "content_hash": "",
                                  "items": (forged, *w.plan.items[1:])}).with_hash()


def test_a_key_outside_owned_prefix_is_refused_by_hash_and_by_the_hosts_owned_prefix(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    theirs = key_of("gone", GONE_ID, 0, SEGMENTS[0], 0, "log", prefix="clusterB/")
    before = w.tier.read(theirs)
    forged = _tampered(w, theirs)
    plan_file = tmp_path / "forged.json"
    plan_file.write_text(forged.to_json())
    with pytest.raises(PlanError, match="does not hash to the approved content"):
        _apply(w, execute=True, plan_file=plan_file)
    # signed by an approver key and registered: the executor's own owned_prefix still refuses the item
    w2 = build_remote_world(tmp_path / "signed", approve_plan=False)
    forged2 = _tampered(w2, key_of("gone", GONE_ID, 0, SEGMENTS[0], 0, "log", prefix="clusterB/"))
    force_approve(w2.store, forged2, w2.config)
    report = apply_remote(w2.config, w2.store, forged2.plan_id, execute=True, tools=w2.tools)
    skipped = [i for i in report.items if i.action == "skipped"]
    assert [i.rule for i in skipped] == ["owned_prefix"] and report.count("quarantined") == 1
    assert w.tier.read(theirs) == before
    assert w2.tier.read(key_of("gone", GONE_ID, 0, SEGMENTS[0], 0, "log", prefix="clusterB/")) is not None


def test_the_hosts_owned_prefix_decides_not_the_planners(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    narrower = replace(w.tools, target=replace(w.tools.target, owned_prefix="clusterA/other/"))
    report = apply_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=narrower)
    assert _rules(report) == {"owned_prefix"} and report.count("quarantined") == 0
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


def test_a_copy_that_does_not_verify_keeps_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = build_remote_world(tmp_path)
    real = w.tools.tier.copy

    def damaging(src: str, dst: str) -> None:
        real(src, dst)
        if src.endswith(".log"):
            w.tier.put(dst, b"\0" + content(src)[1:], age_days=None)  # same size, one byte differs

    monkeypatch.setattr(w.tools.tier, "copy", damaging)
    report = _apply(w, execute=True)
    assert _rules(report) == {"copy_unverified"} and report.count("failed") == 2
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


class Crash(BaseException):
    """The executor killed at a fault point (nothing after it runs; only the fsynced journal survives)."""


def _crash_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    faults._seen.clear()
    monkeypatch.setenv(faults.ENV_POINT, point)

    def kill(pid: int, sig: int) -> None:
        raise Crash(point)

    monkeypatch.setattr(faults.os, "kill", kill)


POINTS = ["run.intent:1", "item.intent:2", "copy.intent:3", "copy.performed:2", "copy.done:3", "delete.intent:1",
          "delete.performed:1", "delete.performed:2", "delete.done:3", "item.done:1", "delete.performed:5"]


@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_any_step_is_recovered_from_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           point: str) -> None:
    w = build_remote_world(tmp_path)
    _crash_at(monkeypatch, point)
    with pytest.raises(Crash):
        _apply(w, execute=True)
    for key, data in w.originals.items():  # never an original gone without its verified copy
        if w.tier.read(key) is None:
            assert w.tier.read(w.quarantine(key)) == data
    monkeypatch.delenv(faults.ENV_POINT)
    report = _apply(w, execute=True)
    assert set(_actions(report).values()) <= {"quarantined", "already_done"}, report.items
    after = w.tier.objects()
    for key, data in w.originals.items():
        assert key not in after and after[w.quarantine(key)] == data
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert not r.failed and all(w.tier.read(k) == v for k, v in w.originals.items())


def _applied_then_restore_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> RemoteWorld:
    w = build_remote_world(tmp_path)
    _apply(w, execute=True)
    _crash_at(monkeypatch, point)
    with pytest.raises(Crash):
        restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    monkeypatch.delenv(faults.ENV_POINT)
    return w


def test_a_crash_mid_restore_is_recovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = _applied_then_restore_killed(tmp_path, monkeypatch, "restore_copy.performed:2")
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert not r.failed and not r.skipped
    assert {k: v for k, v in w.tier.objects().items() if k.startswith(OWNED)} == w.originals


def test_a_foreign_object_written_where_an_interrupted_restore_copied_back_is_never_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lie: the journal says a copy back began (intent, no done) and an object is at the key; it is not ours."""
    w = _applied_then_restore_killed(tmp_path, monkeypatch, "restore_copy.performed:1")
    (back,) = [k for k in w.originals if k in w.tier.objects()]
    w.tier.put(back, b"foreign")
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert len(r.failed) == 1 and "[occupied]" in next(iter(r.failed.values()))
    assert w.tier.read(back) == b"foreign" and w.tier.read(w.quarantine(back)) == w.originals[back]


def test_restore_never_replaces_an_object_that_took_the_name_again(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    _apply(w, execute=True)
    taken = sorted(w.originals)[0]
    w.tier.put(taken, b"newer")
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert len(r.failed) == 1 and "[occupied]" in next(iter(r.failed.values()))
    assert w.tier.read(taken) == b"newer" and w.tier.read(w.quarantine(taken)) == w.originals[taken]


def test_restore_and_purge_refuse_a_quarantined_copy_that_changed(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path, policy=None)
    _apply(w, execute=True)
    changed = sorted(w.originals)[0]
    w.tier.put(w.quarantine(changed), b"y" * 10, age_days=None)
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert len(r.failed) == 1 and "[copy_changed]" in next(iter(r.failed.values()))
    p = purge_remote(w.config, older_than_ms=w.config.executor.purge_retention_floor_ms, execute=True,
                     tools=w.tools, now=datetime.now(timezone.utc) + timedelta(days=30))
    assert len(p.failed) == 1 and w.tier.read(w.quarantine(changed)) == b"y" * 10


def test_purge_only_after_the_retention_floor(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    _apply(w, execute=True)
    floor = w.config.executor.purge_retention_floor_ms
    with pytest.raises(PolicyViolation, match=r"\[purge_retention_floor\]"):
        purge_remote(w.config, older_than_ms=floor - 1, execute=True, tools=w.tools)
    early = purge_remote(w.config, older_than_ms=floor, execute=True, tools=w.tools)
    assert early.items == [] and early.kept == 2
    assert all(w.tier.read(w.quarantine(k)) == v for k, v in w.originals.items())
    later = datetime.now(timezone.utc) + timedelta(milliseconds=floor + 60_000)
    done = purge_remote(w.config, older_than_ms=floor, execute=True, tools=w.tools, now=later, store=w.store)
    assert len(done.items) == 2 and done.expected_bytes == sum(len(v) for v in w.originals.values())
    assert not [k for k in w.tier.objects() if not k.startswith("clusterB/")]
    assert approval.get_plan(w.store, w.plan.plan_id).status == "purged"


def test_a_topic_id_live_again_is_never_touched(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    live = config_of(tmp_path / "live", gone_removed=False)
    config = w.config.model_copy(update={"metadata": live.metadata})
    report = apply_remote(config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert _rules(report) == {"live_topic"} and report.count("quarantined") == 0
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


def test_the_hosts_protected_topics_refuse_the_plan(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    policy = w.config.policy.model_copy(update={"protected_topic_patterns": ("go.*",)})
    config = w.config.model_copy(update={"policy": policy})
    with pytest.raises(PolicyViolation, match=r"\[protected_topic\]"):
        apply_remote(config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


def _leaked_world(tmp_path: Path, state: SegmentState | None, *, after_plan: bool = False) -> RemoteWorld:
    """Segments of the LIVE topic ``orders`` planned as remote_delete_leaked, with a metadata copy whose latest
    state for them is ``state`` (None: no metadata source configured)."""
    from pipelines.remote_tier.events import SegmentEvent

    source = None
    if state is not None:
        at = int((datetime.now(timezone.utc) - timedelta(days=(0 if after_plan else 3))).timestamp() * 1000)
        events = []
        for sid in SEGMENTS:
            events.append(SegmentEvent("orders", LIVE_ID, 0, sid, SegmentState.COPY_SEGMENT_STARTED, 1, at - 9, True,
                                       start_offset=0, end_offset=99, size=1, max_timestamp_ms=at,
                                       leader_epochs=((0, 0),)))
            for s in (SegmentState.COPY_SEGMENT_FINISHED, SegmentState.DELETE_SEGMENT_STARTED,
                      SegmentState.DELETE_SEGMENT_FINISHED):
                events.append(SegmentEvent("orders", LIVE_ID, 0, sid, s, 1, at - 9 + s, False))
                if s == state:
                    break
        source = tmp_path / "rlm"
        write_metadata_replica(source, 0, events)
    w = build_remote_world(tmp_path, cls="remote_delete_leaked", topic=("orders", LIVE_ID), metadata_source=source)
    return w


def test_a_state_class_is_applied_only_when_the_re_read_metadata_still_says_it(tmp_path: Path) -> None:
    w = _leaked_world(tmp_path / "ok", SegmentState.DELETE_SEGMENT_FINISHED)
    assert set(_actions(_apply(w, execute=True)).values()) == {"quarantined"}
    for state in (SegmentState.COPY_SEGMENT_FINISHED, None):
        w = _leaked_world(tmp_path / str(state), state)
        report = _apply(w, execute=True)
        assert _rules(report) == {"metadata_recheck"} and report.count("quarantined") == 0
        assert all(w.tier.read(k) == v for k, v in w.originals.items())


def test_a_metadata_event_after_the_plan_was_made_skips_the_segment(tmp_path: Path) -> None:
    w = _leaked_world(tmp_path, SegmentState.DELETE_SEGMENT_FINISHED, after_plan=True)
    report = _apply(w, execute=True)
    assert _rules(report) == {"metadata_recheck"} and report.count("quarantined") == 0


def test_young_objects_are_inside_the_hosts_grace_floor(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    young = sorted(w.originals)[0]
    path = w.tier.path(young)
    now = datetime.now(timezone.utc).timestamp()
    os.utime(path, (now, now))
    info = w.tools.tier.head(young)
    assert info is not None
    item = next(i for i in w.plan.items if young in {k.key for k in i.keys or ()})
    keys = tuple(RemoteKey(key=k.key, size=k.size, etag=k.etag, last_modified_ms=info.last_modified_ms)
                 if k.key == young else k for k in item.keys or ())
    plan = make_plan((item.model_copy(update={"keys": keys}),), plan_id="plan-young")
    force_approve(w.store, plan, w.config)
    report = apply_remote(w.config, w.store, plan.plan_id, execute=True, tools=w.tools)
    assert _rules(report) == {"min_grace"} and w.tier.read(young) == w.originals[young]


def test_a_quarantine_folder_overlapping_owned_prefix_is_a_config_error() -> None:
    from pipelines.errors import ConfigError

    with pytest.raises(ConfigError, match="overlap"):
        RemoteTarget(location="file:///t", layout="aiven", owned_prefix="a/", quarantine_folder="a/q/")
    with pytest.raises(ConfigError, match="overlap"):
        RemoteTarget(location="file:///t", layout="aiven", owned_prefix="a/b/", quarantine_folder="a/")
    assert RemoteTarget(location="file:///t", layout="aiven", owned_prefix="a/").quarantine_key("p", "a/k") == \
        ".logdir-gc-quarantine/p/a/k"


def test_an_original_changed_between_its_verified_copy_and_the_delete_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.execute_remote import apply as remote_apply

    w = build_remote_world(tmp_path)
    real = remote_apply.copy_verdict
    victim = sorted(w.originals)[0]

    def verified_then_upload(tier, src, info, dst):
        verdict = real(tier, src, info, dst)
        if src == victim:
            w.tier.put(victim, b"uploaded meanwhile")  # a concurrent upload after the copy was verified
        return verdict

    monkeypatch.setattr(remote_apply, "copy_verdict", verified_then_upload)
    report = _apply(w, execute=True)
    assert _rules(report) == {"changed"} and report.count("failed") == 1
    assert w.tier.read(victim) == b"uploaded meanwhile"
    segment = [k for k in w.originals if k.rsplit("/", 1)[1].split(".")[0] == victim.rsplit("/", 1)[1].split(".")[0]]
    assert all(w.tier.read(k) is not None for k in segment)  # no key of that segment was deleted


def test_the_hosts_byte_budget_is_checked_on_re_listed_bytes_not_on_the_plans_claim(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path, approve_plan=False)
    lying = make_plan(tuple(i.model_copy(update={"bytes": 1}) for i in w.plan.items), plan_id="plan-small")
    force_approve(w.store, lying, w.config)
    policy = w.config.policy.model_copy(update={"max_broker_bytes": 100})
    config = w.config.model_copy(update={"policy": policy})
    with pytest.raises(PolicyViolation, match=r"\[max_broker_bytes\] the remote part reclaims \d+ bytes \(re-listed\)"):
        apply_remote(config, w.store, lying.plan_id, execute=True, tools=w.tools)
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


def test_a_key_the_executor_deleted_that_reappears_unchanged_is_not_reported_quarantined(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = build_remote_world(tmp_path)
    _crash_at(monkeypatch, "delete.done:1")
    with pytest.raises(Crash):
        _apply(w, execute=True)
    monkeypatch.delenv(faults.ENV_POINT)
    (gone,) = [k for k in w.originals if w.tier.read(k) is None]
    planned = next(k for i in w.plan.items for k in i.keys or () if k.key == gone)
    w.tier.put(gone, w.originals[gone], age_days=None)  # the same bytes, size and time: only the journal knows
    os.utime(w.tier.path(gone), ns=(planned.last_modified_ms * 1_000_000, planned.last_modified_ms * 1_000_000))
    report = _apply(w, execute=True)
    assert "changed" in _rules(report) and w.tier.read(gone) == w.originals[gone]


def test_a_topic_id_unknown_to_an_incomplete_controller_image_is_not_proven_deleted(tmp_path: Path) -> None:
    w = build_remote_world(tmp_path)
    log = write_metadata_log(tmp_path / "partial" / "__cluster_metadata-0", [Topic("orders", str(LIVE_ID), (0,))],
                             base_offset=7)  # the log misses its start: an incomplete image without GONE_ID
    config = w.config.model_copy(update={"metadata": w.config.metadata.model_copy(update={"source": str(log)})})
    report = apply_remote(config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert _rules(report) == {"controller_recheck"} and report.count("quarantined") == 0
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


def test_a_restored_object_that_does_not_verify_keeps_the_quarantined_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = build_remote_world(tmp_path)
    _apply(w, execute=True)
    real = w.tools.tier.copy

    def damaging(src: str, dst: str) -> None:
        real(src, dst)
        w.tier.put(dst, b"\0" + (w.tier.read(dst) or b"")[1:], age_days=None)

    monkeypatch.setattr(w.tools.tier, "copy", damaging)
    r = restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools)
    assert len(r.failed) == 2 and all("[restore_unverified]" in why for why in r.failed.values())
    assert all(w.tier.read(w.quarantine(k)) == v for k, v in w.originals.items() if str(SEGMENTS[0]) in k
               or str(SEGMENTS[1]) in k)


@pytest.mark.parametrize("claim", [{"partition": 1}, {"topic_id": str(LIVE_ID)}, {"start_offset": 100},
                                   {"topic": "orders"}, {"segment_id": str(SEGMENTS[1])}])
def test_an_item_whose_claims_disagree_with_its_keys_is_refused(tmp_path: Path, claim: dict) -> None:
    w = build_remote_world(tmp_path, approve_plan=False)
    first = next(i for i in w.plan.items if i.start_offset == 0)
    lying = make_plan((first.model_copy(update=claim),), plan_id="plan-lying")
    force_approve(w.store, lying, w.config)
    report = apply_remote(w.config, w.store, lying.plan_id, execute=True, tools=w.tools)
    assert _rules(report) == {"inconsistent"}
    assert all(w.tier.read(k) == v for k, v in w.originals.items())


def test_a_tier_leased_by_another_remote_executor_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    """Another host's remote executor (its own state dir: this host's lock cannot see it) holds the tier's lease."""
    w = build_remote_world(tmp_path)
    lease = f"{w.tools.target.quarantine_folder}{LEASE_NAME}"
    w.tier.put(lease, json.dumps({"command": "apply", "host": "other-host", "pid": 4242,
                                  "since": "2026-11-28T10:00:00+00:00"}).encode())
    before = w.tier.objects()
    floor = w.config.executor.purge_retention_floor_ms
    for run in (lambda: _apply(w, execute=True),
                lambda: restore_remote(w.config, w.store, w.plan.plan_id, execute=True, tools=w.tools),
                lambda: purge_remote(w.config, older_than_ms=floor, execute=True, tools=w.tools)):
        with pytest.raises(ExecutorBusy, match=r"\[tier_lease\].*apply on other-host, pid 4242"):
            run()
    assert w.tier.objects() == before
    os.remove(w.tier.path(lease))  # the operator, once sure no other run is alive
    _apply(w, execute=True)
    after = w.tier.objects()
    assert lease not in after, "a run leaves no lease behind"
    assert all(after.get(w.quarantine(k)) == v and k not in after for k, v in w.originals.items())
