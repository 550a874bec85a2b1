"""Findings → a reviewable ``GcPlan``, after every candidate passed the independent re-check.

Emission is all-or-nothing: each plannable finding is re-classified by ``pipelines.plan.recheck`` against the
``MetadataImage`` (plain Python, none of the detector's code). Any disagreement — another class, a replica the
controller assigns here, a protected topic, an unbound run or metadata offset, a grace period not elapsed — aborts
emission with :class:`~pipelines.errors.PlanError` after writing ``<plan_id>.disagreements.json``; no plan file is
written then. A run with nothing to reclaim still writes its (empty) plan: it records that the run at that metadata
offset found nothing, and an empty plan needs no approval to be harmless.

Output: ``<out_dir>/<plan_id>.json`` (``GcPlan.to_json``) and ``<out_dir>/<plan_id>.md`` (``render.render_plan``).
``out_dir`` is a local path or an fsspec URL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import fsspec

from pipelines.config.models import DetectConfig, PolicyConfig
from pipelines.detect import classes as C
from pipelines.errors import PlanError, RecheckDisagreement
from pipelines.metadata.image import MetadataImage
from pipelines.plan import policy as rules
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.plan.recheck import DirFacts, is_protected_dir, live_copies, recheck_item
from pipelines.plan.render import render_disagreements, render_plan

__all__ = ["Disagreement", "emit_plan", "item_id_for", "select_candidates"]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One candidate the re-check refused, with both verdicts."""

    broker_id: int
    log_dir: str
    dir_name: str
    detector_class: str
    recheck_class: str | None
    problem: str

    def to_json_dict(self) -> dict[str, Any]:
        return {"broker_id": self.broker_id, "log_dir": self.log_dir, "dir_name": self.dir_name,
                "detector_class": self.detector_class, "recheck_class": self.recheck_class, "problem": self.problem}


def item_id_for(broker_id: int, log_dir: str, dir_name: str, fingerprint: str) -> str:
    """Deterministic, short: the same directory with the same content always gets the same id."""
    key = "\x00".join((str(broker_id), log_dir, dir_name, fingerprint))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _as_dict(row: Any) -> dict[str, Any]:
    return row.asDict() if hasattr(row, "asDict") else dict(row)


def select_candidates(rows: Iterable[Any]) -> tuple[list[dict[str, Any]], list[DirFacts]]:
    """One pass over the findings: the plannable rows, and the live dirs' disk facts for the JBOD rules."""
    candidates: list[dict[str, Any]] = []
    live: list[DirFacts] = []
    for raw in rows:
        row = _as_dict(raw)
        if row.get("plannable"):
            candidates.append(row)
        if row.get("kind") == "live":
            live.append(DirFacts.from_finding(row))
    return candidates, live


#: Item fields whose values repeat across a plan (log dirs, classes, a topic's partitions): one object per value.
_REPEATED_FIELDS = ("log_dir", "topic", "topic_id", "class", "directory_id", "reason")


def _utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts


def _check_candidate(row: Mapping[str, Any], image: MetadataImage, *, run_id: str, copies: Any,
                     config: DetectConfig, policy: PolicyConfig, now: datetime) -> tuple[str, str | None]:
    """(re-check class, the first reason this candidate may not be planned or None)."""
    cls = row.get("class")
    got, why = recheck_item(row, image, row.get("directory_id"), copies=copies, config=config, now=now)
    if got != cls:
        return got, f"re-check says {got}: {why}"
    if row.get("run_id") != run_id:
        return got, f"finding belongs to run {row.get('run_id')}, plan is for run {run_id}"
    if row.get("metadata_offset") != image.last_offset:
        return got, (f"detected at metadata offset {row.get('metadata_offset')}, "
                     f"re-check image is at {image.last_offset}")
    if cls not in C.GARBAGE_CLASSES:
        return got, f"class {cls} is never planned"
    if not row.get("fingerprint"):
        return got, "no fingerprint: the executor could not verify the directory"
    if row.get("protected") or is_protected_dir(DirFacts.from_finding(row), image, config):
        return got, "protected topic"
    since = row.get("garbage_since")
    grace = max(config.grace_ms, policy.min_grace_ms)
    if since is None:
        return got, "no grace-clock start (garbage_since)"
    if now - _utc(since) < timedelta(milliseconds=grace):
        return got, f"garbage since {_utc(since).isoformat()}, grace {grace} ms not elapsed"
    return got, None


