"""The delta-spark table store: DataFrames in and out, for the Spark jobs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

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
    matches,
    sql_literal,
    sql_predicate,
    table_name,
)
from pipelines.tables.object_store import redact
from pipelines.tables.schemas import TableSchema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

    from pipelines.tables.rust_engine import RustTableStore

__all__ = ["SparkTableStore"]

log = logging.getLogger(__name__)


class SparkTableStore(TableStore):
    """Delta tables read and written with delta-spark through ``spark``.

    Rows in: a ``DataFrame`` (columns are selected by name and cast to the table's types), ``list[dict]`` or a
    ``pyarrow.Table``. :meth:`read` returns a ``DataFrame``. Object-store settings are the session's (see
    ``pipelines.tables.warehouse_store``, which sets them); ``**kwargs`` as in ``TableStore``.

    ``probe``: a delta-rs store over the same warehouse, asked before rows are replaced whether the table can hold
    any (``absent_at``, from its log). When it proves none, the rows are appended: a blind append needs no Spark job
    to rebuild the table's state first, which ``replaceWhere`` does. A writer of the same rows that committed after
    the probe is seen afterwards (the first commit after the probed version is not ours) and the rows are then
    written again with ``replaceWhere``, so two writers of one run id end as before: the last one's rows, once.
    """

    engine = "spark"

    def __init__(self, spark: SparkSession, warehouse: str, *, retry: RetryPolicy = DEFAULT_RETRY,
                 probe: RustTableStore | None = None, **kwargs: Any) -> None:
        super().__init__(warehouse, retry=retry, **kwargs)
        self.spark = spark
        self.probe = probe

    def is_conflict(self, exc: BaseException) -> bool:
        from delta.exceptions import (
            ConcurrentAppendException,
            ConcurrentDeleteDeleteException,
            ConcurrentDeleteReadException,
            ConcurrentTransactionException,
            ConcurrentWriteException,
            DeltaConcurrentModificationException,
            MetadataChangedException,
            ProtocolChangedException,
        )

        return isinstance(
            exc,
            (
                DeltaConcurrentModificationException,
                ConcurrentWriteException,
                MetadataChangedException,
                ProtocolChangedException,
                ConcurrentAppendException,
                ConcurrentDeleteReadException,
                ConcurrentDeleteDeleteException,
                ConcurrentTransactionException,
            ),
        )

    # -- helpers --------------------------------------------------------------------------------------------

    def _spark_schema(self, table: TableRef) -> StructType:
        declared = self.declared_schema(table)
        if declared is not None:
            return declared.to_spark()
        return self.spark.read.format("delta").load(self.table_uri(table)).schema

    def as_frame(self, table: TableRef, rows: Any) -> DataFrame:
        """``rows`` (a DataFrame, an Arrow table or dicts) as the DataFrame a write of them to ``table`` writes:
        the table's columns, in its order and types. Reading those rows back gives the same rows."""
        return self._to_df(table, rows)

    def _to_df(self, table: TableRef, rows: Any) -> DataFrame:
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F

        schema = self._spark_schema(table)
        if isinstance(rows, DataFrame):
            unknown = sorted(set(rows.columns) - set(schema.fieldNames()))
            if unknown:
                raise ValueError(f"{table_name(table)}: unknown columns {unknown}")
            return rows.select(
                [
                    (F.col(f"`{f.name}`") if f.name in rows.columns else F.lit(None)).cast(f.dataType).alias(f.name)
                    for f in schema.fields
                ]
            )
        declared = self.declared_schema(table)
        if not isinstance(rows, list | tuple):  # pyarrow.Table (duck-typed to keep pyarrow optional here)
            if declared is not None:  # Arrow batches to the JVM: no Python object per value
                return self.spark.createDataFrame(conform_arrow(table_name(table), declared.to_arrow(), rows),
                                                  schema=schema)
            rows = rows.to_pylist()
        if declared is not None:
            rows = check_rows(declared, rows)
        names = schema.fieldNames()
        tuples = [tuple(row.get(n) for n in names) for row in rows]
        return self.spark.createDataFrame(tuples, schema=schema)

    def _delta_table(self, table: TableRef) -> Any:
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self.spark, self.table_uri(table))

    # -- interface -------------------------------------------------------------------------------------------

    def exists(self, table: TableRef) -> bool:
        from delta.tables import DeltaTable

        return bool(self._guarded(lambda: DeltaTable.isDeltaTable(self.spark, self.table_uri(table))))

    def create_if_missing(self, schema: TableSchema) -> bool:
        from delta.tables import DeltaTable

        self.check_writer(schema)
        self._schemas[schema.name] = schema
        if self.exists(schema):
            return False
        builder = DeltaTable.createIfNotExists(self.spark).location(self.table_uri(schema))
        docs = {column.name: column.doc for column in schema.columns}
        for field in schema.to_spark().fields:
            builder = builder.addColumn(
                field.name, field.dataType, nullable=field.nullable, comment=docs[field.name] or None
            )
        if schema.partition_by:
            builder = builder.partitionedBy(*schema.partition_by)
        if schema.doc:
            builder = builder.comment(schema.doc)
        from pipelines.tables.table_creation import check_existing, create_once

        def check() -> None:  # the table another driver created at the same moment must be the declared one
            fields = self._delta_table(schema).toDF().schema.fields
            details = self._delta_table(schema).detail().select("partitionColumns").first()
            check_existing(schema, {f.name: f.dataType.simpleString() for f in fields}, list(details[0] or []),
                           self.table_uri(schema))

        return create_once(lambda: self._retrying(builder.execute), lambda: self.exists(schema), check)

    def append(self, table: TableRef, rows: Any) -> None:
        self.check_writer(table)
        df = self._to_df(table, rows)
        self._retrying(lambda: df.write.format("delta").mode("append").option("mergeSchema", "true")
                       .save(self.table_uri(table)))

    def overwrite_partition(self, table: TableRef, predicate_columns: Where, rows: Any) -> None:
        if not predicate_columns:
            raise ValueError("overwrite_partition needs at least one predicate column")
        self.check_writer(table)
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F

        if isinstance(rows, list | tuple):  # DataFrames are checked as they are written
            for index, item in enumerate(rows):
                if not matches(item, predicate_columns):
                    raise ValueError(f"{table_name(table)}: row {index} does not match {dict(predicate_columns)}")
        elif not isinstance(rows, DataFrame) and (index := first_mismatch(rows, predicate_columns)) is not None:
            raise ValueError(f"{table_name(table)}: row {index} does not match {dict(predicate_columns)}")
        predicate = sql_predicate(predicate_columns, "spark")
        df = self._to_df(table, rows)
        uri = self.table_uri(table)

        def replace() -> None:
            df.write.format("delta").mode("overwrite").option("replaceWhere", predicate) \
                .option("mergeSchema", "true").save(uri)

        def write() -> None:  # the probe is asked again on every attempt: an earlier attempt may have committed
            absent_at = self._absent_at(table, predicate_columns)
            if absent_at is None:
                replace()
            elif not _no_rows(rows):  # no rows replacing none: no commit
                token = f"logdir-gc append {uuid.uuid4()}"
                checked = df.where(F.assert_true(F.expr(predicate), f"a row does not match {predicate}").isNull())
                checked.write.format("delta").mode("append").option("mergeSchema", "true") \
                    .option("userMetadata", token).save(uri)
                if not self._alone_since(table, absent_at, token):
                    replace()  # another commit landed after the probe: ours replace whatever it added, as before

        self._retrying(write)

    def _absent_at(self, table: TableRef, where: Where) -> int | None:
        """The probe's version proving no row matches ``where``; None without a probe or when it fails."""
        if self.probe is None:
            return None
        try:
            return self.probe.absent_at(table, where)
        except Exception as exc:
            log.warning("%s", redact(f"could not tell from {table_name(table)}'s log whether it holds {dict(where)} "
                                     f"({repr(exc).splitlines()[0]}); replacing them with replaceWhere", self.secrets))
            return None

    def _alone_since(self, table: TableRef, version: int, token: str) -> bool:
        """True when the first commit after ``version`` is ours (``token``): nobody wrote in between."""
        assert self.probe is not None
        try:
            commits = self.probe.commits_since(table, version)
        except Exception:
            return False
        return bool(commits) and commits[0].get("userMetadata") == token

    def merge(
        self, table: TableRef, rows: Any, keys: Sequence[str], update_columns: Sequence[str] | None = None
    ) -> MergeCounts:
        if not keys:
            raise ValueError("merge needs at least one key column")
        self.check_writer(table)
        source = self._to_df(table, rows)
        on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)  # null-safe: a NULL key matches a NULL key

        def run() -> DataFrame:
            merger = self._delta_table(table).alias("t").merge(source.alias("s"), on)
            if update_columns is None:
                merger = merger.whenMatchedUpdateAll()
            elif update_columns:
                merger = merger.whenMatchedUpdate(set={f"`{c}`": f"s.`{c}`" for c in update_columns})
            return merger.whenNotMatchedInsertAll().execute()

        result = self._retrying(run).first()
        metrics = result.asDict() if result is not None else {}
        return MergeCounts(
            inserted=int(metrics.get("num_inserted_rows") or 0), updated=int(metrics.get("num_updated_rows") or 0)
        )

    def update(self, table: TableRef, where: Where, set_values: Mapping[str, Any]) -> int:
        if not set_values:
            raise ValueError("update needs at least one column to set")
        self.check_writer(table)
        types = {f.name: f.dataType for f in self._spark_schema(table).fields}
        unknown = sorted(set(set_values) - set(types))
        if unknown:
            raise ValueError(f"{table_name(table)}: unknown columns {unknown}")
        assignments = ", ".join(
            f"`{column}` = {_typed_literal(value, types[column])}" for column, value in set_values.items()
        )
        path = self.table_uri(table).replace("`", "``")
        statement = f"UPDATE delta.`{path}` SET {assignments} WHERE {sql_predicate(where, 'spark')}"
        row = self._retrying(lambda: self.spark.sql(statement).first())
        return int(row[0]) if row is not None else 0

    def read(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
    ) -> DataFrame:
        if version is not None and timestamp is not None:
            raise ValueError("pass version or timestamp, not both")
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if timestamp is not None:
            text = timestamp.isoformat() if isinstance(timestamp, datetime) else timestamp
            reader = reader.option("timestampAsOf", text)
        df = reader.load(self.table_uri(table))
        if where:
            df = df.where(sql_predicate(where, "spark"))
        declared = self.declared_schema(table)
        if declared is not None:  # a column added to the schema after the table was written reads as null
            from pyspark.sql import functions as F

            df = df.select([F.col(f"`{f.name}`") if f.name in df.columns else F.lit(None).cast(f.dataType).alias(f.name)
                            for f in declared.to_spark().fields])
        return df

    def read_arrow(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        import pyarrow as pa

        df = self.read(table, where, version=version, timestamp=timestamp)
        out = (df.select([f"`{c}`" for c in columns]) if columns else df).toArrow()
        declared = self.declared_schema(table)
        if declared is None:
            return out
        schema = declared.to_arrow()
        return out.cast(pa.schema([schema.field(n) for n in columns]) if columns else schema)

    def history(self, table: TableRef, limit: int | None = None) -> list[HistoryEntry]:
        from pyspark.sql import functions as F

        df = (
            self._delta_table(table)
            .history(limit)
            .select(
                "version",
                F.unix_micros("timestamp").alias("micros"),
                "operation",
                "operationParameters",
                "operationMetrics",
            )
        )
        entries = [
            HistoryEntry(
                version=int(r["version"]),
                timestamp=datetime.fromtimestamp(r["micros"] / 1_000_000, tz=timezone.utc),
                operation=str(r["operation"]),
                parameters=dict(r["operationParameters"] or {}),
                metrics=dict(r["operationMetrics"] or {}),
            )
            for r in self._guarded(df.collect)
        ]
        return sorted(entries, key=lambda e: e.version, reverse=True)

    def version(self, table: TableRef) -> int:
        if not self.exists(table):
            raise FileNotFoundError(f"no Delta table at {self.table_uri(table)}")
        row = self._delta_table(table).history(1).select("version").first()
        return int(row[0])


def _no_rows(rows: Any) -> bool:
    """True for an empty list or Arrow table (a DataFrame's row count would take a Spark job)."""
    if isinstance(rows, list | tuple):
        return not rows
    return getattr(rows, "num_rows", None) == 0


def _typed_literal(value: Any, data_type: DataType) -> str:
    """A Spark SQL literal cast to the column's type (``NULL`` and empty arrays need the cast)."""
    from pyspark.sql.types import ArrayType

    type_sql = data_type.simpleString()
    if value is None:
        return f"CAST(NULL AS {type_sql})"
    if isinstance(value, list | tuple):
        if not isinstance(data_type, ArrayType):
            raise TypeError(f"list value for non-array column of type {type_sql}")
        items = ", ".join(_typed_literal(v, data_type.elementType) for v in value)
        return f"CAST(array({items}) AS {type_sql})"
    return f"CAST({sql_literal(value, 'spark')} AS {type_sql})"
