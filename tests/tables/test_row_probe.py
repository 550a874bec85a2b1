"""Whether a table can hold rows matching ``column = value``, from its log (``row_probe``), and what the Spark store
does with the answer: a blind append where nothing can be replaced, replaceWhere otherwise, no commit for no rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from pipelines.tables.row_probe import STRING_PREFIX, may_hold


def _table(path: Path, rows: list[dict], partition_by: list[str] | None = None) -> DeltaTable:
    schema = pa.schema([("run_id", pa.string()), ("broker_id", pa.int32()), ("name", pa.string())])
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=schema), partition_by=partition_by)
    return DeltaTable(str(path))


def test_partition_values_rule_files_out(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", [{"run_id": "r1", "broker_id": 1, "name": "a"},
                                    {"run_id": "r2", "broker_id": 2, "name": "b"}], ["run_id"])
    assert may_hold(table, {"run_id": "r1"})
    assert not may_hold(table, {"run_id": "r3"})
    assert not may_hold(table, {"run_id": "r1", "broker_id": 2})  # the r1 file's statistics say broker 1 only
    assert may_hold(table, {"run_id": "r2", "broker_id": 2})


def test_statistics_rule_files_out_in_an_unpartitioned_table(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", [{"run_id": "r2", "broker_id": 5, "name": "a"},
                                    {"run_id": "r4", "broker_id": 9, "name": "b"}])
    assert may_hold(table, {"run_id": "r3"})  # within the file's min..max: cannot be ruled out
    assert not may_hold(table, {"run_id": "r5"})
    assert not may_hold(table, {"run_id": "r1"})
    assert not may_hold(table, {"broker_id": 10})
    assert may_hold(table, {"broker_id": 7})


def test_what_it_cannot_decide_may_hold(tmp_path: Path) -> None:
    long = "x" * STRING_PREFIX
    table = _table(tmp_path / "t", [{"run_id": long + "a", "broker_id": 1, "name": "a"}])
    assert may_hold(table, {"run_id": long + "b"})  # a statistic that long may be a truncated prefix
    assert may_hold(table, {"run_id": None})  # type: ignore[dict-item]
    assert may_hold(table, {"run_id": ["r1", "r2"]})  # type: ignore[dict-item]
    assert may_hold(table, {})
    assert not may_hold(table, {"broker_id": 2})


def test_a_value_of_another_type_than_its_column_may_hold(tmp_path: Path) -> None:
    """Spark compares ``broker_id = '2'`` or ``run_id = 5`` after casting: text or number order is not its answer."""
    table = _table(tmp_path / "t", [{"run_id": "10", "broker_id": 5, "name": "a"},
                                    {"run_id": "9", "broker_id": 100, "name": "b"}], ["broker_id"])
    assert may_hold(table, {"broker_id": "05"})
    assert may_hold(table, {"run_id": 5})
    assert not may_hold(table, {"broker_id": 7})
    assert not may_hold(table, {"run_id": "5"})


def test_a_table_without_files_holds_nothing(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", [])
    assert not may_hold(table, {"run_id": "r1"})


# -- the Spark store --------------------------------------------------------------------------------------------

ROW = {"run_id": "r1", "cluster": "c", "broker_id": 1, "log_dir": "/d", "path": "p", "stage": "read",
       "error_class": "OSError", "reason": "x"}


@pytest.fixture
def errors_store(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A Spark store (with its delta-rs probe) over a warehouse holding an empty ``crawl_errors``."""
    from pipelines.tables.warehouse_store import warehouse_store

    store = warehouse_store(str(tmp_path / "wh"), engine="spark", spark=spark)
    store.ensure_tables(["crawl_errors"])
    return store


def _operations(path: str) -> list[tuple[str, str | None]]:
    """(operation, mode) of each commit, newest first."""
    return [(h["operation"], h.get("operationParameters", {}).get("mode")) for h in DeltaTable(path).history()]


@pytest.mark.spark
def test_spark_store_appends_a_run_nobody_wrote_and_replaces_one_that_exists(errors_store) -> None:  # type: ignore[no-untyped-def]
    store = errors_store
    uri = store.table_uri("crawl_errors")
    store.overwrite_partition("crawl_errors", {"run_id": "r1"}, [ROW])
    assert _operations(uri)[0] == ("WRITE", "Append")
    store.overwrite_partition("crawl_errors", {"run_id": "r1"}, [{**ROW, "path": "q"}, {**ROW, "path": "r"}])
    assert _operations(uri)[0] == ("WRITE", "Overwrite")  # rows of r1 exist: replaced, not added to
    assert sorted(r["path"] for r in store.read_rows("crawl_errors")) == ["q", "r"]

    version = DeltaTable(uri).version()
    store.overwrite_partition("crawl_errors", {"run_id": "r2"}, [])  # no rows for a run that has none
    assert DeltaTable(uri).version() == version
    store.overwrite_partition("crawl_errors", {"run_id": "r1"}, [])  # no rows for a run that has some: removed
    assert DeltaTable(uri).version() == version + 1
    assert store.read_rows("crawl_errors") == []


@pytest.mark.spark
def test_spark_store_append_checks_rows_against_the_predicate(errors_store) -> None:  # type: ignore[no-untyped-def]
    frame = errors_store.as_frame("crawl_errors", [{**ROW, "run_id": "r9"}])  # a DataFrame: checked as written
    with pytest.raises(Exception, match="does not match"):
        errors_store.overwrite_partition("crawl_errors", {"run_id": "r1"}, frame)
    assert errors_store.read_rows("crawl_errors") == []


@pytest.mark.spark
def test_a_writer_of_the_same_rows_after_the_probe_leaves_no_duplicates(errors_store, spark) -> None:  # type: ignore[no-untyped-def]
    """Two writers of one run id at once (a scheduler's retry beside a zombie attempt): both probe an empty run,
    the other commits first; ours sees a commit between the probe and its own and replaces the run's rows."""
    from pipelines.tables.warehouse_store import warehouse_store

    store = errors_store
    other = warehouse_store(store.warehouse, engine="spark", spark=spark)
    probe = store.probe
    assert probe is not None

    class Interleaved:  # the real probe; the other writer commits right after it answered
        def absent_at(self, table: str, where: dict) -> int | None:
            version = probe.absent_at(table, where)
            other.overwrite_partition(table, where, [{**ROW, "path": "theirs"}])
            store.probe = probe
            return version

    store.probe = Interleaved()  # type: ignore[assignment]
    store.overwrite_partition("crawl_errors", {"run_id": "r1"}, [{**ROW, "path": "ours"}])
    assert [r["path"] for r in store.read_rows("crawl_errors")] == ["ours"]
    # theirs appended, ours appended, ours replaced both
    assert _operations(store.table_uri("crawl_errors"))[:3] == [("WRITE", "Overwrite"), ("WRITE", "Append"),
                                                                ("WRITE", "Append")]


@pytest.mark.spark
def test_spark_store_falls_back_to_replace_where_when_the_probe_fails(errors_store,  # type: ignore[no-untyped-def]
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    class Unreadable:  # a probe whose store cannot be read (delta-rs lacking the warehouse's credentials, say)
        def absent_at(self, table: str, where: dict) -> int | None:
            raise OSError("no credentials")

    errors_store.probe = Unreadable()
    errors_store.overwrite_partition("crawl_errors", {"run_id": "r1"}, [ROW])
    assert _operations(errors_store.table_uri("crawl_errors"))[0] == ("WRITE", "Overwrite")
    assert "no credentials" in caplog.text
