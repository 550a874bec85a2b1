"""Plans that lie: approved, hash-consistent plans whose items name real dirs with false claims, or real claims about
dirs the host's own rules forbid. Every fact the executor acts on must come from the disk and the controller; each
test pins one rule by the rule name it reports (removing the check changes the outcome or the rule)."""

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
    force_approve,
    item_for,
    make_plan,
    topics_of,
    tree_digest,
    with_metadata,
    write_metadata_log,
)
from logdir_factory import PartitionSpec, uuid_for

from pipelines.errors import PolicyViolation, PreconditionFailed
from pipelines.execute.apply import apply_plan
from pipelines.kafka.logdir import fingerprint_dir
from pipelines.kafka.uuid import METADATA_TOPIC_ID
from pipelines.plan.model import PlanItem


def _lie(w, item: PlanItem, plan_id: str = "lie", **claims) -> str:
    """Register and approve (by someone else) a plan of the world's garbage plus ``item`` with ``claims``."""
    forged = item.model_copy(update=claims)
    approve(w.store, make_plan(w.log_dir, (), items=(*w.plan.items, forged), plan_id=plan_id), w.config)
    return forged.item_id


def _outcome(report, item_id: str):
    return next(i for i in report.items if i.item_id == item_id)


@pytest.mark.parametrize("claims", [
    {"partition": None}, {"partition": 99}, {"topic": "gone"}, {"topic": None}, {"topic_id": None},
    {"topic_id": str(uuid_for("gone"))},
], ids=["partition-none", "partition-beyond-count", "other-topic", "no-topic", "no-topic-id", "other-topic-id"])
def test_an_item_whose_claims_disagree_with_the_disk_is_refused(tmp_path: Path, claims: dict) -> None:
    """The trial's attack: a real live dir (orders-1), claimed with a wrong partition, topic or topic id."""
    w = build_world(tmp_path, approve_plan=False)
    live = w.log_dir / LIVE[1].dir_name
    before = tree_digest(live)
    item_id = _lie(w, item_for(w.log_dir, LIVE[1], item_id="live"), **claims)
    report = apply_plan(w.config, w.store, "lie", 1, execute=True)
    outcome = _outcome(report, item_id)
    assert (outcome.action, outcome.rule) == ("skipped", "inconsistent"), outcome
    assert tree_digest(live) == before
    assert report.count("quarantined") == len(w.plan.items)


@pytest.mark.parametrize("kind,cls", [("live", "stray"), ("live", "stuck_delete"), ("delete", "deleted_topic")])
def test_a_class_the_dirs_kind_cannot_have_is_refused(tmp_path: Path, kind: str, cls: str) -> None:
    spec = {"live": GARBAGE[0], "delete": GARBAGE[2]}[kind]
    w = build_world(tmp_path, approve_plan=False)
    odd = item_for(w.log_dir, spec, item_id="odd").model_copy(update={"class_": cls})
    approve(w.store, make_plan(w.log_dir, (), items=(odd,), plan_id="lie"), w.config)
    outcome = _outcome(apply_plan(w.config, w.store, "lie", 1, execute=True), "odd")
    assert (outcome.action, outcome.rule) == ("skipped", "inconsistent") and (w.log_dir / spec.dir_name).is_dir()


