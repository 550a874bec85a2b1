"""The table interface both Delta engines implement, plus the pieces they share.

A :class:`TableStore` owns a *warehouse root*: every table lives at ``<warehouse>/<table name>``. The root is a
local path or a ``file://`` URL (object-store URLs are passed through untouched; their credentials belong to the
engine). Tables are addressed by name or by their :class:`~pipelines.tables.schemas.TableSchema`.

Filters (``where``) are equality maps: ``{"run_id": "r1", "broker_id": 3}``; a ``None`` value means IS NULL and a
list/tuple/set means IN. Anything richer belongs in Spark (read the DataFrame and filter it).

Concurrency: every write runs under :func:`retry_on_conflict`. Delta's optimistic concurrency makes a losing
writer fail its commit *without* writing; the whole operation is then re-run against the new table version, so
no write is lost. Not guaranteed: ``append`` retried after an ambiguous failure (e.g. a storage timeout *after*
the commit file landed) can duplicate rows; use ``overwrite_partition``/``merge`` where reruns must be
idempotent.

Ownership: each table of the pipeline is written by one engine (``pipelines.tables.ownership``); a write from the
other engine raises :class:`~pipelines.tables.ownership.WrongEngine` before anything is written, on every store.
Object stores: reads and writes that meet an unreachable or throttling store are retried with backoff, then
fail with one :class:`~pipelines.errors.StorageUnavailable` line (``pipelines.tables.storage_retry``).
"""

from __future__ import annotations

import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, ClassVar, Literal, TypeVar
from urllib.parse import urlparse

from pipelines.tables.backoff import RetryPolicy
from pipelines.tables.schemas import ALL_TABLES, TableSchema
from pipelines.tables.storage_retry import STORAGE_RETRY, retry_transient

__all__ = [
    "DEFAULT_RETRY",
    "HistoryEntry",
    "MergeCounts",
    "RetryPolicy",
    "TableRef",
    "TableStore",
    "check_rows",
    "conform_arrow",
    "first_mismatch",
    "matches",
    "quote_ident",
    "retry_on_conflict",
    "sql_literal",
    "sql_predicate",
    "table_name",
]

TableRef = str | TableSchema
_GUARD = threading.local()  # set while a thread is inside TableStore._guarded
Where = Mapping[str, Any]
T = TypeVar("T")


def table_name(table: TableRef) -> str:
    return table.name if isinstance(table, TableSchema) else table


