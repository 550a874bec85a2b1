"""The executor's node_exporter textfile on the broker host: ``<metrics.textfile_dir>/logdir_gc_executor_<cluster>_
<broker>.prom``.

Counters (items by outcome, bytes by action, refusals by reason) accumulate across executor runs: each update
reads the file back under a lock, adds, and replaces it atomically. The last apply's time and outcome are gauges.
Dry runs change nothing on disk and record nothing. Nothing is written unless ``metrics.textfile_dir`` is set.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pipelines.config.models import AppConfig
from pipelines.metrics import catalog as m
from pipelines.metrics.families import Families
from pipelines.metrics.textfile import file_lock, read_samples, write_atomic

_ITEM_OUTCOMES = {"quarantined": "quarantined", "skipped": "skipped", "failed": "failed"}
"""Report actions counted: ``already_done`` (quarantined by an earlier run of the same plan) is not counted twice."""


def textfile_path(config: AppConfig, broker: int) -> Path | None:
    if config.metrics.textfile_dir is None:
        return None
    return Path(config.metrics.textfile_dir) / f"logdir_gc_executor_{config.cluster}_{broker}.prom"


def _update(config: AppConfig, broker: int, change: Families, outcome: str | None, now: float | None) -> Path | None:
    """Add the counters of ``change`` to the file's; set the last-apply gauges when ``outcome`` is given."""
    path = textfile_path(config, broker)
    if path is None:
        return None
    base = {"cluster": config.cluster, "broker": broker}
    with file_lock(path):
        previous = read_samples(path)
        families = Families()
        for spec in m.EXECUTOR:  # carry every series of the file over, then apply the change
            for (name, labels), value in previous.items():
                if name == spec.name and {k for k, _ in labels} == set(spec.labels):
                    families.set(spec, value, **dict(labels))
        for spec in m.EXECUTOR:
            for key, value in change.samples(spec).items():
                families.add(spec, value, **dict(zip(spec.labels, key, strict=True)))
        if outcome is not None:
            families.set(m.EXEC_LAST_APPLY, time.time() if now is None else now, **base)
            for o in m.APPLY_OUTCOMES:
                families.set(m.EXEC_LAST_OUTCOME, 1 if o == outcome else 0, **base, outcome=o)
        write_atomic(path, families.text())
    return path


def record_apply(config: AppConfig, broker: int, items: list[tuple[str, int]], *,
                 now: float | None = None) -> Path | None:
    """An executed apply: ``items`` are (action, bytes) per plan item of this broker (``ApplyReport.items``)."""
    change = Families()
    base = {"cluster": config.cluster, "broker": broker}
    for action, size in items:
        outcome = _ITEM_OUTCOMES.get(action)
        if outcome is None:
            continue
        change.add(m.EXEC_ITEMS, 1, **base, outcome=outcome)
        if action == "quarantined":
            change.add(m.EXEC_BYTES, size, **base, action="quarantined")
    actions = {a for a, _ in items}
    result = "failed" if "failed" in actions else "partial" if actions & {"skipped", "not_reached"} else "applied"
    return _update(config, broker, change, result, now)


def record_refusal(config: AppConfig, broker: int, reason: str, *, now: float | None = None) -> Path | None:
    """An apply refused as a whole (lock held, policy, precondition): counted, and the last outcome."""
    change = Families()
    change.add(m.EXEC_REFUSALS, 1, cluster=config.cluster, broker=broker, reason=reason)
    return _update(config, broker, change, "refused", now)


def record_purge(config: AppConfig, broker: int, items: int, purged_bytes: int) -> Path | None:
    change = Families()
    base = {"cluster": config.cluster, "broker": broker}
    change.add(m.EXEC_ITEMS, items, **base, outcome="purged")
    change.add(m.EXEC_BYTES, purged_bytes, **base, action="purged")
    return _update(config, broker, change, None, None)


def record_restore(config: AppConfig, broker: int, restored_paths: list[str]) -> Path | None:
    """An executed restore: the partition dirs now back at ``restored_paths`` (their bytes are measured)."""
    if textfile_path(config, broker) is None:
        return None
    change = Families()
    base = {"cluster": config.cluster, "broker": broker}
    change.add(m.EXEC_ITEMS, len(restored_paths), **base, outcome="restored")
    change.add(m.EXEC_BYTES, sum(_tree_bytes(p) for p in restored_paths), **base, action="restored")
    return _update(config, broker, change, None, None)


def refusal_reason(exc: BaseException) -> str:
    """The ``reason`` label of a refused apply."""
    from pipelines.errors import ExecutorBusy, PlanError, PreconditionFailed

    if isinstance(exc, ExecutorBusy):
        return "lock_held"
    if isinstance(exc, PlanError):
        return "policy"
    if isinstance(exc, PreconditionFailed):
        return "precondition"
    return "error"


def _tree_bytes(path: str) -> int:
    """Apparent size of the files in a partition dir (Kafka keeps no subdirectories there); 0 if unreadable."""
    try:
        with os.scandir(path) as entries:
            return sum(e.stat(follow_symlinks=False).st_size for e in entries if e.is_file(follow_symlinks=False))
    except OSError:
        return 0