def test_the_metadata_log_is_never_touched_whatever_the_plan_claims(tmp_path: Path) -> None:
    from logdir_factory import write_cluster_metadata_dir

    w = build_world(tmp_path, approve_plan=False)
    write_cluster_metadata_dir(w.log_dir)
    meta = w.log_dir / "__cluster_metadata-0"
    item = PlanItem.model_validate({
        "item_id": "meta", "broker_id": 1, "log_dir": str(w.log_dir), "dir_name": meta.name,
        "topic": "__cluster_metadata", "partition": 0, "topic_id": str(METADATA_TOPIC_ID), "class": "deleted_topic",
        "fingerprint": w.plan.items[0].fingerprint, "directory_id": w.plan.items[0].directory_id})
    # A plan naming the metadata topic never passes the policy's claim check at apply (nor at approval) ...
    force_approve(w.store, make_plan(w.log_dir, (), items=(*w.plan.items, item), plan_id="lie"), w.config)
    with pytest.raises(PolicyViolation, match=r"^\[protected_topic\]"):
        apply_plan(w.config, w.store, "lie", 1, execute=True)
    # ... and one that claims another topic for it is refused item by item: its kind is never planned
    item_id = _lie(w, item, plan_id="lie2", topic="harmless")
    outcome = _outcome(apply_plan(w.config, w.store, "lie2", 1, execute=True), item_id)
    assert outcome.action == "skipped" and outcome.rule in ("inconsistent", "never_planned") and meta.is_dir()


def test_an_unparseable_dir_is_never_touched_even_with_claims_that_match(tmp_path: Path) -> None:
    """``lost+found`` claimed exactly as the disk has it (no topic, partition or id): only the never-planned rule
    refuses it (Kafka's parser rejects the name, so no class fits it)."""
    w = build_world(tmp_path, approve_plan=False)
    lost = w.log_dir / "lost+found"
    lost.mkdir()
    (lost / "#1234").write_bytes(b"fsck")
    item = PlanItem.model_validate({
        "item_id": "lost", "broker_id": 1, "log_dir": str(w.log_dir), "dir_name": lost.name, "topic": None,
        "partition": None, "topic_id": None, "class": "deleted_topic", "fingerprint": fingerprint_dir(str(lost)),
        "directory_id": w.plan.items[0].directory_id})
    approve(w.store, make_plan(w.log_dir, (), items=(item,), plan_id="lost"), w.config)
    outcome = _outcome(apply_plan(w.config, w.store, "lost", 1, execute=True), "lost")
    assert (outcome.action, outcome.rule) == ("skipped", "never_planned") and (lost / "#1234").exists()


def test_protection_follows_the_controllers_name_for_the_topic_id(tmp_path: Path) -> None:
    """A dir named ``innocent-0`` holding the topic id the controller knows as ``__consumer_offsets`` (not assigned
    to this broker): only the protection rule, judged on the controller's name, stops it."""
    innocent = PartitionSpec("innocent", 0, topic_id=uuid_for("__consumer_offsets"), log_content=b"c" * 50)
    w = build_world(tmp_path, garbage=(*GARBAGE, innocent), approve_plan=False)
    config = with_metadata(w, [*topics_of(deleted=GARBAGE),
                               Topic("__consumer_offsets", str(uuid_for("__consumer_offsets")), (0,), (2, 3))])
    approve(w.store, make_plan(w.log_dir, (*GARBAGE, innocent), plan_id="p"), config)
    report = apply_plan(config, w.store, "p", 1, execute=True)
    outcome = _outcome(report, "innocent-0")
    assert (outcome.action, outcome.rule) == ("skipped", "protected_topic") and (w.log_dir / "innocent-0").is_dir()
    assert report.count("quarantined") == len(GARBAGE)


def test_the_metadata_topics_sentinel_id_is_protected_under_any_name(tmp_path: Path) -> None:
    odd = PartitionSpec("odd", 0, topic_id=METADATA_TOPIC_ID, log_content=b"m" * 50)
    w = build_world(tmp_path, garbage=(*GARBAGE, odd))
    outcome = _outcome(apply_plan(w.config, w.store, "plan-1", 1, execute=True), "odd-0")
    assert (outcome.action, outcome.rule) == ("skipped", "protected_topic") and (w.log_dir / "odd-0").is_dir()


