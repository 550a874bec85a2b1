"""The GC plan as it is reviewed, approved and executed: typed, serialised, content-hashed.

A plan binds a set of items (partition directories to reclaim) to the crawl run and metadata offset it was
derived from. ``content_hash`` covers everything an approver approves: the binding fields and every item
with its preconditions. Changing any of it changes the hash, so an approval never carries over to a changed
plan, and the executor re-computes the hash before it acts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

PLAN_FORMAT_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


#: One set object per distinct set of given fields, shared by the items that gave them (``PlanItem``).
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


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

    @model_validator(mode="after")
    def _share_fields_set(self) -> PlanItem:
        # pydantic keeps a set of the fields given per instance: 728 of an item's 1,280 bytes. Items are frozen, so
        # the items given the same fields (every item a plan emits or reads) can share one.
        given = self.__pydantic_fields_set__
        object.__setattr__(self, "__pydantic_fields_set__", _FIELDS_SETS.setdefault(frozenset(given), given))
        return self


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
        """The plan file's text: ``json.dumps(model_dump(mode="json"), indent=2, sort_keys=True)``."""
        return "".join(self.iter_json())

    def iter_json(self) -> Iterator[str]:
        """:meth:`to_json` in chunks, one item at a time (a 100k-item plan is never one dict or one string)."""
        return _iter_document(self, self.items, indent=True)

    @classmethod
    def from_json(cls, text: str) -> GcPlan:
        return cls.model_validate_json(text)


_ITEMS = TypeAdapter(list[PlanItem])
#: Items serialised per chunk: one ``json.dumps`` call per batch, not per item (the encoder's set-up dominates).
_BATCH = 1024
_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_INDENTED = json.JSONEncoder(sort_keys=True, indent=2)


def _iter_document(plan: GcPlan, items: Iterable[PlanItem], *, indent: bool,
                   exclude: frozenset[str] = frozenset()) -> Iterator[str]:
    """The JSON of ``plan`` in chunks, exactly as ``json.dumps(..., sort_keys=True)`` writes the whole document:
    with ``indent=2`` (``indent``), else compact (``separators=(",", ":")``); its items a batch at a time."""
    encoder = _INDENTED if indent else _COMPACT

    def dump(value: Any) -> str:  # a top-level value, written one level deep
        return encoder.encode(value).replace("\n", "\n  ")

    def dump_items(batch: list[PlanItem]) -> str:  # the items of a list, without its brackets, two levels deep
        text = encoder.encode(_ITEMS.dump_python(batch, mode="json", by_alias=True))
        return "\n  " + text[2:-2].replace("\n", "\n  ") if indent else text[1:-1]

    key_pad, colon = ("\n  ", ": ") if indent else ("", ":")
    head = plan.model_dump(mode="json", by_alias=True, exclude={"items", *exclude})
    yield "{"
    for n, key in enumerate(sorted([*head, "items"])):
        yield ("," if n else "") + key_pad + json.dumps(key) + colon
        if key != "items":
            yield dump(head[key])
            continue
        written = False
        iterator = iter(items)
        while batch := list(islice(iterator, _BATCH)):
            yield ("," if written else "[") + dump_items(batch)
            written = True
        yield key_pad + "]" if written else "[]"
    yield ("\n" if indent else "") + "}"


def iter_canonical_json(plan: GcPlan) -> Iterator[str]:
    """The text :func:`compute_content_hash` hashes, in chunks: the canonical JSON (keys sorted, no spaces) of the
    plan without ``content_hash``, its items in ``item_id`` order."""
    return _iter_document(plan, sorted(plan.items, key=lambda i: i.item_id), indent=False,
                          exclude=frozenset({"content_hash"}))


def compute_content_hash(plan: GcPlan) -> str:
    """sha256 of the canonical JSON of everything but the hash itself (items in item_id order), hashed as it is
    written (:func:`iter_canonical_json`)."""
    digest = hashlib.sha256()
    for chunk in iter_canonical_json(plan):
        digest.update(chunk.encode("utf-8"))
    return "sha256:" + digest.hexdigest()
