"""What the executor re-verifies on disk (and in the controller metadata) immediately before it acts.

Host binding (whole run): every log dir the plan touches on this broker has a ``meta.properties`` whose
``cluster.id``, node id and ``directory.id`` match the plan. Per item: confinement, existence, the topic id in
``partition.metadata``, the fingerprint (the crawl's own function), no symlink inside, and the controller's
current assignment. A per-item failure is an :class:`ItemSkipped` reason; nothing is forced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import DecodeError, PreconditionFailed
from pipelines.execute.confine import confined_child
from pipelines.kafka.listing import FileEntry, LocalLister, read_regular_file
from pipelines.kafka.logdir import fingerprint_entries, fingerprint_triples
from pipelines.kafka.meta_properties import read_meta_properties
from pipelines.kafka.partition_metadata import read_partition_metadata
from pipelines.plan.model import GcPlan, PlanItem


class ItemSkipped(PreconditionFailed):
    """One item fails a precondition; the item is left untouched and the run goes on."""


@dataclass(frozen=True, slots=True)
class VerifiedItem:
    item: PlanItem
    path: Path
    entries: tuple[FileEntry, ...]
    fingerprint: str

    @property
    def bytes(self) -> int:
        return sum(e.size for e in self.entries)


#: ``(item, broker_id) -> reason`` when the controller still assigns the replica, else None.
AssignmentCheck = Callable[[PlanItem, int], "str | None"]


def normalise_fingerprint(value: str) -> str:
    return value.split(":", 1)[1] if value.startswith("sha256:") else value


def check_host(plan: GcPlan, broker_id: int, log_dir: str, items: list[PlanItem]) -> None:
    """Raises PreconditionFailed unless ``log_dir/meta.properties`` matches the plan's cluster, broker and dir id."""
    path = Path(log_dir) / "meta.properties"
    try:
        meta = read_meta_properties(read_regular_file(str(path)))
    except OSError as exc:
        raise PreconditionFailed(f"cannot read {path}: {exc.strerror or exc}") from None
    if not meta.kafka_would_accept:
        raise PreconditionFailed(f"{path} is not a valid meta.properties: {[str(p) for p in meta.problems]}")
    if plan.cluster_id is None:
        raise PreconditionFailed(f"plan {plan.plan_id} records no cluster_id; it cannot be bound to this host")
    if meta.cluster_id != plan.cluster_id:
        raise PreconditionFailed(f"{path}: cluster.id {meta.cluster_id} is not the plan's {plan.cluster_id} "
                                 "(plan from another cluster)")
    if meta.node_id != broker_id:
        raise PreconditionFailed(f"{path}: node id {meta.node_id} is not broker {broker_id} (plan for another "
                                 "broker, or wrong --broker)")
    for item in items:
        if item.directory_id is not None and str(meta.directory_id) != item.directory_id:
            raise PreconditionFailed(f"{path}: directory.id {meta.directory_id} is not the plan's "
                                     f"{item.directory_id} (another disk is mounted here)")


def verify_item(item: PlanItem, broker_id: int, assignment: AssignmentCheck | None) -> VerifiedItem:
    """Every per-item precondition; raises ItemSkipped with the reason."""
    try:
        path = confined_child(item.log_dir, item.dir_name)
    except FileNotFoundError:
        raise ItemSkipped(f"{item.log_dir}/{item.dir_name} no longer exists") from None
    except PreconditionFailed as exc:
        raise ItemSkipped(str(exc)) from None
    try:
        entries = tuple(LocalLister().list_dir(str(path)))
    except OSError as exc:
        raise ItemSkipped(f"cannot list {path}: {exc.strerror or exc}") from None
    links = [e.name for e in entries if e.is_symlink]
    if links:
        raise ItemSkipped(f"{path} contains symlinks {links}; refusing to move it")
    current_id = _topic_id(path)
    if current_id != item.topic_id:
        raise ItemSkipped(f"{path}/partition.metadata topic id is {current_id}, the plan expected {item.topic_id}")
    fingerprint = fingerprint_entries(fingerprint_triples(entries))
    if fingerprint != normalise_fingerprint(item.fingerprint):
        raise ItemSkipped(f"{path} changed since the crawl (fingerprint {fingerprint[:12]}… is not "
                          f"{normalise_fingerprint(item.fingerprint)[:12]}…)")
    if assignment is not None:
        reason = assignment(item, broker_id)
        if reason is not None:
            raise ItemSkipped(reason)
    return VerifiedItem(item, path, entries, fingerprint)


def _topic_id(path: Path) -> str | None:
    try:
        data = read_regular_file(str(path / "partition.metadata"))  # a FIFO must not block the executor
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ItemSkipped(f"cannot read {path}/partition.metadata: {exc.strerror or exc}") from None
    try:
        return str(read_partition_metadata(data).topic_id)
    except DecodeError:
        return None


