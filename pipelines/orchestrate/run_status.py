"""Which steps of a run finished: ``crawl_runs`` and ``ingest_runs``, and the check detect and plan start with.

A step records its outcome as its last write, and a rerun first marks its run ``running``, so a run whose crawl or
ingest died half-way (a killed driver, a lost cluster) never reads as succeeded: it has no row or a ``running`` one.
A failure the step sees is recorded as ``failed``. Detect and plan then refuse such a run instead of classifying
nothing and reporting "nothing plannable", which a scheduler would take for a good night.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

from pipelines.errors import StepRefused
from pipelines.tables.base import TableStore

#: A crawl with unreadable parts (``partial``: each one a ``crawl_errors`` row) still classifies what it read.
USABLE_CRAWL = frozenset({"succeeded", "partial"})
RUNNING, SUCCEEDED, FAILED = "running", "succeeded", "failed"

T = TypeVar("T")
log = logging.getLogger(__name__)


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def tracked(store: TableStore, table: str, running: Mapping[str, Any], body: Callable[[], tuple[T, Mapping[str, Any]]],
            *, reader: TableStore | None = None) -> T:
    """Run ``body`` and write the row it returns as the run's row of ``table``.

    A rerun (``table`` has a row for the run id already) first rewrites that row as ``running``, so the earlier
    outcome never outlives the rows being replaced. A new run id gets no row until its outcome (two Delta commits
    fewer): dying half-way leaves no row, which detect and plan refuse as they refuse ``running``.

    ``body`` returns (its result, the final row). When it raises, the row is written with status ``failed`` (best
    effort: a second failure there is not allowed to hide the first) and the error goes on. ``reader``: a store that
    looks for the rerun's row without a Spark job (delta-rs over the same warehouse); ``store`` when it cannot read it.
    """
    where = {"cluster": running["cluster"], "run_id": running["run_id"]}
    if _status_rows(store, table, where, reader):
        store.overwrite_partition(table, where, [{**running, "status": RUNNING}])
    try:
        result, row = body()
    except BaseException:
        with contextlib.suppress(Exception):  # the original error is the one to report
            store.overwrite_partition(table, where, [{**running, "status": FAILED, "finished_at": now_utc()}])
        raise
    store.overwrite_partition(table, where, [row])
    return result


def _status_rows(store: TableStore, table: str, where: Mapping[str, Any], reader: TableStore | None
                 ) -> list[dict[str, Any]]:
    """The ``status`` of ``table``'s rows matching ``where``, read with ``reader`` (delta-rs over the same warehouse:
    no Spark job) when given; with ``store`` otherwise, or when ``reader`` cannot read the table."""
    if reader is not None:
        try:
            return reader.read_rows(table, where, columns=("status",)) if reader.exists(table) else []
        except Exception as exc:  # a table delta-rs cannot read: ask the store that writes it
            log.warning("delta-rs could not read %s (%s); asking %s", table, repr(exc).splitlines()[0],
                        type(store).__name__)
    return store.read_rows(table, where, columns=("status",))


@dataclass(frozen=True)
class Statuses:
    """The outcomes a process already knows because it ran (and wrote) the crawl and the ingest itself."""

    crawl: str | None
    ingest: str | None


def require_predecessors(store: TableStore, run_id: str, step: str, known: Statuses | None = None, *,
                         reader: TableStore | None = None, cluster: str | None = None) -> None:
    """Refuse ``step`` on a run whose crawl is missing, running or failed, or whose ingest did not succeed.

    ``known``: the statuses this process wrote itself (``logdir-gc run``), instead of reading them back.
    ``reader`` as in :func:`tracked`. ``cluster``: the run's cluster (one warehouse holds a fleet's runs); any
    cluster's row of the run id when None.

    Raises:
        StepRefused: one line naming the run, the step that did not succeed and its status.
    """
    def status(table: str, known_status: str | None) -> str | None:
        if known is not None:
            return known_status
        where = {"run_id": run_id} if cluster is None else {"cluster": cluster, "run_id": run_id}
        rows = _status_rows(store, table, where, reader)
        return rows[0]["status"] if rows else None

    crawl_status = status("crawl_runs", known.crawl if known else None)
    if crawl_status not in USABLE_CRAWL:
        raise StepRefused(f"{step} refused: the crawl of run {run_id} {_state(crawl_status)}; "
                          "rerun the crawl for this run id first")
    ingest_status = status("ingest_runs", known.ingest if known else None)
    if ingest_status != SUCCEEDED:
        raise StepRefused(f"{step} refused: the metadata ingest of run {run_id} {_state(ingest_status)}; "
                          "rerun ingest_metadata for this run id first")


def _state(status: str | None) -> str:
    if status is None:
        return "never ran (no row)"
    if status == RUNNING:
        return "did not finish (status running)"
    return f"did not succeed (status {status})"