def _write(fs: Any, path: str, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its chunks, as they come) to a temporary name, then move it into place."""
    tmp = path + ".tmp"
    with fs.open(tmp, "w", encoding="utf-8") as f:
        for chunk in (text,) if isinstance(text, str) else text:
            f.write(chunk)
    fs.mv(tmp, path)


def emit_plan(
    findings_rows_iter: Iterable[Any],
    image: MetadataImage,
    *,
    cluster: str,
    run_id: str,
    created_by: str,
    policy: PolicyConfig,
    out_dir: str,
    config: DetectConfig | None = None,
    now: datetime | None = None,
    cluster_id: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    live_rows: Iterable[Any] | None = None,
) -> GcPlan:
    """Re-check every plannable finding, then write and return the hash-bound plan.

    ``storage_options`` are fsspec's for ``out_dir`` (an object store's endpoint and credentials).
    ``live_rows``: when given, the live findings the JBOD rules compare candidates with (read first), and
    ``findings_rows_iter`` is streamed: each plannable row is re-checked as it arrives and only its plan item is
    kept (how the plan step reads a fleet's findings). None: ``findings_rows_iter`` holds both (one pass).

    Raises:
        PlanError: the image is incomplete, or any candidate failed the re-check (report written beside the plan).
        PolicyViolation: the plan breaks a budget or another plan-level rule of ``policy``.
    """
    config = config or DetectConfig()
    now = now or datetime.now(timezone.utc)
    fs, root = fsspec.core.url_to_fs(out_dir, **(storage_options or {}))
    fs.makedirs(root, exist_ok=True)
    stamp = f"{cluster}-{now:%Y%m%dT%H%M%SZ}"
    if live_rows is None:
        candidates, live = select_candidates(findings_rows_iter)
        stream: Iterable[Any] = candidates
    else:  # streamed: only the live dirs' facts and the emitted items stay in memory
        live = [DirFacts.from_finding(_as_dict(r)) for r in live_rows]
        stream = (row for row in map(_as_dict, findings_rows_iter) if row.get("plannable"))
    copies = live_copies(live)
    refused: list[Disagreement] = []
    items: list[PlanItem] = []
    shared: dict[Any, Any] = {}
    n_candidates = 0
    for row in stream:
        if not n_candidates and not image.complete:
            raise PlanError("controller image is incomplete (" + "; ".join(image.incomplete_reasons)
                            + "): nothing can be planned")
        n_candidates += 1
        got, problem = _check_candidate(row, image, run_id=run_id, copies=copies, config=config, policy=policy,
                                        now=now)
        if problem is not None:
            refused.append(Disagreement(int(row["broker_id"]), row["log_dir"], row["dir_name"], row.get("class", ""),
                                        got, problem))
            continue
        fields = {
            "item_id": item_id_for(row["broker_id"], row["log_dir"], row["dir_name"], row["fingerprint"]),
            "broker_id": row["broker_id"], "log_dir": row["log_dir"], "dir_name": row["dir_name"],
            "topic": row.get("topic"), "partition": row.get("partition"), "topic_id": row.get("topic_id"),
            "class": row["class"], "bytes": row.get("bytes") or 0, "fingerprint": row["fingerprint"],
            "directory_id": row.get("directory_id"), "reason": row.get("reason") or "",
        }
        for name in _REPEATED_FIELDS:  # each row brings its own copy of these: keep one
            fields[name] = shared.setdefault(fields[name], fields[name])
        items.append(PlanItem.model_validate(fields))
    if refused:
        report = f"{stamp}-rejected"
        body = {"cluster": cluster, "run_id": run_id, "metadata_offset": image.last_offset,
                "candidates": n_candidates, "disagreements": [d.to_json_dict() for d in refused]}
        _write(fs, f"{root}/{report}.disagreements.json", json.dumps(body, indent=2, sort_keys=True))
        _write(fs, f"{root}/{report}.disagreements.md", render_disagreements(body))
        raise RecheckDisagreement(f"re-check refused {len(refused)} of {n_candidates} candidates; no plan written; "
                        f"report: {out_dir.rstrip('/')}/{report}.disagreements.json")
    items.sort(key=lambda i: (i.broker_id, i.log_dir, i.dir_name))
    digest = hashlib.sha256("\n".join([run_id, str(image.last_offset), *(i.item_id for i in items)]).encode())
    plan = GcPlan(
        plan_id=f"{stamp}-{digest.hexdigest()[:8]}", cluster=cluster, cluster_id=cluster_id, created_at=now,
        created_by=created_by, run_id=run_id, metadata_offset=image.last_offset, metadata_complete=image.complete,
        expires_at=now + timedelta(milliseconds=policy.plan_expiry_ms), items=tuple(items),
    ).with_hash()
    rules.check_plan(plan, policy, detect_grace_ms=config.grace_ms)
    _write(fs, f"{root}/{plan.plan_id}.json", plan.iter_json())
    _write(fs, f"{root}/{plan.plan_id}.md", render_plan(plan))
    return plan

