"""Every refusal of the executor: each would let a wrong or unsafe action through if its check were removed."""

from __future__ import annotations

import os
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
    write_metadata_log,
)
from logdir_factory import PartitionSpec, make_log_dir, uuid_for

from pipelines.config.models import AppConfig, PolicyConfig
from pipelines.errors import PlanError, PolicyViolation, PreconditionFailed
from pipelines.execute.apply import apply_plan
from pipelines.kafka.partition_metadata import write_partition_metadata
from pipelines.plan import approval


def _actions(report) -> dict[str, str]:
    return {i.item_id: i.action for i in report.items}


def test_tampered_plan_file_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    text = w.plan.to_json()
    edited = tmp_path / "edited.json"
    edited.write_text(text.replace(f'"dir_name": "{LIVE[0].dir_name}"', '"dir_name": "x"')
                      .replace(f'"dir_name": "{GARBAGE[0].dir_name}"', f'"dir_name": "{LIVE[0].dir_name}"'))
    with pytest.raises(PlanError, match="tampered"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True, plan_file=edited)
    # edited AND re-hashed: valid on its own, but not the approved content
    rehashed_plan = w.plan.model_copy(update={"items": w.plan.items[:1], "content_hash": ""}).with_hash()
    rehashed = tmp_path / "rehashed.json"
    rehashed.write_text(rehashed_plan.to_json())
    with pytest.raises(PlanError, match="does not hash to the approved content"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True, plan_file=rehashed)
    original = tmp_path / "plan.json"
    original.write_text(text)
    assert apply_plan(w.config, w.store, "plan-1", 1, plan_file=original).count("would_quarantine") == 3


