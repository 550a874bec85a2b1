"""The GC plan as it is reviewed, approved and executed: typed, serialised, content-hashed.

A plan binds a set of items (partition directories to reclaim, ``kind = log_dir``; remote-tier segments,
``kind = remote_segment``) to the crawl run and metadata offset it was derived from. ``content_hash`` covers
everything an approver approves: the binding fields and every item with its preconditions. Changing any of it
changes the hash, so an approval never carries over to a changed plan, and the executor re-computes the hash before
it acts. Fields added for remote items are left out of a local item's JSON, so older plans keep their hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
    model_validator,
)

PLAN_FORMAT_VERSION = 1

LOG_DIR, REMOTE_SEGMENT = "log_dir", "remote_segment"
#: The broker id remote items carry: the remote tier is approved (signed statements name it among the brokers),
#: budgeted (``max_broker_*``) and tracked (its ``broker_state`` rows) as one more broker. Kafka node ids are
#: int32; this one is refused for a partition directory.
REMOTE_BROKER_ID = 2_147_483_647
#: Fields a local item never has; left out of its JSON when unset, so the content hash of every plan written before
#: they existed is unchanged.
_REMOTE_FIELDS = ("segment_id", "start_offset", "keys")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


#: One set object per distinct set of given fields, shared by the items that gave them (``PlanItem``).
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


class RemoteKey(_Frozen):
    """One object of a remote segment as the crawl listed it (the remote executor re-lists and compares)."""

    key: str = Field(description="relative to remote_tier.location")
    size: int = Field(ge=0)
    etag: str | None = Field(default=None, description="without quotes; None where the store has none (file://)")
    last_modified_ms: int


class PlanItem(_Frozen):
    """One partition directory (``kind = log_dir``) or one remote segment (``kind = remote_segment``: its keys,
    ``segment_id`` and ``start_offset``; ``broker_id`` is :data:`REMOTE_BROKER_ID`, no log dir) to quarantine, with
    the preconditions the executor re-checks."""

    item_id: str
    kind: Literal["log_dir", "remote_segment"] = LOG_DIR
    broker_id: int
    log_dir: str = Field(default="", description="log-dir path on the broker host (as registered in the config)")
    dir_name: str = Field(default="", description="directory name, a direct child of log_dir")
    topic: str | None = None
    partition: int | None = None
    topic_id: str | None = Field(default=None, description="partition.metadata topic id at crawl time, base64url")
    class_: str = Field(alias="class", description="finding class, e.g. recreated_topic")
    bytes: int = 0
    fingerprint: str = Field(default="", description="sha256 over sorted (file, size, mtime in whole seconds) at "
                             "crawl time")
    directory_id: str | None = Field(default=None, description="meta.properties directory.id of log_dir")
    reason: str = ""
    segment_id: str | None = Field(default=None, description="remote segment id (base64url Uuid)")
    start_offset: int | None = Field(default=None, description="remote segment's start offset")
    keys: tuple[RemoteKey, ...] | None = Field(default=None, description="every object of the remote segment")

    @model_validator(mode="after")
    def _kind_fields(self) -> PlanItem:
        if self.kind == LOG_DIR:
            if self.broker_id == REMOTE_BROKER_ID or any(getattr(self, f) is not None for f in _REMOTE_FIELDS):
                raise ValueError(f"item {self.item_id}: a log_dir item has no remote fields nor broker id "
                                 f"{REMOTE_BROKER_ID}")
        elif (self.broker_id != REMOTE_BROKER_ID or not self.keys or self.segment_id is None
              or self.start_offset is None or self.topic_id is None or self.partition is None
              or self.log_dir or self.dir_name):
            raise ValueError(f"item {self.item_id}: a remote_segment item needs broker_id {REMOTE_BROKER_ID}, keys, "
                             "segment_id, start_offset, topic_id and partition, and no log_dir/dir_name")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_remote_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.kind == LOG_DIR:
            data.pop("kind", None)
            for name in _REMOTE_FIELDS:
                data.pop(name, None)
        return data

    @property
    def is_remote(self) -> bool:
        return self.kind == REMOTE_SEGMENT

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
