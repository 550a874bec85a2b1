"""Run-status bookkeeping and the predecessor check on real Delta tables (delta-rs: the same TableStore contract as
delta-spark, no JVM needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.errors import StepRefused
from pipelines.orchestrate.run_status import Statuses, require_predecessors, tracked
from pipelines.tables import open_store
from pipelines.tables.base import TableStore


@pytest.fixture
def store(tmp_path: Path) -> TableStore:
    s = open_store("rust", str(tmp_path / "wh"), allow_foreign_tables=True)  # Spark's tables, written without a JVM
    s.ensure_tables(["crawl_runs", "ingest_runs"])
    return s


def _status(store: TableStore, table: str, run_id: str) -> str | None:
    rows = store.read_rows(table, {"run_id": run_id})
    assert len(rows) <= 1
    return rows[0]["status"] if rows else None


def test_tracked_writes_a_new_run_once_and_says_running_while_a_rerun_writes(store: TableStore) -> None:
    """A new run id has no row until its outcome; a rerun's earlier outcome is replaced by ``running`` before the body
    writes anything, so a rerun that dies half-way never reads as its earlier success."""
    seen: list[str | None] = []

    def body() -> tuple[str, dict]:
        seen.append(_status(store, "ingest_runs", "r1"))
        return "result", {"run_id": "r1", "cluster": "c", "status": "succeeded"}

    assert tracked(store, "ingest_runs", {"run_id": "r1", "cluster": "c"}, body) == "result"
    assert _status(store, "ingest_runs", "r1") == "succeeded"
    assert len(store.history("ingest_runs")) == 2  # created, then the one outcome row
    assert tracked(store, "ingest_runs", {"run_id": "r1", "cluster": "c"}, body) == "result"
    assert seen == [None, "running"]
    assert _status(store, "ingest_runs", "r1") == "succeeded"


@pytest.mark.parametrize("reader_works", [True, False])
def test_a_rerun_is_found_by_the_reader_or_else_by_the_store(store: TableStore, monkeypatch: pytest.MonkeyPatch,
                                                              reader_works: bool) -> None:
    """``reader`` (delta-rs over the same warehouse, no Spark job) finds the rerun's row; when it cannot read the
    table, the store that writes it is asked, and the rerun is still marked ``running`` first."""
    reader = open_store("rust", store.warehouse, allow_foreign_tables=True)
    tracked(store, "ingest_runs", {"run_id": "r1", "cluster": "c"},
            lambda: (None, {"run_id": "r1", "cluster": "c", "status": "succeeded"}), reader=reader)
    asked: list[str] = []
    store_read = store.read_rows

    def store_reads(table: str, *args: object, **kwargs: object) -> list[dict]:
        asked.append(table)
        return store_read(table, *args, **kwargs)

    def unreadable(*args: object, **kwargs: object) -> list[dict]:
        raise OSError("unsupported reader feature")

    monkeypatch.setattr(store, "read_rows", store_reads)
    if not reader_works:
        monkeypatch.setattr(reader, "read_rows", unreadable)
    seen: list[str | None] = []

    def body() -> tuple[None, dict]:
        seen.append(_status(reader if reader_works else store, "ingest_runs", "r1"))
        return None, {"run_id": "r1", "cluster": "c", "status": "succeeded"}

    asked.clear()
    tracked(store, "ingest_runs", {"run_id": "r1", "cluster": "c"}, body, reader=reader)
    assert seen == ["running"]
    assert asked == ([] if reader_works else ["ingest_runs", "ingest_runs"])


def test_the_predecessor_check_reads_with_the_reader(store: TableStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Detect and plan jobs check the run's statuses with the reader (no Spark job), as ``tracked`` does."""
    _crawl(store, "failed")
    reader = open_store("rust", store.warehouse, allow_foreign_tables=True)

    def no_store_reads(*args: object, **kwargs: object) -> list[dict]:
        raise AssertionError("read through the store")

    monkeypatch.setattr(store, "read_rows", no_store_reads)
    with pytest.raises(StepRefused, match="status failed"):
        require_predecessors(store, "r1", "detect", reader=reader)


def test_a_failing_body_leaves_failed_never_an_earlier_success(store: TableStore) -> None:
    tracked(store, "ingest_runs", {"run_id": "r1", "cluster": "c"},
            lambda: (None, {"run_id": "r1", "cluster": "c", "status": "succeeded"}))

    def body() -> tuple[None, dict]:
        raise OSError("metadata source vanished")

    with pytest.raises(OSError, match="vanished"):
        tracked(store, "ingest_runs", {"run_id": "r1", "cluster": "c"}, body)
    [row] = store.read_rows("ingest_runs", {"run_id": "r1"})
    assert row["status"] == "failed" and row["finished_at"] is not None


def _crawl(store: TableStore, status: str) -> None:
    store.overwrite_partition("crawl_runs", {"run_id": "r1"}, [{"run_id": "r1", "cluster": "c", "status": status}])


def _ingest(store: TableStore, status: str) -> None:
    store.overwrite_partition("ingest_runs", {"run_id": "r1"}, [{"run_id": "r1", "cluster": "c", "status": status}])


@pytest.mark.parametrize(("crawl", "ingest", "refusal"), [
    (None, "succeeded", "the crawl of run r1 never ran (no row)"),
    ("running", "succeeded", "the crawl of run r1 did not finish (status running)"),
    ("failed", "succeeded", "the crawl of run r1 did not succeed (status failed)"),
    ("succeeded", None, "the metadata ingest of run r1 never ran (no row)"),
    ("partial", "running", "the metadata ingest of run r1 did not finish (status running)"),
    ("succeeded", "failed", "the metadata ingest of run r1 did not succeed (status failed)"),
])
def test_detect_and_plan_refuse_a_run_whose_crawl_or_ingest_did_not_succeed(
        store: TableStore, crawl: str | None, ingest: str | None, refusal: str) -> None:
    if crawl:
        _crawl(store, crawl)
    if ingest:
        _ingest(store, ingest)
    with pytest.raises(StepRefused) as raised:
        require_predecessors(store, "r1", "detect")
    message = str(raised.value)
    assert message.startswith("detect refused: ") and refusal in message and "\n" not in message


@pytest.mark.parametrize("crawl", ["succeeded", "partial"])
def test_a_crawl_with_unreadable_parts_still_feeds_detect(store: TableStore, crawl: str) -> None:
    _crawl(store, crawl)
    _ingest(store, "succeeded")
    require_predecessors(store, "r1", "plan")


@pytest.mark.parametrize(("known", "refusal"), [
    (Statuses(crawl="failed", ingest="succeeded"), "the crawl of run r1 did not succeed (status failed)"),
    (Statuses(crawl="succeeded", ingest=None), "the metadata ingest of run r1 never ran (no row)"),
])
def test_statuses_the_caller_wrote_decide_instead_of_the_tables(store: TableStore, known: Statuses,
                                                               refusal: str) -> None:
    _crawl(store, "succeeded")  # the tables say otherwise: the statuses given win
    _ingest(store, "succeeded")
    with pytest.raises(StepRefused, match=refusal.replace("(", r"\(").replace(")", r"\)")):
        require_predecessors(store, "r1", "plan", known)
    require_predecessors(store, "r1", "plan", Statuses(crawl="partial", ingest="succeeded"))
