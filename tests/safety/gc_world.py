"""A generated cluster, randomly disturbed, run end to end (crawl → findings → plan → approve → apply), no Spark.

Also the test's own, independent view of what the controller assigns: directory names are split with a local
regex and ``partition.metadata`` is read as text, with none of the crawler's or the classifier's code; only the
replayed ``MetadataImage`` (the controller's truth) is shared with the product.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pipelines.config.load import load_config
from pipelines.config.models import AppConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.detect import classes as C
from pipelines.execute.controller_check import ControllerCheck, load_controller_check
from pipelines.execute.observe import observe_dir
from pipelines.execute.preconditions import HostRules
from pipelines.kafka.logdir import fingerprint_dir
from pipelines.metadata import load_metadata
from pipelines.metadata.image import MetadataImage
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.plan.recheck import DirFacts, classify, is_protected_dir, live_copies
from pipelines.tables.schemas import ALL_TABLES

RUN_ID = "prop-run"
DAY = timedelta(days=1)

_LIVE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SUFFIXED = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)\.[0-9a-f]{32}-(?P<kind>future|stray|delete)$")

DirKey = tuple[int, str, str]
"""(broker_id, log dir path, dir name)."""


# -- the test's own reading of the disk ---------------------------------------------------------------------------


def name_parts(name: str) -> tuple[str, str, int] | None:
    """(kind, topic, partition) of a partition dir name; None when it is not one (or is the metadata log)."""
    m = _SUFFIXED.match(name)
    if m is not None:
        return m["kind"], m["topic"], int(m["partition"])
    m = _LIVE.match(name)
    if m is not None and m["topic"] != "__cluster_metadata":
        return "live", m["topic"], int(m["partition"])
    return None


def topic_id_on_disk(path: Path) -> str | None:
    """The ``topic_id:`` value of ``path/partition.metadata`` as written, or None."""
    try:
        text = (path / "partition.metadata").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            return value.strip() or None
    return None


def controller_assignments(image: MetadataImage) -> frozenset[tuple[int, str, int]]:
    """(broker, topic id, partition) for every broker in ``replicas`` or ``adding_replicas``, from the image."""
    out = set()
    for tid, topic in image.topics.by_id.items():
        for p, part in topic.partitions.items():
            for broker in (*part.replicas, *part.adding_replicas):
                out.add((broker, str(tid), p))
    return frozenset(out)


def assigned_dirs(config: AppConfig, image: MetadataImage,
                  kinds: tuple[str, ...] = ("live", "future", "stray")) -> dict[DirKey, str]:
    """Every dir of ``kinds`` whose (broker, topic id, partition) the controller assigns → its kind.

    ``-delete`` dirs are out of the invariant by default: Kafka itself already queued them for deletion
    (``pipelines.plan.recheck``).
    """
    wanted = controller_assignments(image)
    out: dict[DirKey, str] = {}
    for broker in config.brokers:
        for log_dir in broker.log_dirs:
            for entry in sorted(Path(log_dir).iterdir()):
                parts = name_parts(entry.name) if entry.is_dir() else None
                if parts is None or parts[0] not in kinds:
                    continue
                tid = topic_id_on_disk(entry)
                if tid is not None and (broker.broker_id, tid, parts[2]) in wanted:
                    out[(broker.broker_id, log_dir, entry.name)] = parts[0]
    return out


def _valid_id(text: str | None) -> bool:
    from pipelines.errors import DecodeError
    from pipelines.kafka.uuid import Uuid

    try:
        return text is not None and Uuid.from_string(text) is not None
    except DecodeError:
        return False


def delete_dirs_without_id_of_assigned(config: AppConfig, image: MetadataImage) -> set[DirKey]:
    """``-delete`` dirs with no valid topic id whose topic NAME and partition the controller assigns to the broker.

    The executor, which cannot prove such a dir holds another topic id, refuses it; so the planner never plans it.
    """
    names = {(broker, topic.name, p) for topic in image.topics.by_id.values() for p, part in topic.partitions.items()
             for broker in (*part.replicas, *part.adding_replicas)}
    out: set[DirKey] = set()
    for broker in config.brokers:
        for log_dir in broker.log_dirs:
            for entry in Path(log_dir).iterdir():
                parts = name_parts(entry.name) if entry.is_dir() else None
                if parts is not None and parts[0] == "delete" and not _valid_id(topic_id_on_disk(entry)) \
                        and (broker.broker_id, parts[1], parts[2]) in names:
                    out.add((broker.broker_id, log_dir, entry.name))
    return out


def tree_digest(path: Path) -> dict[str, str]:
    """relative path → sha256 of the content (``dir`` for directories), symlinks by target."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(path):
        rel = os.path.relpath(dirpath, path)
        for d in dirs:
            out[os.path.normpath(os.path.join(rel, d))] = "dir"
        for f in files:
            p = os.path.join(dirpath, f)
            key = os.path.normpath(os.path.join(rel, f))
            out[key] = ("link:" + os.readlink(p)) if os.path.islink(p) else hashlib.sha256(
                Path(p).read_bytes()).hexdigest()
    return out


