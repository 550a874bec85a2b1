"""The GC plan as it is reviewed, approved and executed: typed, serialised, content-hashed.

A plan binds a set of items (partition directories to reclaim) to the crawl run and metadata offset it was
derived from. ``content_hash`` covers everything an approver approves: the binding fields and every item
with its preconditions. Changing any of it changes the hash, so an approval never carries over to a changed
plan, and the executor re-computes the hash before it acts.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

PLAN_FORMAT_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class PlanItem(_Frozen):
    """One partition directory to quarantine, with the preconditions the executor re-checks on disk."""

    item_id: str
    broker_id: int
    log_dir: str = Field(description="log-dir path on the broker host (as registered in the config)")
    dir_name: str = Field(description="directory name, a direct child of log_dir")
    topic: str | None = None
    partition: int | None = None
    topic_id: str | None = Field(default=None, description="partition.metadata topic id at crawl time, base64url")
    class_: str = Field(alias="class", description="finding class, e.g. recreated_topic")
    bytes: int = 0
    fingerprint: str = Field(description="sha256 over sorted (file, size, mtime in whole seconds) at crawl time")
    directory_id: str | None = Field(default=None, description="meta.properties directory.id of log_dir")
    reason: str = ""


class GcPlan(_Frozen):
    """A reviewable, hash-bound list of items for one cluster."""

    format_version: int = PLAN_FORMAT_VERSION
    plan_id: str
    cluster: str
    cluster_id: str | None = Field(default=None, description="meta.properties cluster.id the crawl saw")
    created_at: datetime
    created_by: str
    run_id: str
    metadata_offset: int | None = None
    metadata_complete: bool = True
    expires_at: datetime | None = None
    items: tuple[PlanItem, ...] = ()
    content_hash: str = ""

    @model_validator(mode="after")
    def _hash_matches(self) -> GcPlan:
        if self.content_hash and self.content_hash != compute_content_hash(self):
            raise ValueError("content_hash does not match the plan's content")
        return self

    @property
    def total_bytes(self) -> int:
        return sum(i.bytes for i in self.items)

    def with_hash(self) -> GcPlan:
        """Return a copy whose ``content_hash`` is computed from its content."""
        return self.model_copy(update={"content_hash": compute_content_hash(self)})

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GcPlan:
        return cls.model_validate_json(text)


def _hashed_content(plan: GcPlan) -> dict[str, Any]:
    body = plan.model_dump(mode="json", by_alias=True, exclude={"content_hash"})
    body["items"] = sorted(body["items"], key=lambda i: i["item_id"])
    return body


def compute_content_hash(plan: GcPlan) -> str:
    """sha256 of the canonical JSON of everything but the hash itself (items in item_id order)."""
    canonical = json.dumps(_hashed_content(plan), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