def test_tampered_stored_plan_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    row = approval.get_plan(w.store, "plan-1")
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"plan_json": row.plan_json.replace("gone-0", "orders-0")})
    with pytest.raises(PlanError, match=r"tampered|does not match"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_unapproved_and_forged_approvals_are_refused(tmp_path: Path, signed: bool) -> None:
    # unsigned: the audit cross-check on its own (signed, the forged row has no signature: tests/signing)
    w = build_world(tmp_path, approve_plan=False, signed=signed)
    approval.register_plan(w.store, w.plan, actor="detector", policy=w.config.policy)
    with pytest.raises(PolicyViolation, match=r"^\[not_approved\]"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    # someone with table write access flips the status without an audited approval
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["mallory"]})
    with pytest.raises(PolicyViolation, match=r"^\[approvals_required\]"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


def test_self_approval_does_not_authorise_execution(tmp_path: Path) -> None:
    w = build_world(tmp_path, approve_plan=False)
    lax = PolicyConfig(approver_must_differ_from_author=False)
    approval.register_plan(w.store, w.plan, actor="detector", policy=lax)
    approval.approve(w.store, "plan-1", by="detector", policy=lax)
    with pytest.raises(PolicyViolation, match=r"^\[approvals_required\]"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)


def test_expired_plan_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    with pytest.raises(PolicyViolation, match=r"^\[plan_expiry\]"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True, now=datetime.now(timezone.utc) + timedelta(days=8))
    assert all(p.exists() for p in w.garbage.values())


def _world_with_items(tmp_path: Path, extra_items) -> tuple:
    w = build_world(tmp_path, approve_plan=False)
    items = (*w.plan.items, *extra_items(w))
    plan = make_plan(w.log_dir, (), items=items, plan_id="plan-2")
    approve(w.store, plan, w.config)
    return w, plan


def test_symlink_and_dotdot_escapes_are_skipped(tmp_path: Path) -> None:
    outside = make_log_dir(tmp_path / "elsewhere", partitions=[PartitionSpec("victim", 0, log_content=b"v" * 10)])
    victim = outside / "victim-0"
    before = tree_digest(outside)

    def extra(w):
        (w.log_dir / "evil-0").symlink_to(victim, target_is_directory=True)
        here = {"directory_id": str(uuid_for(f"dir-{w.log_dir.name}"))}
        fake = item_for(outside, PartitionSpec("victim", 0), item_id="via-symlink").model_copy(update=here)
        dotdot = item_for(outside, PartitionSpec("victim", 0), item_id="via-dotdot").model_copy(update=here)
        return (
            fake.model_copy(update={"log_dir": str(w.log_dir), "dir_name": "evil-0"}),
            dotdot.model_copy(update={"log_dir": str(w.log_dir), "dir_name": "../elsewhere/victim-0"}),
            dotdot.model_copy(update={"item_id": "via-logdir-dotdot", "log_dir": f"{w.log_dir}/../elsewhere",
                                      "dir_name": "victim-0"}),
        )

    w, _plan = _world_with_items(tmp_path, extra)
    report = apply_plan(w.config, w.store, "plan-2", 1, execute=True)
    acts = _actions(report)
    assert acts["via-symlink"] == acts["via-dotdot"] == acts["via-logdir-dotdot"] == "skipped"
    reasons = {i.item_id: i.reason for i in report.items}
    # anchored phrases: tmp_path itself contains the test's name, so a bare "symlink" would always match
    assert reasons["via-symlink"].endswith("is a symlink") and "single directory name" in reasons["via-dotdot"]
    assert "not registered" in reasons["via-logdir-dotdot"]
    assert sum(a == "quarantined" for a in acts.values()) == 3
    assert tree_digest(outside) == before and (w.log_dir / "evil-0").is_symlink()


def test_symlinked_log_dir_component_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    link = tmp_path / "linked"
    link.symlink_to(w.root, target_is_directory=True)
    cfg = w.config.model_copy(update={"brokers": (w.config.brokers[0].model_copy(
        update={"log_dirs": (str(link / "kafka-logs"),)}),)})
    items = tuple(i.model_copy(update={"log_dir": str(link / "kafka-logs")}) for i in w.plan.items)
    plan = make_plan(w.log_dir, (), items=items, plan_id="plan-3")
    approve(w.store, plan, cfg)
    report = apply_plan(cfg, w.store, "plan-3", 1, execute=True)
    assert {i.action for i in report.items} == {"skipped"}
    assert all(f"component {link} is a symlink" in i.reason for i in report.items)


def test_changed_partition_metadata_is_skipped_even_with_the_same_fingerprint(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    pm = w.garbage[w.plan.items[0].item_id] / "partition.metadata"
    st = os.stat(pm)
    new = write_partition_metadata(uuid_for("recreated"))
    assert len(new) == st.st_size
    pm.write_bytes(new)
    os.utime(pm, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: the fingerprint cannot see it
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    first = report.items[0]
    assert first.action == "skipped" and "topic_id" in first.reason and first.rule == "inconsistent"
    assert pm.parent.exists()


def test_changed_fingerprint_is_skipped(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    target = w.garbage[w.plan.items[1].item_id]
    with open(target / "00000000000000000000.log", "ab") as f:
        f.write(b"new data")
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert _actions(report)[w.plan.items[1].item_id] == "skipped"
    assert "changed since the crawl" in report.items[1].reason
    assert target.exists() and report.count("quarantined") == 2


def test_plan_for_another_cluster_is_refused(tmp_path: Path) -> None:
    # unsigned: the host binding on its own (signed, the signature's cluster id refuses first: tests/signing)
    w = build_world(tmp_path, approve_plan=False, signed=False)
    plan = make_plan(w.log_dir, GARBAGE, plan_id="foreign", cluster_id=str(uuid_for("other-cluster")))
    approve(w.store, plan, w.config)
    with pytest.raises(PreconditionFailed, match="another cluster"):
        apply_plan(w.config, w.store, "foreign", 1, execute=True)


def test_plan_for_another_broker_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path, node_id=2)  # this host's meta.properties says node 2; the plan is for broker 1
    with pytest.raises(PreconditionFailed, match="another broker"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


def test_plan_for_another_disk_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path, approve_plan=False)
    items = tuple(i.model_copy(update={"directory_id": str(uuid_for("another-disk"))}) for i in w.plan.items)
    approve(w.store, make_plan(w.log_dir, (), items=items, plan_id="disk"), w.config)
    with pytest.raises(PreconditionFailed, match=r"directory\.id"):
        apply_plan(w.config, w.store, "disk", 1, execute=True)


def test_a_replica_the_controller_assigns_is_never_touched_even_if_approved(tmp_path: Path) -> None:
    """A tampered-but-rehashed-and-approved plan lists a live replica; the metadata re-check stops it."""
    w = build_world(tmp_path, approve_plan=False)
    live = item_for(w.log_dir, LIVE[0], item_id="live-orders-0")
    plan = make_plan(w.log_dir, (), items=(*w.plan.items, live), plan_id="evil")
    approve(w.store, plan, w.config)
    before = tree_digest(w.log_dir / LIVE[0].dir_name)
    report = apply_plan(w.config, w.store, "evil", 1, execute=True)
    acts = _actions(report)
    assert acts["live-orders-0"] == "skipped"
    assert "live replica" in {i.item_id: i.reason for i in report.items}["live-orders-0"]
    assert tree_digest(w.log_dir / LIVE[0].dir_name) == before
    assert sum(a == "quarantined" for a in acts.values()) == 3


def test_unknown_topic_in_an_incomplete_image_is_not_proven_garbage(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    config = with_metadata(w, [Topic("orders", str(LIVE[0].resolved_topic_id), (0, 1))], base_offset=5)
    report = apply_plan(config, w.store, "plan-1", 1)
    assert {i.action for i in report.items} == {"skipped"}
    assert all("incomplete" in i.reason for i in report.items), report.items


def test_log_dir_not_registered_for_the_broker_is_skipped(tmp_path: Path) -> None:
    # unsigned: signed, a broker whose registered log dirs have no meta.properties refuses before any item
    w = build_world(tmp_path, signed=False)
    cfg = AppConfig.model_validate({**w.config.model_dump(), "brokers": [
        {"broker_id": 1, "log_dirs": [str(tmp_path / "other")]}]})
    (tmp_path / "other").mkdir()
    report = apply_plan(cfg, w.store, "plan-1", 1, execute=True)
    assert {i.action for i in report.items} == {"skipped"}
    assert all(p.exists() for p in w.garbage.values())


def test_configured_metadata_source_is_re_read_at_apply_time(tmp_path: Path) -> None:
    """The plan was made while ``gone`` was deleted; by apply time the controller's log says it is a live topic on
    this broker again (the plan is stale, or lies): every ``gone`` item is skipped, read from the log itself."""
    w = build_world(tmp_path)
    topics = [Topic(t.name, t.topic_id, t.partitions, removed=t.removed and t.name != "gone") for t in topics_of()]
    write_metadata_log(Path(w.config.metadata.source), topics)
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    gone = [i for i in w.plan.items if i.topic == "gone"]
    assert gone and all(_actions(report)[i.item_id] == "skipped" for i in gone)
    assert all(w.garbage[i.item_id].is_dir() for i in gone)
    assert report.count("quarantined") == len(w.plan.items) - len(gone)


def test_unreadable_metadata_source_refuses_everything(tmp_path: Path) -> None:
    w = build_world(tmp_path, metadata={"kind": "metadata_log", "source": str(tmp_path / "missing")})
    with pytest.raises(PreconditionFailed, match="cannot re-read controller metadata"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())
