"""A table written by one engine reads back identically (rows, schema, timestamps, arrays) in the other."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality

from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import Column, TableSchema

pytestmark = pytest.mark.spark

SCHEMA = TableSchema(
    "cross",
    (
        Column("run_id", "string", nullable=False),
        Column("key", "string", nullable=False),
        Column("n", "long"),
        Column("at", "timestamp"),
        Column("tags", "array<string>"),
        Column("ids", "array<int>"),
        Column("ok", "bool"),
    ),
    partition_by=("run_id",),
)

ROWS: list[dict[str, Any]] = [
    {
        "run_id": "r1",
        "key": "a",
        "n": 1,
        "at": datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=timezone.utc),
        "tags": ["x", "y"],
        "ids": [1, 2],
        "ok": True,
    },
    {"run_id": "r1", "key": "b", "n": None, "at": None, "tags": [], "ids": None, "ok": None},
    {
        "run_id": "r2",
        "key": "c",
        "n": -(2**62),
        "at": datetime(1970, 1, 1, tzinfo=timezone.utc),
        "tags": None,
        "ids": [],
        "ok": False,
    },
]


def sorted_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["key"])


def test_spark_written_table_reads_identically_with_delta_rs(spark: Any, tmp_path: Path) -> None:
    from pipelines.tables.spark_engine import SparkTableStore

    writer = SparkTableStore(spark, str(tmp_path))
    writer.create_if_missing(SCHEMA)
    writer.append(SCHEMA, spark.createDataFrame(ROWS, schema=SCHEMA.to_spark()))
    reader = RustTableStore(str(tmp_path))
    table = reader.read(SCHEMA)
    assert table.schema == SCHEMA.to_arrow()
    assert sorted_rows(table.to_pylist()) == sorted_rows(ROWS)
    assert sorted_rows(reader.read_rows("cross")) == sorted_rows(ROWS)  # undeclared name: schema from the log


def test_delta_rs_written_table_reads_identically_with_spark(spark: Any, tmp_path: Path) -> None:
    from pipelines.tables.spark_engine import SparkTableStore

    writer = RustTableStore(str(tmp_path))
    writer.create_if_missing(SCHEMA)
    writer.append(SCHEMA, ROWS)
    writer.update(SCHEMA, {"key": "b"}, {"tags": ["late"]})
    expected_rows = [dict(r, tags=["late"]) if r["key"] == "b" else r for r in ROWS]
    reader = SparkTableStore(spark, str(tmp_path))
    actual = reader.read(SCHEMA)
    expected = spark.createDataFrame(expected_rows, schema=SCHEMA.to_spark())
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    assert sorted_rows(reader.read_rows(SCHEMA)) == sorted_rows(expected_rows)
    assert reader.version(SCHEMA) == writer.version(SCHEMA) == 2
