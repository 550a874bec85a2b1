"""Remote plan items: the model (kind, segment fields, the content hash of older plans) and the planner's rules."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from remote_world import (
    GONE_ID,
    OWNED,
    SEGMENTS,
    RemoteTools,
    Tier,
    content,
    findings_of,
    key_of,
    listed_rows,
    make_plan,
)

from pipelines.config.models import PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.execute_remote.target import RemoteTarget
from pipelines.execute_remote.tier_store import TierStore
from pipelines.kafka.uuid import Uuid
from pipelines.plan import policy as rules
from pipelines.plan.model import REMOTE_BROKER_ID, GcPlan, PlanItem
from pipelines.plan.remote_items import plan_remote_items

OTHERS = (Uuid(0x7777, 1), Uuid(0x7777, 2))


def _old_plan_json() -> dict:
    """A plan as written before items had a kind: every field of the old model, nothing else."""
    item = {"item_id": "i1", "broker_id": 1, "log_dir": "/d", "dir_name": "t-0", "topic": "t", "partition": 0,
            "topic_id": None, "class": "deleted_topic", "bytes": 5, "fingerprint": "f", "directory_id": None,
            "reason": ""}
    return {"format_version": 1, "plan_id": "p", "cluster": "c", "cluster_id": None,
            "created_at": "2026-01-01T00:00:00Z", "created_by": "a", "run_id": "r", "metadata_offset": None,
            "metadata_complete": True, "expires_at": None, "items": [item]}


def test_an_older_plan_without_kind_loads_keeps_its_hash_and_writes_the_same_json() -> None:
    body = _old_plan_json()
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))  # the hash as the old code computed it
    old_hash = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    plan = GcPlan.model_validate({**body, "content_hash": old_hash})
    assert plan.items[0].kind == "log_dir"
    assert json.loads(plan.to_json()) == {**body, "created_at": plan.created_at.isoformat().replace("+00:00", "Z"),
                                          "content_hash": old_hash}


def _remote(**over) -> dict:
    base = {"item_id": "r1", "kind": "remote_segment", "broker_id": REMOTE_BROKER_ID, "topic": "gone",
            "partition": 0, "topic_id": str(GONE_ID), "class": "remote_deleted_topic", "bytes": 3,
            "segment_id": str(SEGMENTS[0]), "start_offset": 0,
            "keys": [{"key": "clusterA/k", "size": 3, "etag": "e", "last_modified_ms": 5}]}
    return {**base, **over}


@pytest.mark.parametrize("over", [{"broker_id": 1}, {"keys": []}, {"segment_id": None}, {"start_offset": None},
                                  {"log_dir": "/d"}, {"topic_id": None}])
def test_a_remote_item_needs_its_segment_fields_and_the_remote_broker_id(over: dict) -> None:
    PlanItem.model_validate(_remote())
    with pytest.raises(ValueError, match="remote_segment item needs"):
        PlanItem.model_validate(_remote(**over))


def test_a_local_item_cannot_carry_remote_fields_or_the_remote_broker_id() -> None:
    local = _old_plan_json()["items"][0]
    with pytest.raises(ValueError, match="log_dir item has no remote fields"):
        PlanItem.model_validate({**local, "broker_id": REMOTE_BROKER_ID})
    with pytest.raises(ValueError, match="log_dir item has no remote fields"):
        PlanItem.model_validate({**local, "segment_id": str(SEGMENTS[0])})


def test_every_key_its_size_etag_and_time_are_in_the_content_hash() -> None:
    plan = make_plan((PlanItem.model_validate(_remote()),))
    for change in ({"size": 4}, {"etag": "f"}, {"last_modified_ms": 6}, {"key": "clusterA/j"}):
        keys = [{**_remote()["keys"][0], **change}]
        changed = GcPlan.model_validate({**plan.model_dump(by_alias=True), "content_hash": "",
                                         "items": (PlanItem.model_validate(_remote(keys=keys)),)})
        assert changed.with_hash().content_hash != plan.content_hash


def test_the_remote_part_has_the_same_policy_budgets_and_protected_topics() -> None:
    plan = make_plan((PlanItem.model_validate(_remote(bytes=10_000)),))
    with pytest.raises(PolicyViolation, match=r"\[max_broker_bytes\] .*broker 2147483647"):
        rules.check_plan(plan, PolicyConfig(max_broker_bytes=9_999))
    protected = make_plan((PlanItem.model_validate(_remote(topic="__consumer_offsets")),))
    with pytest.raises(PolicyViolation, match=r"\[protected_topic\]"):
        rules.check_plan(protected, PolicyConfig())


@pytest.fixture
def tier(tmp_path: Path) -> tuple[RemoteTools, list[dict]]:
    """Two segments of ``gone`` under clusterA/, two others under clusterB/, listed by the product."""
    location = f"file://{tmp_path / 'tier'}"
    tools = RemoteTools(RemoteTarget(location=location, layout="aiven", owned_prefix=OWNED, prefix=OWNED),
                        TierStore.open(location))
    t = Tier(tools)
    for prefix, segments in ((OWNED, SEGMENTS), ("clusterB/", OTHERS)):
        for sid in segments:
            for kind in ("log", "indexes"):
                key = key_of("gone", GONE_ID, 0, sid, 0, kind, prefix=prefix)
                t.put(key, content(key))
    return tools, listed_rows(tools, prefix=OWNED) + listed_rows(tools, prefix="clusterB/")


def test_a_segment_whose_keys_are_also_listed_under_another_prefix_is_not_planned(tier) -> None:
    _, rows = tier
    twin = [{**r, "key": r["key"].replace(OWNED, "clusterB/")} for r in rows if r["key"].startswith(OWNED)
            and str(SEGMENTS[0]) in r["key"]]
    planning = plan_remote_items(findings_of([r for r in rows if r["key"].startswith(OWNED)]), rows + twin,
                                 owned_prefix=OWNED)
    assert [i.segment_id for i in planning.items] == [str(SEGMENTS[1])]
    assert "outside owned_prefix" in planning.left_out[0][1]


def test_nothing_is_planned_when_owned_prefix_is_unset(tier) -> None:
    _, rows = tier
    findings = findings_of([r for r in rows if r["key"].startswith(OWNED)])
    assert len(plan_remote_items(findings, rows, owned_prefix=OWNED).items) == 2
    for unset in (None, ""):
        assert plan_remote_items(findings, rows, owned_prefix=unset).items == []


def test_only_segments_wholly_under_owned_prefix_are_planned(tier) -> None:
    _, rows = tier
    rows = [{**r, "key": r["key"].replace("clusterA/", "clusterB/")} if r["key"].endswith(".indexes")
            and str(SEGMENTS[0]) in r["key"] and r["key"].startswith(OWNED) else r for r in rows]
    findings = findings_of([r for r in rows if r["key"].startswith(OWNED)])
    planning = plan_remote_items(findings, rows, owned_prefix=OWNED)
    assert [i.segment_id for i in planning.items] == [str(SEGMENTS[1])]
    assert "outside owned_prefix" in planning.left_out[0][1]
    for item in planning.items:
        assert all(k.key.startswith(OWNED) for k in item.keys or ())


def test_not_plannable_error_rows_and_keys_in_the_quarantine_are_never_planned(tier) -> None:
    _, rows = tier
    mine = [r for r in rows if r["key"].startswith(OWNED)]
    assert plan_remote_items(findings_of(mine, plannable=False), rows, owned_prefix=OWNED).items == []
    assert plan_remote_items(findings_of(mine, cls="remote_ok"), rows, owned_prefix=OWNED).items == []
    broken = [{**r, "error": "no size"} if r is mine[0] else r for r in rows]
    planning = plan_remote_items(findings_of(mine), broken, owned_prefix=OWNED)
    assert len(planning.items) == 1 and "error row" in planning.left_out[0][1]
    planning = plan_remote_items(findings_of(mine), rows, owned_prefix=OWNED,
                                 quarantine_folder=f"{OWNED}gone-{GONE_ID}/")
    assert planning.items == []


def test_planned_keys_carry_what_the_listing_said(tier) -> None:
    tools, rows = tier
    planning = plan_remote_items(findings_of([r for r in rows if r["key"].startswith(OWNED)]), rows,
                                 owned_prefix=OWNED)
    for item in planning.items:
        assert item.bytes == sum(k.size for k in item.keys or ())
        for k in item.keys or ():
            now = tools.tier.head(k.key)
            assert now is not None and (now.size, now.etag, now.last_modified_ms) == (k.size, k.etag,
                                                                                        k.last_modified_ms)