def test_the_hosts_protected_patterns_apply_whatever_the_approver_saw(tmp_path: Path) -> None:
    """The plan was approved under a laxer policy; the host's config protects ``gone``: refused at apply."""
    w = build_world(tmp_path)
    strict = w.config.model_copy(update={"policy": w.config.policy.model_copy(
        update={"protected_topic_patterns": ("gone",)})})
    with pytest.raises(PolicyViolation, match=r"^\[protected_topic\]"):
        apply_plan(strict, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


def test_the_hosts_byte_budget_is_checked_on_measured_bytes(tmp_path: Path) -> None:
    """Items that claim 1 byte each pass the claim check; the host measures the disk and refuses the run."""
    w = build_world(tmp_path, approve_plan=False)
    items = tuple(i.model_copy(update={"bytes": 1}) for i in w.plan.items)
    approve(w.store, make_plan(w.log_dir, (), items=items, plan_id="small"), w.config)
    tight = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"max_broker_bytes": 100})})
    with pytest.raises(PolicyViolation, match=r"^\[max_broker_bytes\].*measured on disk"):
        apply_plan(tight, w.store, "small", 1, execute=True)
    with pytest.raises(PolicyViolation, match=r"^\[max_broker_bytes\]"):
        apply_plan(tight, w.store, "small", 1)  # the dry run says so too
    assert all(p.exists() for p in w.garbage.values())


def test_the_grace_floor_is_measured_from_the_event_the_executor_re_reads(tmp_path: Path) -> None:
    """The controller log says the garbage topics were deleted two hours ago: under the host's 24 h floor, whatever
    the plan or the detector claimed."""
    w = build_world(tmp_path)
    now_ms = int((datetime.now(timezone.utc) + timedelta(days=3) - timedelta(hours=2)).timestamp() * 1000)
    write_metadata_log(Path(w.config.metadata.source), topics_of(), now_ms=now_ms)  # removal 2 h ago
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    by_rule = {i.item_id: i.rule for i in report.items}
    assert {by_rule[i.item_id] for i in w.plan.items if i.topic == "gone"} == {"min_grace"}
    assert all(w.garbage[i.item_id].exists() for i in w.plan.items if i.topic == "gone")


def test_the_grace_floor_is_the_hosts(tmp_path: Path) -> None:
    """The default world's deletions are three days old; a host whose floor is four days refuses them."""
    w = build_world(tmp_path)
    slow = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"min_grace_ms": 4 * 86_400_000})})
    report = apply_plan(slow, w.store, "plan-1", 1, execute=True)
    assert {i.rule for i in report.items} == {"min_grace"} and all(p.exists() for p in w.garbage.values())


def test_a_young_delete_dir_is_dated_by_its_mtime(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    delete_dir = next(p for p in w.garbage.values() if p.name.endswith("-delete"))
    os.utime(delete_dir)  # touched now: younger than the grace floor
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    outcome = next(i for i in report.items if i.path == str(delete_dir))
    assert (outcome.action, outcome.rule) == ("skipped", "min_grace") and delete_dir.is_dir()


def test_an_id_no_event_dates_is_refused(tmp_path: Path) -> None:
    """A topic id the controller's log (from offset 0, no snapshot) never mentions: its age is unknown."""
    stranger = PartitionSpec("stranger", 0, log_content=b"s" * 10)
    w = build_world(tmp_path, garbage=(*GARBAGE, stranger), approve_plan=False)
    config = with_metadata(w, topics_of())  # the world's controller log, which never saw ``stranger``
    approve(w.store, make_plan(w.log_dir, (*GARBAGE, stranger), plan_id="p"), config)
    outcome = _outcome(apply_plan(config, w.store, "p", 1, execute=True), "stranger-0")
    assert (outcome.action, outcome.rule) == ("skipped", "min_grace") and "unknown" in outcome.reason


def test_no_metadata_source_refuses_the_run(tmp_path: Path) -> None:
    w = build_world(tmp_path, metadata={"kind": "none"})
    with pytest.raises(PreconditionFailed, match=r"\[controller_recheck\] metadata.kind is none"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())