def log_dir_digest(config: AppConfig) -> dict[DirKey, dict[str, str]]:
    """Digest of every top-level partition-like dir of every registered log dir."""
    return {(b.broker_id, d, e.name): tree_digest(e)
            for b in config.brokers for d in b.log_dirs for e in sorted(Path(d).iterdir())
            if e.is_dir() and not e.is_symlink()}


# -- random disturbances on top of a generated cluster -------------------------------------------------------------


def _unique(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def _fresh_topic_id(rng: random.Random) -> str:
    from pipelines.kafka.uuid import Uuid

    while True:
        u = Uuid.from_bytes(rng.getrandbits(128).to_bytes(16, "big"))
        if not u.is_reserved:
            return str(u)


def _set_topic_id(path: Path, topic_id: str) -> None:
    from pipelines.kafka.partition_metadata import write_partition_metadata
    from pipelines.kafka.uuid import Uuid

    (path / "partition.metadata").write_bytes(write_partition_metadata(Uuid.from_string(topic_id)))


def _age(path: Path, rng: random.Random, now: datetime) -> None:
    """Make the dir (not its files) look old or young relative to the simulated clock."""
    when = (now - timedelta(days=rng.choice([0, 0.0001, 3, 30]))).timestamp()
    os.utime(path, (when, when))


MUTATIONS = ("copy_other_jbod", "move_jbod", "rename_suffix", "copy_suffix", "copy_other_broker", "copy_new_id")


def mutate(config: AppConfig, rng: random.Random, steps: int, now: datetime) -> list[str]:
    """Apply ``steps`` random disturbances to live dirs; returns what was done (for failure messages).

    The disturbances are what reassignments, JBOD moves and interrupted deletes leave behind: a copy of a replica in
    another log dir (same or fresh topic id), a replica moved between log dirs, a replica renamed or copied to
    ``-stray``/``-future``/``-delete``, and a copy on another broker.
    """
    done: list[str] = []
    brokers = {b.broker_id: list(b.log_dirs) for b in config.brokers}
    for _ in range(steps):
        live = [(b, d, e) for b, dirs in sorted(brokers.items()) for d in dirs for e in sorted(Path(d).iterdir())
                if e.is_dir() and (name_parts(e.name) or ("",))[0] == "live"]
        if not live:
            return done
        broker, log_dir, src = rng.choice(live)
        op = rng.choice(MUTATIONS)
        others = [d for d in brokers[broker] if d != log_dir]
        if op in ("copy_other_jbod", "move_jbod") and others:
            dst = Path(rng.choice(others)) / src.name
            if dst.exists():
                continue
            (shutil.move if op == "move_jbod" else shutil.copytree)(str(src), str(dst))
        elif op in ("rename_suffix", "copy_suffix"):
            suffix = rng.choice(["stray", "future", "delete"])
            dst = Path(rng.choice([log_dir, *others])) / f"{src.name}.{_unique(rng)}-{suffix}"
            if dst.exists():  # hypothesis's random may draw the same unique id twice (e.g. all zeros)
                continue
            (shutil.move if op == "rename_suffix" else shutil.copytree)(str(src), str(dst))
            _age(dst, rng, now)
        elif op == "copy_other_broker" and len(brokers) > 1:
            other = rng.choice([b for b in brokers if b != broker])
            dst = Path(rng.choice(brokers[other])) / src.name
            if dst.exists():
                continue
            shutil.copytree(src, dst)
        elif op == "copy_new_id":
            other = rng.choice(sorted(brokers))
            dst = Path(rng.choice(brokers[other])) / src.name
            if dst.exists():
                continue
            shutil.copytree(src, dst)
            _set_topic_id(dst, _fresh_topic_id(rng))
        else:
            continue
        done.append(f"{op}: broker {broker} {src} -> {dst}")
    return done


# -- the product pipeline ------------------------------------------------------------------------------------------


@dataclass
class Crawled:
    config: AppConfig
    image: MetadataImage
    now: datetime
    cluster_id: str
    partition_dirs: list[dict[str, Any]]
    log_dirs: list[dict[str, Any]]
    findings: list[dict[str, Any]] = field(default_factory=list)


def crawl(config_path: Path, now: datetime, cluster_id: str) -> Crawled:
    config = load_config(str(config_path))
    result = crawl_local(config.brokers, run_id=RUN_ID, cluster=config.cluster, crawled_at=now)
    image = load_metadata(config.metadata.source).image
    return Crawled(config, image, now, cluster_id, result.partition_dirs, result.log_dirs)


def grace_start(c: Crawled, controller: ControllerCheck, grace: timedelta, f: DirFacts) -> datetime | None:
    """When the controller's event history dates this dir's becoming garbage, if the grace floor has passed since.

    An honest detector dates garbage by the metadata events (so does the executor, which refuses a younger item);
    the property's planted copies can be younger than the floor, and those are not plannable yet.
    """
    since, _ = controller.garbage_since(observe_dir(f.log_dir, f.dir_name), c.now)
    return since if since is not None and c.now - since >= grace else None


def _finding(c: Crawled, f: DirFacts, pd: dict[str, Any], cls: str, reason: str, protected: bool,
             garbage_since: datetime | None) -> dict[str, Any]:
    """A findings row; plannable exactly when it has a grace-clock start (``garbage_since``)."""
    evidence = {"disk": {"topic_id": f.topic_id, "partition_metadata_status": f.partition_metadata_status,
                         "directory_id": f.directory_id,
                         "dir_mtime_ms": None if f.dir_mtime is None else int(f.dir_mtime.timestamp() * 1000)}}
    row = {
        "run_id": RUN_ID, "cluster": pd["cluster"], "broker_id": f.broker_id, "log_dir": f.log_dir,
        "dir_name": f.dir_name, "topic": f.topic, "partition": f.partition, "topic_id": f.topic_id, "class": cls,
        "protected": protected, "reason": reason, "bytes": pd["bytes"], "kind": f.kind,
        "metadata_offset": c.image.last_offset,
        "garbage_since": garbage_since, "plannable": garbage_since is not None,
        "evidence": json.dumps(evidence, sort_keys=True), "fingerprint": pd["fingerprint"],
        "directory_id": f.directory_id, "detected_at": c.now,
    }
    return {col: row.get(col) for col in ALL_TABLES["findings"].column_names}


def facts_of(c: Crawled) -> list[tuple[DirFacts, dict[str, Any]]]:
    dir_ids = {(r["broker_id"], r["log_dir"]): r["directory_id"] for r in c.log_dirs}
    return [(DirFacts.from_partition_dir(r, dir_ids.get((r["broker_id"], r["log_dir"]))), r) for r in c.partition_dirs]


def honest_findings(c: Crawled, *, dated: bool = True) -> list[dict[str, Any]]:
    """Findings as the detector should write them: the product's plain-Python classifier on every crawled dir.

    ``dated``: garbage is dated by the controller's event history and plannable once the grace floor has passed, as
    the detector does. Without it every garbage dir claims 10 days: the lies property wants the most candidates to
    forge from, and the executor's own grace refusal is one of the rules it checks.
    """
    pairs = facts_of(c)
    copies = live_copies(f for f, _ in pairs)
    controller = load_controller_check(c.config.metadata) if dated else None  # the executor's own re-read
    grace = max(HostRules.from_config(c.config, c.now).min_grace, timedelta(milliseconds=c.config.detect.grace_ms))
    rows = []
    for f, pd in pairs:
        cls, reason = classify(f, c.image, copies=copies, config=c.config.detect, now=c.now)
        protected = is_protected_dir(f, c.image, c.config.detect)
        since = None
        if C.is_plannable(cls, protected):
            since = c.now - 10 * DAY if controller is None else grace_start(c, controller, grace, f)
        rows.append(_finding(c, f, pd, cls, reason, protected, since))
    return rows


def lying_findings(c: Crawled, assigned: dict[DirKey, str]) -> list[dict[str, Any]]:
    """A broken detector: every assigned dir is claimed to be plannable garbage of a plausible class."""
    claim = {"live": C.NOT_A_REPLICA, "future": C.ABANDONED_FUTURE, "stray": C.STRAY}
    rows = []
    for f, pd in facts_of(c):
        kind = assigned.get((f.broker_id, f.log_dir, f.dir_name))
        if kind is not None and not is_protected_dir(f, c.image, c.config.detect):  # refused for the re-check only
            rows.append(_finding(c, f, pd, claim[kind], "lie", False, c.now - 10 * DAY))
    return rows


def forged_plan(c: Crawled, assigned: dict[DirKey, str]) -> GcPlan:
    """A plan listing every assigned dir (as if emission had been bypassed), hash-bound and ready to approve."""
    items = []
    for (broker, log_dir, name), _kind in sorted(assigned.items()):
        _, topic, partition = name_parts(name)  # type: ignore[misc]
        path = Path(log_dir) / name
        if topic.startswith("__"):
            continue  # internal topics are refused at registration already; not what this plan is about
        items.append(PlanItem.model_validate({
            "item_id": hashlib.sha256(f"{broker}{path}".encode()).hexdigest()[:16], "broker_id": broker,
            "log_dir": log_dir, "dir_name": name, "topic": topic, "partition": partition,
            "topic_id": topic_id_on_disk(path), "class": C.NOT_A_REPLICA, "bytes": 0,
            "fingerprint": fingerprint_dir(str(path)), "directory_id": None, "reason": "forged",
        }))
    return GcPlan(plan_id="forged", cluster=c.config.cluster, cluster_id=c.cluster_id, created_at=c.now,
                  created_by="forger", run_id=RUN_ID, metadata_offset=c.image.last_offset,
                  items=tuple(items)).with_hash()


def now_of(truth_path: Path) -> tuple[datetime, str]:
    truth = json.loads(truth_path.read_text())
    return datetime.fromtimestamp(truth["now_ms"] / 1000, tz=timezone.utc), truth["cluster_id"]
