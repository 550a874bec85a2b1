"""The delta-rs (``deltalake``) table store: no JVM, usable on a broker host by the executor.

This module must never import pyspark (directly or indirectly).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa
from deltalake import ColumnProperties, DeltaTable, QueryBuilder, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from pipelines.tables.base import (
    DEFAULT_RETRY,
    HistoryEntry,
    MergeCounts,
    RetryPolicy,
    TableRef,
    TableStore,
    Where,
    check_rows,
    conform_arrow,
    first_mismatch,
    quote_ident,
    sql_literal,
    sql_predicate,
    table_name,
    utc_from_millis,
)
from pipelines.tables.schemas import DOCUMENT_COLUMNS, TableSchema

__all__ = ["RustTableStore"]

#: Rows per Parquet row group: the writer holds a whole row group encoded until it is flushed (a 100k-item plan's
#: ``gc_plan_items`` took 2x the memory of its rows in one group).
ROW_GROUP_ROWS = 8192


def writer_properties(table: TableRef) -> WriterProperties:
    """Snappy (delta-rs' default), row groups of ``ROW_GROUP_ROWS``, and the table's ``DOCUMENT_COLUMNS`` plain."""
    plain = ColumnProperties(dictionary_enabled=False, statistics_enabled="NONE")
    return WriterProperties(compression="SNAPPY", max_row_group_size=ROW_GROUP_ROWS,
                            column_properties={c: plain for c in DOCUMENT_COLUMNS.get(table_name(table), ())} or None)


# delta-rs reports some conflicts as a generic DeltaError; these message fragments mark them.
_CONFLICT_MARKERS = ("Transaction failed", "concurrent", "Concurrent", "version already exists", "conflict")


class RustTableStore(TableStore):
    """Delta tables read and written with delta-rs. Rows in: ``list[dict]`` or ``pyarrow.Table``.

    Args:
        warehouse: root directory or URL.
        storage_options: passed to delta-rs (object-store credentials); ``None`` for local paths. Build them with
            ``pipelines.tables.object_store.warehouse_storage(url).delta_rs`` (or use ``warehouse_store``).
        retry: backoff policy for commit conflicts.
        **kwargs: ``storage_retry``, ``secrets``, ``allow_foreign_tables`` (see ``TableStore``); the values of
            secret storage options are always redacted.
    """

    engine = "rust"

    def __init__(
        self,
        warehouse: str,
        *,
        storage_options: Mapping[str, str] | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        **kwargs: Any,
    ) -> None:
        from pipelines.tables.object_store import is_secret_option

        options = dict(storage_options) if storage_options else {}
        kwargs["secrets"] = (*kwargs.get("secrets", ()), *(v for k, v in options.items() if is_secret_option(k)))
        super().__init__(warehouse, retry=retry, **kwargs)
        self.storage_options = options or None

    def is_conflict(self, exc: BaseException) -> bool:
        if isinstance(exc, CommitFailedError):
            return True
        return isinstance(exc, DeltaError) and any(m in str(exc) for m in _CONFLICT_MARKERS)

    # -- helpers --------------------------------------------------------------------------------------------

    def _open(self, table: TableRef, version: int | None = None) -> DeltaTable:
        """Raises FileNotFoundError (a builtin, like every storage failure here) when there is no table."""
        try:
            return self._guarded(lambda: DeltaTable(self.table_uri(table), version=version,
                                                    storage_options=self.storage_options))
        except TableNotFoundError as exc:
            raise FileNotFoundError(f"no Delta table at {self.table_uri(table)}") from exc

    def absent_at(self, table: TableRef, where: Where) -> int | None:
        """The table version whose log proves it holds no row matching ``where`` (``row_probe``); None when it may
        hold some, or there is no table."""
        from pipelines.tables.row_probe import may_hold

        try:
            opened = self._open(table)
        except FileNotFoundError:
            return None
        return None if may_hold(opened, where) else opened.version()

    def commits_since(self, table: TableRef, version: int) -> list[dict[str, Any]]:
        """The commit infos of the versions after ``version``, oldest first (each with its ``version``)."""
        opened = self._open(table)
        newer = opened.version() - version
        return sorted(opened.history(newer), key=lambda c: c["version"]) if newer > 0 else []

    def _arrow_schema(self, table: TableRef) -> pa.Schema:
        declared = self.declared_schema(table)
        if declared is not None:
            return declared.to_arrow()
        return pa.schema(self._open(table).schema().to_arrow())

    def _to_arrow(self, table: TableRef, rows: Any) -> pa.Table:
        schema = self._arrow_schema(table)
        if isinstance(rows, pa.Table):
            return conform_arrow(table_name(table), schema, rows)
        declared = self.declared_schema(table) or _schema_from_arrow(table_name(table), schema)
        return pa.Table.from_pylist(check_rows(declared, rows), schema=schema)

    # -- interface -------------------------------------------------------------------------------------------

    def exists(self, table: TableRef) -> bool:
        return self._guarded(lambda: DeltaTable.is_deltatable(self.table_uri(table),
                                                              storage_options=self.storage_options))

    def create_if_missing(self, schema: TableSchema) -> bool:
        self.check_writer(schema)
        self._schemas[schema.name] = schema
        if self.exists(schema):
            self._add_missing_columns(schema)
            return False
        try:
            self._guarded(lambda: DeltaTable.create(
                self.table_uri(schema),
                schema.to_arrow(),
                mode="error",
                partition_by=list(schema.partition_by) or None,
                name=schema.name,
                description=schema.doc or None,
                storage_options=self.storage_options,
            ))
        except DeltaError as exc:  # lost a creation race: someone else made it first
            if self.exists(schema):
                return False
            raise exc
        return True

    def _add_missing_columns(self, schema: TableSchema) -> None:
        """Add the declared columns an existing table lacks (nullable; older rows read as null), as the Spark store's
        ``mergeSchema`` writes do: a warehouse written by an older version takes the new columns' rows."""
        from deltalake.schema import Field

        opened = self._open(schema)
        have = {f.name for f in opened.schema().fields}
        missing = [f for f in schema.to_arrow() if f.name not in have]
        if missing:
            fields = [Field.from_arrow(pa.field(f.name, f.type, nullable=True)) for f in missing]
            self._retrying(lambda: opened.alter.add_columns(fields))

    def append(self, table: TableRef, rows: Any) -> None:
        self.check_writer(table)
        data = self._to_arrow(table, rows)
        self._retrying(
            lambda: write_deltalake(self.table_uri(table), data, mode="append", storage_options=self.storage_options,
                                    writer_properties=writer_properties(table))
        )

    def overwrite_partition(self, table: TableRef, predicate_columns: Where, rows: Any) -> None:
        if not predicate_columns:
            raise ValueError("overwrite_partition needs at least one predicate column")
        self.check_writer(table)
        data = self._to_arrow(table, rows)
        index = first_mismatch(data, predicate_columns)
        if index is not None:
            row = data.select(list(predicate_columns)).slice(index, 1).to_pylist()[0]
            raise ValueError(f"{table_name(table)}: row {index} {row} does not match {predicate_columns}")
        predicate = sql_predicate(predicate_columns, "datafusion")
        self._retrying(
            lambda: write_deltalake(
                self.table_uri(table),
                data,
                mode="overwrite",
                predicate=predicate,
                storage_options=self.storage_options,
                writer_properties=writer_properties(table),
            )
        )

    def merge(
        self, table: TableRef, rows: Any, keys: Sequence[str], update_columns: Sequence[str] | None = None
    ) -> MergeCounts:
        if not keys:
            raise ValueError("merge needs at least one key column")
        self.check_writer(table)
        data = self._to_arrow(table, rows)
        on = " AND ".join(f"(t.`{k}` IS NOT DISTINCT FROM s.`{k}`)" for k in keys)  # null-safe key match

        def run() -> dict[str, Any]:
            merger = self._open(table).merge(data, on, source_alias="s", target_alias="t",
                                             writer_properties=writer_properties(table))
            if update_columns is None:
                merger = merger.when_matched_update_all()
            elif update_columns:
                merger = merger.when_matched_update({f"`{c}`": f"s.`{c}`" for c in update_columns})
            return merger.when_not_matched_insert_all().execute()

        metrics = self._retrying(run)
        return MergeCounts(
            inserted=int(metrics.get("num_target_rows_inserted", 0)),
            updated=int(metrics.get("num_target_rows_updated", 0)),
        )

    def update(self, table: TableRef, where: Where, set_values: Mapping[str, Any]) -> int:
        if not set_values:
            raise ValueError("update needs at least one column to set")
        self.check_writer(table)
        predicate = sql_predicate(where, "datafusion")
        # SQL expressions, not delta-rs ``new_values`` (which neither escapes quotes nor handles NULL/arrays);
        # delta-rs casts each expression to the column's type.
        updates = {f"`{column}`": _datafusion_value(value) for column, value in set_values.items()}

        def run() -> dict[str, Any]:
            return self._open(table).update(updates=updates, predicate=predicate,
                                            writer_properties=writer_properties(table))

        return int(self._retrying(run).get("num_updated_rows", 0))

    def read(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Rows as a ``pyarrow.Table``, filtered inside delta-rs (DataFusion prunes partitions and files); only
        ``columns`` when given (the others are never read).

        Reads go through delta-rs's query engine rather than ``to_pyarrow_dataset``: the latter runs Arrow C++
        I/O threads over a Python filesystem handler, which can abort the interpreter at exit
        ("terminate called without an active exception", delta-rs issue 2184).
        """
        if version is not None and timestamp is not None:
            raise ValueError("pass version or timestamp, not both")
        if timestamp is not None:
            version = self._version_at(table, timestamp)
        dt = self._open(table, version=version)
        selected = ", ".join(quote_ident(c) for c in columns) if columns else "*"
        query = f"SELECT {selected} FROM snapshot WHERE {sql_predicate(where, 'datafusion')}"
        out = pa.table(self._guarded(lambda: QueryBuilder().register("snapshot", dt).execute(query).read_all()))
        declared = self.declared_schema(table)
        if declared is not None:
            schema = declared.to_arrow()
            names = list(columns or declared.column_names)
            return out.select(names).cast(pa.schema([schema.field(n) for n in names]))
        return out.cast(pa.schema([f.with_type(_plain_type(f.type)) for f in out.schema]))

    def read_arrow(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        return self.read(table, where, version=version, timestamp=timestamp, columns=columns)

    def _version_at(self, table: TableRef, timestamp: datetime | str) -> int:
        """The newest version committed at or before ``timestamp``, by the commit times :meth:`history` reports
        (delta-rs's own ``load_as_version`` goes by the log files' modification times, which can be later, so a
        time read from the history could select the version before it)."""
        at = datetime.fromisoformat(timestamp) if isinstance(timestamp, str) else timestamp
        if at.tzinfo is None:
            raise ValueError(f"timestamp {timestamp!r} has no time zone")
        versions = [h.version for h in self.history(table) if h.timestamp <= at]
        if not versions:
            raise ValueError(f"{table_name(table)} has no version at or before {at.isoformat()}")
        return max(versions)

    def history(self, table: TableRef, limit: int | None = None) -> list[HistoryEntry]:
        entries = []
        dt = self._open(table)
        for commit in self._guarded(lambda: dt.history(limit)):
            entries.append(
                HistoryEntry(
                    version=int(commit["version"]),
                    timestamp=utc_from_millis(int(commit["timestamp"])),
                    operation=str(commit.get("operation", "")),
                    parameters={k: str(v) for k, v in (commit.get("operationParameters") or {}).items()},
                    metrics={k: str(v) for k, v in (commit.get("operationMetrics") or {}).items()},
                )
            )
        return sorted(entries, key=lambda e: e.version, reverse=True)

    def version(self, table: TableRef) -> int:
        return self._open(table).version()


def _schema_from_arrow(name: str, schema: pa.Schema) -> TableSchema:
    """A name-only TableSchema stand-in for key checking of tables not declared in ``schemas``."""
    from pipelines.tables.schemas import Column

    return TableSchema(name, tuple(Column(f.name, "string") for f in schema), ())


def _datafusion_value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list | tuple):
        return f"make_array({', '.join(_datafusion_value(v) for v in value)})" if value else "[]"
    return sql_literal(value, "datafusion")


def _plain_type(kind: pa.DataType) -> pa.DataType:
    """Replace the view/large string types delta-rs hands out with plain ``string`` (also inside lists)."""
    if pa.types.is_string_view(kind) or pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        return pa.list_(_plain_type(kind.value_type))
    return kind
