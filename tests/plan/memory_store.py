"""An in-memory fake of ``pipelines.tables.base.TableStore``, used for speed in the workflow tests.

It implements the same methods with the same equality-map filters (``pipelines.tables.base.matches``); every
call is atomic under one lock, which is the property the delta-rs store gets from its commit protocol + retries.
The same workflow tests also run against the real ``RustTableStore`` (see ``conftest``-free fixtures in the tests).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from pipelines.tables.base import (
    HistoryEntry,
    MergeCounts,
    TableRef,
    TableStore,
    Where,
    check_rows,
    matches,
    table_name,
)
from pipelines.tables.schemas import ALL_TABLES, TableSchema


class MemoryTableStore(TableStore):
    engine = "rust"  # stands in for the delta-rs store of the workflow tests
    def __init__(self) -> None:
        super().__init__("memory://warehouse")
        self._tables: dict[str, list[dict[str, Any]]] = {}
        self._versions: dict[str, int] = {}
        self._lock = threading.Lock()

    def is_conflict(self, exc: BaseException) -> bool:
        return False

    def exists(self, table: TableRef) -> bool:
        return table_name(table) in self._tables

    def create_if_missing(self, schema: TableSchema) -> bool:
        with self._lock:
            if schema.name in self._tables:
                return False
            self._tables[schema.name] = []
            self._versions[schema.name] = 0
            return True

    def _rows(self, table: TableRef, rows: Any) -> list[dict[str, Any]]:
        if isinstance(rows, pa.Table):
            rows = rows.to_pylist()
        schema = ALL_TABLES[table_name(table)]
        checked = check_rows(schema, rows)
        return [{c: r.get(c) for c in schema.column_names} for r in checked]

    def _table(self, table: TableRef) -> list[dict[str, Any]]:
        try:
            return self._tables[table_name(table)]
        except KeyError:
            raise FileNotFoundError(f"no table {table_name(table)}") from None

    def _bump(self, table: TableRef) -> None:
        self._versions[table_name(table)] += 1

    def append(self, table: TableRef, rows: Any) -> None:
        new = self._rows(table, rows)
        with self._lock:
            self._table(table).extend(new)
            self._bump(table)

    def overwrite_partition(self, table: TableRef, predicate_columns: Where, rows: Any) -> None:
        new = self._rows(table, rows)
        with self._lock:
            kept = [r for r in self._table(table) if not matches(r, predicate_columns)]
            self._tables[table_name(table)] = kept + new
            self._bump(table)

    def merge(self, table: TableRef, rows: Any, keys: Sequence[str],
              update_columns: Sequence[str] | None = None) -> MergeCounts:
        raise NotImplementedError("not used by the workflow")

    def update(self, table: TableRef, where: Where, set_values: Mapping[str, Any]) -> int:
        with self._lock:
            hit = [r for r in self._table(table) if matches(r, where)]
            for row in hit:
                row.update(set_values)
            if hit:
                self._bump(table)
            return len(hit)

    def read(self, table: TableRef, where: Where | None = None, version: int | None = None,
             timestamp: datetime | str | None = None) -> pa.Table:
        with self._lock:
            rows = [dict(r) for r in self._table(table) if matches(r, where or {})]
        return pa.Table.from_pylist(rows, schema=ALL_TABLES[table_name(table)].to_arrow())

    def read_arrow(self, table: TableRef, where: Where | None = None, version: int | None = None,
                   timestamp: datetime | str | None = None) -> pa.Table:
        return self.read(table, where)

    def history(self, table: TableRef, limit: int | None = None) -> list[HistoryEntry]:
        return []

    def version(self, table: TableRef) -> int:
        return self._versions[table_name(table)]