@dataclass(frozen=True, slots=True)
class MergeCounts:
    """Rows a ``merge`` inserted and updated."""

    inserted: int
    updated: int


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One commit of a Delta table, engine-neutral. ``timestamp`` is the commit time (UTC)."""

    version: int
    timestamp: datetime
    operation: str
    parameters: Mapping[str, str]
    metrics: Mapping[str, str]


#: Backoff for commit conflicts: many short waits (a losing writer re-runs against the newer version at once).
DEFAULT_RETRY = RetryPolicy()


def retry_on_conflict(
    operation: Callable[[], T],
    is_conflict: Callable[[BaseException], bool],
    policy: RetryPolicy = DEFAULT_RETRY,
) -> T:
    """Run ``operation``; re-run it after a commit conflict, at most ``policy.attempts`` times in all.

    Raises:
        The last conflict error once attempts are exhausted; any other error at once.
    """
    for attempt in range(policy.attempts):
        try:
            return operation()
        except Exception as exc:
            if not is_conflict(exc) or attempt + 1 == policy.attempts:
                raise
            time.sleep(policy.delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def quote_ident(name: str) -> str:
    """A column name as a SQL identifier that Spark SQL and DataFusion both read."""
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any, dialect: Literal["spark", "datafusion"]) -> str:
    """Render a Python scalar as a SQL literal for Spark SQL or delta-rs (DataFusion) predicates.

    Strings: Spark treats backslash as an escape character, DataFusion does not; both accept the result.
    Datetimes must be timezone-aware; they are rendered in UTC ISO form and compared as timestamps.

    Raises:
        TypeError: an unsupported type (or a naive datetime).
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"non-finite float {value!r} has no portable SQL literal")
        return repr(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError(f"naive datetime {value!r}: timestamps must be timezone-aware (UTC)")
        text = value.astimezone(timezone.utc).isoformat()
        return f"TIMESTAMP '{text}'" if dialect == "spark" else f"'{text}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        if dialect == "spark":
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {type(value).__name__} {value!r}")


def sql_predicate(where: Where | None, dialect: Literal["spark", "datafusion"], alias: str = "") -> str:
    """``AND`` of equality terms; ``"TRUE"`` when ``where`` is empty. ``alias`` qualifies the columns."""
    if not where:
        return "TRUE"
    prefix = f"{alias}." if alias else ""
    terms = []
    for column, value in where.items():
        ident = prefix + quote_ident(column)
        if value is None:
            terms.append(f"{ident} IS NULL")
        elif isinstance(value, list | tuple | set | frozenset):
            if not value:
                terms.append("FALSE")
            else:
                items = ", ".join(sql_literal(v, dialect) for v in sorted(value, key=repr))
                terms.append(f"{ident} IN ({items})")
        else:
            terms.append(f"{ident} = {sql_literal(value, dialect)}")
    return " AND ".join(terms)


def check_rows(schema: TableSchema, rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return ``rows`` as a list after checking every key is a column (missing keys become NULL).

    Raises:
        ValueError: a row has a key the table does not have (it would be silently dropped otherwise).
    """
    known = set(schema.column_names)
    out = list(rows)
    for index, row in enumerate(out):
        unknown = set(row) - known
        if unknown:
            raise ValueError(f"{schema.name}: row {index} has unknown columns {sorted(unknown)}")
    return out


def conform_arrow(name: str, schema: Any, rows: Any) -> Any:
    """A ``pyarrow.Table`` with exactly ``schema``'s columns, in its order and types (missing columns NULL).

    Raises:
        ValueError: ``rows`` has a column the table does not have.
    """
    import pyarrow as pa

    unknown = [n for n in rows.column_names if n not in schema.names]
    if unknown:
        raise ValueError(f"{name}: unknown columns {unknown}")
    for column in schema.names:
        if column not in rows.column_names:
            rows = rows.append_column(column, pa.nulls(rows.num_rows, schema.field(column).type))
    return rows.select(schema.names).cast(schema)


def first_mismatch(rows: Any, where: Where) -> int | None:
    """Index of the first row of the ``pyarrow.Table`` that does not satisfy ``where`` (:func:`matches`), or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ok = None
    for column, value in where.items():
        values = list(value) if isinstance(value, list | tuple | set | frozenset) else [value]
        hit = pc.is_in(rows[column], value_set=pa.array(values, type=rows.schema.field(column).type),
                       skip_nulls=False)
        ok = hit if ok is None else pc.and_(ok, hit)
    if ok is None:
        return None
    bad = pc.indices_nonzero(pc.invert(pc.fill_null(ok, False)))
    return bad[0].as_py() if len(bad) else None


def matches(row: Mapping[str, Any], where: Where) -> bool:
    """True when ``row`` satisfies the equality map (the Python twin of :func:`sql_predicate`)."""
    for column, value in where.items():
        cell = row.get(column)
        if isinstance(value, list | tuple | set | frozenset):
            if cell not in value:
                return False
        elif cell != value:
            return False
    return True


class TableStore(ABC):
    """Delta tables under one warehouse root. Engines: ``spark`` and ``rust`` (see ``registry``).

    Rows go in as ``list[dict]`` or ``pyarrow.Table`` (both engines) or a Spark ``DataFrame`` (Spark engine).

    Args:
        warehouse: root path or URL.
        retry: backoff for commit conflicts.
        storage_retry: backoff for an unreachable or throttling object store (default
            ``storage_retry.STORAGE_RETRY``).
        secrets: values redacted from every error this store raises.
        allow_foreign_tables: let this engine write tables the other engine owns. Only for test fixtures that
            build a warehouse without Spark; never on a shared object store.
    """

    #: The engine name of ``pipelines.tables.ownership`` (``"spark"`` or ``"rust"``).
    engine: ClassVar[str]

    def __init__(self, warehouse: str, *, retry: RetryPolicy = DEFAULT_RETRY, storage_retry: RetryPolicy | None = None,
                 secrets: Sequence[str] = (), allow_foreign_tables: bool = False) -> None:
        self.warehouse = _normalise_root(warehouse)
        self.retry = retry
        self.storage_retry = storage_retry
        self.secrets = tuple(secrets)
        self.allow_foreign_tables = allow_foreign_tables
        self._schemas: dict[str, TableSchema] = {}

    def table_uri(self, table: TableRef) -> str:
        """Location of ``table``: ``<warehouse>/<name>``."""
        return f"{self.warehouse.rstrip('/')}/{table_name(table)}"

    def declared_schema(self, table: TableRef) -> TableSchema | None:
        """The schema passed in, or registered by ``create_if_missing``, or in ``ALL_TABLES``."""
        if isinstance(table, TableSchema):
            return table
        return self._schemas.get(table) or ALL_TABLES.get(table)

    @abstractmethod
    def is_conflict(self, exc: BaseException) -> bool:
        """True for the engine's commit-conflict errors (safe to re-run the operation)."""

    def _retrying(self, operation: Callable[[], T]) -> T:
        """A write: conflicts re-run against the newest version, inside the transient-store retries."""
        return self._guarded(lambda: retry_on_conflict(operation, self.is_conflict, self.retry))

    def _guarded(self, operation: Callable[[], T]) -> T:
        """Any store call: an unreachable or throttling store is retried, then one ``StorageUnavailable``.

        Only the outermost call of a thread retries (a write's inner reads do not multiply the attempts).
        """
        from pipelines.tables.object_store import redact

        if getattr(_GUARD, "active", False):
            return operation()
        _GUARD.active = True
        try:
            return retry_transient(operation, where=self.warehouse, redact=lambda text: redact(text, self.secrets),
                                   policy=self.storage_retry or STORAGE_RETRY)
        finally:
            _GUARD.active = False

    def check_writer(self, table: TableRef) -> None:
        """Raise ``WrongEngine`` when this engine does not own ``table`` (see ``pipelines.tables.ownership``)."""
        from pipelines.tables.ownership import check_writer

        if not self.allow_foreign_tables:
            check_writer(self.engine, table_name(table))

    @abstractmethod
    def exists(self, table: TableRef) -> bool:
        """True when a Delta table is at ``table_uri(table)``."""

    @abstractmethod
    def create_if_missing(self, schema: TableSchema) -> bool:
        """Create the table with the declared columns and partition columns; True if this call created it.

        An existing table is left as is (its schema is *not* compared with ``schema``).
        """

    def ensure_tables(self, names: Iterable[str] | None = None) -> list[str]:
        """Create each named ``ALL_TABLES`` table that is missing (default: every table this engine writes, all of
        them with ``allow_foreign_tables``); returns those created."""
        from pipelines.tables.ownership import writer_of

        if names is None:
            names = [n for n in ALL_TABLES if self.allow_foreign_tables or writer_of(n) in (None, self.engine)]
        return [name for name in names if self.create_if_missing(ALL_TABLES[name])]

    @abstractmethod
    def append(self, table: TableRef, rows: Any) -> None:
        """Append rows (not idempotent: a rerun appends again)."""

    @abstractmethod
    def overwrite_partition(self, table: TableRef, predicate_columns: Where, rows: Any) -> None:
        """Atomically replace the rows matching ``predicate_columns`` (Delta ``replaceWhere``) with ``rows``.

        Reruns with the same values (e.g. ``{"run_id": "r1"}``) never duplicate rows. Every row must match
        the predicate.

        Raises:
            ValueError: a row does not match ``predicate_columns`` (Spark reports it as its own error).
        """

    @abstractmethod
    def merge(
        self, table: TableRef, rows: Any, keys: Sequence[str], update_columns: Sequence[str] | None = None
    ) -> MergeCounts:
        """Upsert: rows whose ``keys`` match are updated (all columns, or ``update_columns``); others inserted.

        Source rows must be unique on ``keys``; keys are compared with ``=`` (NULL keys never match).
        """

    @abstractmethod
    def update(self, table: TableRef, where: Where, set_values: Mapping[str, Any]) -> int:
        """``UPDATE table SET set_values WHERE where``; returns the number of rows updated.

        Because it is retried on conflicts against the newest version, ``where`` can act as a compare-and-set
        (e.g. ``{"plan_id": p, "status": "pending"}``): a lost race updates 0 rows instead of overwriting.
        """

    @abstractmethod
    def read(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
    ) -> Any:
        """Rows (engine-native: Spark DataFrame or ``pyarrow.Table``), optionally at a version or time."""

    @abstractmethod
    def read_arrow(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
        columns: Sequence[str] | None = None,
    ) -> Any:
        """Like :meth:`read` but always a ``pyarrow.Table`` with timestamps as ``timestamp[us, UTC]``; only
        ``columns`` (in that order) when given."""

    def read_rows(
        self,
        table: TableRef,
        where: Where | None = None,
        version: int | None = None,
        timestamp: datetime | str | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows as dicts (timestamps as aware UTC datetimes); only ``columns`` when given."""
        return self.read_arrow(table, where, version=version, timestamp=timestamp, columns=columns).to_pylist()

    @abstractmethod
    def history(self, table: TableRef, limit: int | None = None) -> list[HistoryEntry]:
        """Commits, newest first."""

    @abstractmethod
    def version(self, table: TableRef) -> int:
        """Current table version (0 right after creation)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.warehouse!r})"


def _normalise_root(warehouse: str) -> str:
    """Local roots become absolute paths (``file://`` stripped); other URLs are kept as given."""
    from pathlib import Path

    parsed = urlparse(warehouse)
    if parsed.scheme == "file":
        return str(Path(parsed.path).resolve())
    if parsed.scheme and len(parsed.scheme) > 1:  # one letter: a Windows drive, not a scheme
        return warehouse
    return str(Path(warehouse).expanduser().resolve())


def utc_from_millis(millis: int) -> datetime:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc)
