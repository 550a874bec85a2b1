"""One contract for every ``TableStore`` engine: the same tests run against delta-rs and delta-spark."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from pipelines.errors import ConfigError
from pipelines.tables.base import TableStore
from pipelines.tables.registry import get_engine, known_engines, register_engine
from pipelines.tables.schemas import ALL_TABLES, Column, TableSchema

UTC = timezone.utc
T0 = datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)

SCHEMA = TableSchema(
    "contract",
    (
        Column("run_id", "string", nullable=False),
        Column("key", "string", nullable=False),
        Column("n", "long"),
        Column("partition", "int"),  # a SQL keyword on purpose: identifiers must be quoted
        Column("at", "timestamp"),
        Column("tags", "array<string>"),
        Column("ids", "array<int>"),
        Column("ok", "bool"),
        Column("ratio", "double"),
    ),
    partition_by=("run_id",),
)


def row(run_id: str, key: str, **values: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(SCHEMA.column_names)
    out.update(run_id=run_id, key=key, **values)
    return out


def by_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["run_id"], r["key"]))


@pytest.fixture(params=["rust", pytest.param("spark", marks=pytest.mark.spark)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TableStore:
    kwargs = {"spark": request.getfixturevalue("spark")} if request.param == "spark" else {}
    return get_engine(request.param)(warehouse=str(tmp_path / "wh"), **kwargs)


@pytest.fixture
def table(store: TableStore) -> TableSchema:
    store.create_if_missing(SCHEMA)
    return SCHEMA


class TestTableStoreContract:
    def test_create_if_missing_creates_once_with_declared_schema_and_partitions(self, store: TableStore) -> None:
        assert not store.exists(SCHEMA)
        assert store.create_if_missing(SCHEMA) is True
        assert store.create_if_missing(SCHEMA) is False
        assert store.exists("contract")
        assert store.version(SCHEMA) == 0
        assert store.read_arrow(SCHEMA).schema == SCHEMA.to_arrow()
        on_disk = DeltaTable(store.table_uri(SCHEMA))
        assert on_disk.metadata().partition_columns == ["run_id"]
        assert [f.name for f in on_disk.schema().fields] == list(SCHEMA.column_names)

    def test_ensure_tables_creates_the_named_tables_once(self, store: TableStore) -> None:
        names, other = (["gc_plans", "gc_plan_items"], "findings") if store.engine == "rust" else \
            (["findings", "crawl_runs"], "gc_plans")  # tables this engine writes (pipelines.tables.ownership)
        assert store.ensure_tables(names) == names
        assert store.ensure_tables(names) == []
        assert store.exists(names[0]) and store.exists(names[1]) and not store.exists(other)
        assert store.read_arrow(names[0]).schema == ALL_TABLES[names[0]].to_arrow()

    def test_ensure_tables_defaults_to_every_table_the_engine_writes(self, tmp_path: Path) -> None:
        store = get_engine("rust")(warehouse=str(tmp_path / "wh"))
        store.ensure_tables(["gc_journal"])
        assert sorted(store.ensure_tables()) == ["gc_plan_audit", "gc_plan_items", "gc_plan_signatures",
                                                       "gc_plans"]
        assert not store.exists("findings")
        fixture = get_engine("rust")(warehouse=str(tmp_path / "wh"), allow_foreign_tables=True)
        assert sorted(fixture.ensure_tables()) == sorted(n for n in ALL_TABLES if not n.startswith("gc_"))
        assert all(store.exists(name) for name in ALL_TABLES)

    def test_table_uri_is_warehouse_slash_name_and_file_urls_are_local(self, tmp_path: Path) -> None:
        store = get_engine("rust")(warehouse=(tmp_path / "wh").as_uri())
        assert store.table_uri("x") == str(tmp_path / "wh" / "x")

    def test_append_round_trips_every_type(self, store: TableStore, table: TableSchema) -> None:
        rows = [
            row("r1", "a", n=2**40, partition=7, at=T0, tags=["x", "y"], ids=[1, 2], ok=True, ratio=0.5),
            row("r1", "b", tags=[], ids=[]),
            row("r2", "c", at=T0 + timedelta(days=400), tags=["it's", "back\\slash"]),
        ]
        store.append(table, rows)
        assert by_key(store.read_rows(table)) == by_key(rows)
        assert store.version(table) == 1

    def test_append_accepts_arrow_and_rejects_unknown_columns(self, store: TableStore, table: TableSchema) -> None:
        import pyarrow as pa

        store.append(table, pa.Table.from_pylist([{"run_id": "r1", "key": "a", "n": 1}]))
        assert store.read_rows(table) == [row("r1", "a", n=1)]
        with pytest.raises(ValueError, match="unknown columns"):
            store.append(table, [{"run_id": "r1", "key": "b", "typo": 1}])

    def test_overwrite_partition_replaces_only_that_partition_and_reruns_do_not_duplicate(
        self, store: TableStore, table: TableSchema
    ) -> None:
        store.append(table, [row("r1", "old"), row("r2", "keep")])
        fresh = [row("r1", "a", n=1), row("r1", "b", n=2)]
        store.overwrite_partition(table, {"run_id": "r1"}, fresh)
        store.overwrite_partition(table, {"run_id": "r1"}, fresh)
        assert by_key(store.read_rows(table)) == by_key([*fresh, row("r2", "keep")])

    def test_overwrite_partition_rejects_rows_outside_the_predicate(
        self, store: TableStore, table: TableSchema
    ) -> None:
        store.append(table, [row("r1", "a")])
        with pytest.raises(ValueError, match="does not match"):
            store.overwrite_partition(table, {"run_id": "r1"}, [row("r2", "x")])
        assert store.read_rows(table) == [row("r1", "a")]

    def test_overwrite_partition_and_merge_take_arrow_tables(self, store: TableStore, table: TableSchema) -> None:
        import pyarrow as pa

        store.append(table, [row("r1", "old"), row("r2", "keep")])
        fresh = [row("r1", "a", n=1, tags=["x"], at=T0), row("r1", "b", n=2)]
        store.overwrite_partition(table, {"run_id": "r1"}, pa.Table.from_pylist(fresh, schema=table.to_arrow()))
        assert by_key(store.read_rows(table)) == by_key([*fresh, row("r2", "keep")])
        store.merge(table, pa.Table.from_pylist([{"run_id": "r1", "key": "c", "n": 3}]), keys=["run_id", "key"])
        assert by_key(store.read_rows(table, {"run_id": "r1"})) == by_key([*fresh, row("r1", "c", n=3)])

    def test_overwrite_partition_rejects_arrow_rows_outside_the_predicate(
        self, store: TableStore, table: TableSchema
    ) -> None:
        import pyarrow as pa

        store.append(table, [row("r1", "a")])
        outside = pa.Table.from_pylist([row("r1", "b"), row("r1", "c"), row("r9", "d")], schema=table.to_arrow())
        with pytest.raises(ValueError, match=r"row 2 .*does not match"):
            store.overwrite_partition(table, {"run_id": "r1"}, outside)
        with pytest.raises(ValueError, match=r"row 0 .*does not match"):
            store.overwrite_partition(table, {"run_id": ["r2", "r3"]}, outside)
        assert store.read_rows(table) == [row("r1", "a")]

    def test_merge_updates_matches_and_inserts_the_rest(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a", n=1, ok=False), row("r1", "b", n=2)])
        counts = store.merge(table, [row("r1", "a", n=10, ok=True), row("r1", "c", n=3)], keys=["run_id", "key"])
        assert (counts.inserted, counts.updated) == (1, 1)
        expected = [row("r1", "a", n=10, ok=True), row("r1", "b", n=2), row("r1", "c", n=3)]
        assert by_key(store.read_rows(table)) == expected

    def test_merge_matches_null_keys_null_safely(self, store: TableStore, table: TableSchema) -> None:
        """A key column that is NULL in both rows is a match (a history merged twice must not grow)."""
        rows = [row("r1", "a", partition=None, n=1), row("r1", "a", partition=3, n=2)]
        store.merge(table, rows, keys=["run_id", "key", "partition"], update_columns=[])
        counts = store.merge(table, rows, keys=["run_id", "key", "partition"], update_columns=[])
        assert (counts.inserted, len(store.read_rows(table))) == (0, 2)

    def test_merge_with_update_columns_changes_only_those(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a", n=1, ratio=1.5)])
        store.merge(table, [row("r1", "a", n=5, ratio=9.0)], keys=["run_id", "key"], update_columns=["n"])
        assert store.read_rows(table) == [row("r1", "a", n=5, ratio=1.5)]

    def test_update_counts_rows_and_acts_as_compare_and_set(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a", n=1), row("r1", "b", n=1), row("r2", "c", n=1)])
        assert store.update(table, {"run_id": "r1"}, {"n": 2}) == 2
        assert store.update(table, {"key": "a", "n": 1}, {"n": 3}) == 0  # stale expectation: nothing changes
        assert store.update(table, {"key": "a", "n": 2}, {"n": 3}) == 1
        assert [r["n"] for r in by_key(store.read_rows(table))] == [3, 2, 1]

    def test_update_sets_arrays_timestamps_and_nulls(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a", n=1, tags=["x"], ids=[4])])
        changed = store.update(table, {"key": "a"}, {"tags": ["p", "q's"], "ids": [], "at": T0, "n": None})
        assert changed == 1
        assert store.read_rows(table) == [row("r1", "a", tags=["p", "q's"], ids=[], at=T0)]

    def test_read_filters_by_equality_in_list_and_null(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a", n=1), row("r1", "b"), row("r2", "c", n=1), row("r3", "d", n=2)])
        assert {r["key"] for r in store.read_rows(table, {"run_id": "r1"})} == {"a", "b"}
        assert {r["key"] for r in store.read_rows(table, {"run_id": ["r2", "r3"], "n": 1})} == {"c"}
        assert {r["key"] for r in store.read_rows(table, {"n": None})} == {"b"}
        assert store.read_rows(table, {"run_id": []}) == []

    def test_read_only_the_named_columns_in_their_order(self, store: TableStore, table: TableSchema) -> None:
        import pyarrow as pa

        store.append(table, [row("r1", "a", n=1, partition=3, at=T0), row("r2", "b", n=2)])
        got = store.read_arrow(table, {"run_id": "r1"}, columns=("partition", "at", "key"))
        assert got.column_names == ["partition", "at", "key"]
        assert got.schema == pa.schema([SCHEMA.to_arrow().field(c) for c in ("partition", "at", "key")])
        assert got.to_pylist() == [{"partition": 3, "at": T0, "key": "a"}]
        assert store.read_rows(table, columns=("n",)) in ([{"n": 1}, {"n": 2}], [{"n": 2}, {"n": 1}])

    def test_time_travel_by_version_and_timestamp(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a", n=1)])
        store.update(table, {"key": "a"}, {"n": 2})
        assert store.read_rows(table, version=1) == [row("r1", "a", n=1)]
        assert store.read_rows(table, version=0) == []
        first_commit = next(h for h in store.history(table) if h.version == 1).timestamp
        assert store.read_rows(table, timestamp=first_commit) == [row("r1", "a", n=1)]
        assert store.read_rows(table) == [row("r1", "a", n=2)]

    def test_time_travel_to_a_history_time_when_the_log_file_is_newer(self, store: TableStore,
                                                                      table: TableSchema) -> None:
        """A commit file written (or copied) after its commit time: the time the history gives still reads that
        version (a loaded host made this flaky for delta-rs, which went by the file's modification time)."""
        import os

        store.append(table, [row("r1", "a", n=1)])
        store.update(table, {"key": "a"}, {"n": 2})
        log = Path(store.table_uri(table)) / "_delta_log"
        later = T0.timestamp() + 10 * 365 * 86400  # years after any commit time of this test run
        for name in ("00000000000000000001.json", "00000000000000000002.json"):
            os.utime(log / name, (later, later))
        first_commit = next(h for h in store.history(table) if h.version == 1).timestamp
        assert store.read_rows(table, timestamp=first_commit) == [row("r1", "a", n=1)]

    def test_history_is_newest_first_with_operations(self, store: TableStore, table: TableSchema) -> None:
        store.append(table, [row("r1", "a")])
        store.update(table, {"key": "a"}, {"n": 1})
        history = store.history(table)
        assert [h.version for h in history] == [2, 1, 0]
        assert [h.operation for h in history][:2] == ["UPDATE", "WRITE"]
        assert all(h.timestamp.tzinfo is not None for h in history)
        assert [h.version for h in store.history(table, limit=1)] == [2]

    def test_version_of_a_missing_table_raises_file_not_found(self, store: TableStore) -> None:
        with pytest.raises(FileNotFoundError):
            store.version("nothing_here")


def test_registry_is_read_only_lazy_and_refuses_silent_overwrite() -> None:
    assert set(known_engines) >= {"spark", "rust"}
    with pytest.raises(TypeError):
        known_engines["x"] = "a:b"  # type: ignore[index]
    with pytest.raises(ValueError, match="already registered"):
        register_engine("rust", "somewhere.else:Store")
    register_engine("rust", known_engines["rust"])  # same target again is fine
    with pytest.raises(ConfigError, match="unknown table engine"):
        get_engine("nope")
