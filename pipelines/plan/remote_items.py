"""Plan items for the remote tier: one ``kind = remote_segment`` item per plannable segment, with every key.

Input: ``remote_findings`` rows and ``remote_objects`` rows (dicts or Spark Rows) of one run, joined by
``(cluster, run_id, topic_id, partition, segment_id)``. A segment is planned only when

- its finding is ``plannable`` and of a plannable class (``classify.PLANNABLE_REMOTE_CLASSES``);
- ``owned_prefix`` is set (keys carry no cluster id and two clusters may share a bucket: with it unset nothing at all
  is planned) and EVERY key of the segment is a clean relative key below it, none in the quarantine folder;
- none of its object rows is an error row, and it has at least one object.

A segment left out is returned with the reason (``RemotePlanning.left_out``); nothing is guessed. The items carry
each key's size, ETag and last-modified time as listed, so the content hash and the signatures cover them and the
remote executor compares its own re-listing with them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipelines.plan.model import REMOTE_BROKER_ID, REMOTE_SEGMENT, GcPlan, PlanItem, RemoteKey
from pipelines.remote_tier.classify import PLANNABLE_REMOTE_CLASSES

__all__ = ["RemotePlanning", "key_problem", "plan_remote_items", "remote_item_id", "with_remote_items"]

SegmentRef = tuple[str, str, str, int, str]  # cluster, run_id, topic_id, partition, segment_id


@dataclass
class RemotePlanning:
    items: list[PlanItem] = field(default_factory=list)
    left_out: list[tuple[SegmentRef, str]] = field(default_factory=list)


def key_problem(key: str, owned_prefix: str | None, quarantine_folder: str | None = None) -> str | None:
    """Why ``key`` (relative to the location) may not be planned or touched, or None. Shared with the executor."""
    if not owned_prefix:
        return "remote_tier.owned_prefix is not set"
    parts = key.split("/")
    if not key or key.startswith("/") or "\0" in key or any(p in ("", ".", "..") for p in parts[:-1]) \
            or parts[-1] in ("", ".", ".."):
        return f"key {key!r} is not a clean relative key"
    owned = owned_prefix.rstrip("/") + "/"
    if not key.startswith(owned):
        return f"key {key!r} is outside owned_prefix {owned!r}"
    if quarantine_folder and key.startswith(quarantine_folder.rstrip("/") + "/"):
        return f"key {key!r} is in the quarantine folder {quarantine_folder!r}"
    return None


def remote_item_id(topic_id: str, partition: int, segment_id: str, keys: Iterable[RemoteKey]) -> str:
    """Deterministic: the same segment with the same listed objects always gets the same id."""
    parts = ["remote", topic_id, str(partition), segment_id,
             *(f"{k.key}\0{k.size}\0{k.etag}\0{k.last_modified_ms}" for k in sorted(keys, key=lambda k: k.key))]
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


def _as_dict(row: Any) -> dict[str, Any]:
    return row.asDict() if hasattr(row, "asDict") else dict(row)


def _ms(value: Any) -> int:
    """``remote_objects.last_modified`` as epoch ms (a timestamp column, or ms already)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"last_modified {value!r} is not a time")
    return value


def _ref(row: Mapping[str, Any]) -> SegmentRef:
    return (str(row.get("cluster")), str(row.get("run_id")), str(row.get("topic_id")), int(row["partition"]),
            str(row.get("segment_id")))


def plan_remote_items(findings: Iterable[Any], objects: Iterable[Any], *, owned_prefix: str | None,
                      quarantine_folder: str | None = None) -> RemotePlanning:
    """The remote items of one run (see the module doc). ``quarantine_folder``: relative to the location."""
    out = RemotePlanning()
    if not owned_prefix:
        return out
    wanted: dict[SegmentRef, dict[str, Any]] = {}
    for raw in findings:
        row = _as_dict(raw)
        if row.get("plannable") is True and row.get("class") in PLANNABLE_REMOTE_CLASSES \
                and row.get("segment_id") and row.get("topic_id") and row.get("partition") is not None:
            wanted[_ref(row)] = row
    keys: dict[SegmentRef, list[RemoteKey]] = {}
    broken: dict[SegmentRef, str] = {}
    for raw in objects:
        row = _as_dict(raw)
        if row.get("segment_id") is None or row.get("topic_id") is None or row.get("partition") is None:
            continue  # an error row names no segment: no finding is made of it
        ref = _ref(row)
        if ref not in wanted or ref in broken:
            continue
        if row.get("error"):
            broken[ref] = f"object {row.get('key')!r} is an error row: {row['error']}"
            continue
        try:
            keys.setdefault(ref, []).append(RemoteKey(key=str(row["key"]), size=int(row["size"]),
                                                      etag=row.get("etag"), last_modified_ms=_ms(row["last_modified"])))
        except (KeyError, TypeError, ValueError) as exc:
            broken[ref] = f"object {row.get('key')!r} cannot be read: {exc}"
    for ref, finding in sorted(wanted.items()):
        listed = sorted(keys.get(ref, []), key=lambda k: k.key)
        why = broken.get(ref) or ("no object listed" if not listed else None)
        why = why or next((p for k in listed if (p := key_problem(k.key, owned_prefix, quarantine_folder))), None)
        if why is None and len({k.key for k in listed}) != len(listed):
            why = "a key is listed twice"
        if why is not None:
            out.left_out.append((ref, why))
            continue
        _, _, topic_id, partition, segment_id = ref
        out.items.append(PlanItem.model_validate({
            "item_id": remote_item_id(topic_id, partition, segment_id, listed), "kind": REMOTE_SEGMENT,
            "broker_id": REMOTE_BROKER_ID, "topic": finding.get("topic"), "partition": partition,
            "topic_id": topic_id, "class": finding["class"], "bytes": sum(k.size for k in listed),
            "reason": finding.get("reason") or "", "segment_id": segment_id,
            "start_offset": int(finding["start_offset"]), "keys": tuple(listed),
        }))
    return out


def with_remote_items(plan: GcPlan, items: Iterable[PlanItem]) -> GcPlan:
    """``plan`` with ``items`` added (its remote items replaced), re-hashed."""
    local = tuple(i for i in plan.items if not i.is_remote)
    return GcPlan.model_validate({**plan.model_dump(by_alias=True, exclude={"items", "content_hash"}),
                                  "items": local + tuple(items)}).with_hash()
