"""Which Delta engine writes which table: one writer engine per table, on every store.

Why: on S3 the two engines coordinate commits differently. delta-rs (1.x) commits with a conditional put
(``If-None-Match: *``), so delta-rs writers never overwrite a commit. delta-spark 4.4.0's S3 log store
(``S3SingleDriverLogStore``) checks that the commit file is absent and then writes it unconditionally: safe against
other writers in the same JVM only. A delta-spark commit can therefore overwrite a delta-rs commit that landed
between its check and its write, and the lost commit would be an approval or a journal row. Each table is written
by one engine only (both engines read every table); ``docs/design.md`` gives the whole argument.

* Spark (delta-spark) writes what the Spark jobs compute: the crawl, controller and findings tables and the
  ``metadata_events`` history.
* delta-rs writes what people and broker hosts write, and what the plan step registers: ``gc_plans``,
  ``gc_plan_items``, ``gc_plan_audit``, ``gc_plan_signatures``, ``gc_journal``.

Tables not named here (ad-hoc tables of tests and notebooks) have no owner: either engine may write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pipelines.errors import PipelinesError

__all__ = ["RUST", "SPARK", "WRITER", "WrongEngine", "check_writer", "writer_of"]

SPARK = "spark"
RUST = "rust"

#: Human names of the engines, for messages and the table docs.
ENGINE_NAMES: Mapping[str, str] = MappingProxyType({SPARK: "delta-spark (the Spark jobs)",
                                                    RUST: "delta-rs (CLI, plan step, executors)"})

_SPARK_TABLES = ("crawl_runs", "ingest_runs", "log_dirs", "partition_dirs", "segment_files", "crawl_errors",
                 "controller_topics", "controller_partitions", "controller_brokers", "controller_broker_configs",
                 "metadata_events", "findings", "remote_objects", "remote_log_segments", "remote_findings")
_RUST_TABLES = ("gc_plans", "gc_plan_items", "gc_plan_audit", "gc_plan_signatures", "gc_journal")

#: table name → the engine that writes it.
WRITER: Mapping[str, str] = MappingProxyType({**{t: SPARK for t in _SPARK_TABLES}, **{t: RUST for t in _RUST_TABLES}})


class WrongEngine(PipelinesError):
    """A write to a table from the engine that does not own it (it could lose another engine's commit on S3)."""


def writer_of(table: str) -> str | None:
    """The engine that writes ``table``; ``None`` for a table this project does not declare."""
    return WRITER.get(table)


def check_writer(engine: str, table: str) -> None:
    """Raise :class:`WrongEngine` unless ``engine`` may write ``table``."""
    owner = WRITER.get(table)
    if owner is not None and owner != engine:
        raise WrongEngine(f"table {table} is written by {ENGINE_NAMES[owner]} only; a {engine} write was refused "
                          "(two engines committing to one table can lose commits on S3)")
