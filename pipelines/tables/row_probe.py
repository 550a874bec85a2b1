"""Can a Delta table hold rows matching ``column = value`` predicates? Answered from its log alone, with delta-rs.

Each active file's partition values and column statistics (min/max, as both engines record them) either rule the
file out or not; a table none of whose files can match holds no such row. delta-spark answers the same question
only by rebuilding the table's state in a Spark job (a few seconds in a fresh JVM): the Spark store asks this first
so that replacing the rows of a run nobody wrote yet is a blind append (``SparkTableStore.overwrite_partition``).

The answer is conservative: anything it cannot decide (a file without statistics, a value of a type it does not
compare, a value whose type is not the column's) counts as "may hold". String statistics of ``STRING_PREFIX``
characters or more are not used: a writer may have cut them to a prefix (delta-spark keeps 32 characters and marks
a cut maximum; not every writer does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

__all__ = ["may_hold"]

_COMPARABLE = (str, int)
STRING_PREFIX = 32


def may_hold(table: DeltaTable, where: Mapping[str, Any]) -> bool:
    """False only when no active file of ``table`` can hold a row with every ``column == value`` of ``where``."""
    if not where or not all(type(v) in _COMPARABLE for v in where.values()):  # bool is an int: not compared
        return True
    fields = {f.name: f.type for f in pa.schema(table.schema().to_arrow())}
    if not all(column in fields and _same_kind(fields[column], value) for column, value in where.items()):
        return True  # a string compared with a number column (or the reverse): Spark's casts decide, not us
    files = pa.table(table.get_add_actions(flatten=True))
    if files.num_rows == 0:
        return False
    partition_columns = set(table.metadata().partition_columns)
    ruled_out = pa.array([False] * files.num_rows)
    for column, value in where.items():
        if column in partition_columns:
            other = pc.not_equal(_as(files[f"partition.{column}"], value), value)
            ruled_out = pc.or_(ruled_out, pc.fill_null(other, True))  # a null partition value is not ``value``
        elif f"min.{column}" in files.column_names and f"max.{column}" in files.column_names:
            low, high = _statistic(files[f"min.{column}"], value), _statistic(files[f"max.{column}"], value)
            outside = pc.or_(pc.greater(low, value), pc.less(high, value))
            ruled_out = pc.or_(ruled_out, pc.fill_null(outside, False))  # no statistic: cannot rule it out
    return not pc.all(ruled_out).as_py()


def _same_kind(column_type: Any, value: Any) -> bool:
    """A string value for a plain string column, an int for an integer column: compared exactly as Spark would."""
    if isinstance(value, str):
        return pa.types.is_string(column_type) or pa.types.is_large_string(column_type)
    return pa.types.is_integer(column_type)


def _as(values: pa.ChunkedArray, value: Any) -> pa.ChunkedArray:
    """``values`` in the Arrow type of ``value`` (partition values may come as strings)."""
    target = pa.string() if isinstance(value, str) else pa.int64()
    return values if values.type == target else values.cast(target)


def _statistic(values: pa.ChunkedArray, value: Any) -> pa.ChunkedArray:
    """A min or max statistic as comparable with ``value``; null where it may be a truncated string."""
    values = _as(values, value)
    if isinstance(value, str):
        values = pc.if_else(pc.less(pc.utf8_length(values), STRING_PREFIX), values, pa.scalar(None, pa.string()))
    return values
