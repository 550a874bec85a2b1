"""The plan file and the content hash are written item by item; the bytes must be exactly those of the whole-document
``json.dumps`` they replaced (approvals, signatures and executors in the field hold hashes computed that way)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.plan.model import GcPlan, PlanItem, compute_content_hash

# every kind of character json.dumps escapes: quotes, backslashes, control characters, non-ASCII, surrogate pairs
TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["", '"\\\n\t', "ü€😀", "\x00items\x00"])

ITEMS = st.builds(
    lambda n, text, broker, partition, size, optional: PlanItem.model_validate({
        "item_id": f"{n:016x}", "broker_id": broker, "log_dir": "/data/" + text, "dir_name": text + "-0",
        "topic": text if optional else None, "partition": partition if optional else None,
        "topic_id": None if optional else "AAAAAAAAAAAAAAAAAAAAAQ", "class": "deleted_topic", "bytes": size,
        "fingerprint": "sha256:" + text, "directory_id": text if optional else None, "reason": text,
    }),
    st.integers(0, 2**64 - 1), TEXT, st.integers(-1, 10**6), st.integers(0, 10**4), st.integers(0, 2**62),
    st.booleans(),
)


def _plan(cluster: str, items: list[PlanItem], expires: bool) -> GcPlan:
    at = datetime(2026, 6, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
    return GcPlan(plan_id="p-" + cluster, cluster=cluster, cluster_id=cluster or None, created_at=at,
                  created_by=cluster, run_id="r", metadata_offset=len(items) or None, items=tuple(items),
                  expires_at=at if expires else None)


def _whole_document_hash(plan: GcPlan) -> str:
    """The definition the streamed hash must keep: one dict, items sorted by id, one compact sorted dump."""
    body = plan.model_dump(mode="json", by_alias=True, exclude={"content_hash"})
    body["items"] = sorted(body["items"], key=lambda i: i["item_id"])
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT, st.lists(ITEMS, max_size=6), st.booleans())
def test_streamed_json_and_hash_equal_the_whole_document(cluster: str, items: list[PlanItem], expires: bool) -> None:
    plan = _plan(cluster, items, expires).with_hash()

    assert plan.content_hash == _whole_document_hash(plan) == compute_content_hash(plan)
    whole = json.dumps(plan.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)
    assert plan.to_json() == whole
    assert GcPlan.from_json(plan.to_json()) == plan


def test_a_changed_item_changes_the_streamed_hash() -> None:
    items = [PlanItem.model_validate({"item_id": f"{n:016x}", "broker_id": 1, "log_dir": "/d", "dir_name": f"t-{n}",
                                      "class": "deleted_topic", "bytes": n, "fingerprint": "f"}) for n in range(3)]
    plan = _plan("c", items, False).with_hash()
    changed = _plan("c", [*items[:2], items[2].model_copy(update={"bytes": 4})], False)

    assert compute_content_hash(changed) != plan.content_hash
    assert compute_content_hash(_plan("c", items[::-1], False)) == plan.content_hash  # item_id order, not list order


def _item(n: int, **fields: object) -> PlanItem:
    return PlanItem.model_validate({"item_id": f"{n:016x}", "broker_id": 1, "log_dir": "/d", "dir_name": f"t-{n}",
                                    "class": "stray", "fingerprint": "sha256:x", **fields})


def test_items_given_the_same_fields_share_one_fields_set_and_still_dump_their_own() -> None:
    """A 100k-item plan held one set of given field names per item (57% of an item's memory): items that were given
    the same fields share one, and what each item was given still decides what it dumps and copies."""
    full = {"topic": "t", "partition": 0, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "bytes": 5, "directory_id": None,
            "reason": ""}
    a, b, c = _item(1, **full), _item(2, **full), _item(3)
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert c.model_fields_set != a.model_fields_set
    assert set(c.model_dump(exclude_unset=True)) == {"item_id", "broker_id", "log_dir", "dir_name", "class_",
                                                     "fingerprint"}
    shared = set(a.model_fields_set)
    d = c.model_copy(update={"bytes": 7})
    assert d.bytes == 7 and "bytes" in d.model_fields_set and "bytes" not in c.model_fields_set
    assert a.model_fields_set == shared and _item(4, **full).model_fields_set == shared
    plan = GcPlan.from_json(_plan("c1", [a, b], expires=False).with_hash().to_json())
    assert plan.items[0].__pydantic_fields_set__ is plan.items[1].__pydantic_fields_set__ is a.__pydantic_fields_set__
