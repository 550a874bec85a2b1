"""One writer engine per table, enforced on every store: a write from the other engine is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.tables.ownership import WRITER, WrongEngine
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import ALL_TABLES

ROOT = Path(__file__).resolve().parents[2]


def test_every_declared_table_has_one_writer() -> None:
    assert set(WRITER) == set(ALL_TABLES)
    assert {t for t, e in WRITER.items() if e == "rust"} == {"gc_plans", "gc_plan_items", "gc_plan_audit",
                                                            "gc_plan_signatures", "gc_journal"}


def test_delta_rs_refuses_to_write_a_spark_table_before_writing_anything(tmp_path: Path) -> None:
    store = RustTableStore(str(tmp_path))
    for write in (lambda: store.create_if_missing(ALL_TABLES["findings"]),
                  lambda: store.append("findings", []),
                  lambda: store.overwrite_partition("partition_dirs", {"run_id": "r"}, []),
                  lambda: store.merge("metadata_events", [], keys=["cluster"]),
                  lambda: store.update("crawl_runs", {"run_id": "r"}, {"status": "failed"})):
        with pytest.raises(WrongEngine, match=r"^table \w+ is written by delta-spark .* only; a rust write was"):
            write()
    assert not any(tmp_path.iterdir())
    assert store.ensure_tables() == ["gc_plans", "gc_plan_items", "gc_plan_audit", "gc_plan_signatures",
                                    "gc_journal"]


@pytest.mark.spark
def test_delta_spark_refuses_to_write_a_plan_table(spark, tmp_path: Path) -> None:
    from pipelines.tables.spark_engine import SparkTableStore

    store = SparkTableStore(spark, str(tmp_path))
    with pytest.raises(WrongEngine, match="gc_plan_audit is written by delta-rs"):
        store.append("gc_plan_audit", [{"plan_id": "p", "action": "approve"}])
    with pytest.raises(WrongEngine):
        store.create_if_missing(ALL_TABLES["gc_plans"])
    assert "gc_plans" not in store.ensure_tables() and store.exists("findings")


def test_a_wrong_engine_write_is_one_line_with_exit_code_9(tmp_path: Path) -> None:
    from pipelines.cli.exit_codes import FAILED, code_for

    assert code_for(WrongEngine("x")) == FAILED
    with pytest.raises(WrongEngine) as info:
        RustTableStore(str(tmp_path)).append("findings", [])
    assert "\n" not in str(info.value)


#: The one production writer of other engines' tables: ``warehouse merge``, an operator's one-off command whose every
#: appended unit is read back (docs/safety.md, "Merging a warehouse into the fleet's").
FOREIGN_WRITERS = {"pipelines/cli/warehouse_cmd.py"}


def test_no_production_code_writes_foreign_tables() -> None:
    """``allow_foreign_tables`` is for test fixtures and the warehouse merge only."""
    offenders = {str(p.relative_to(ROOT)) for d in ("pipelines", "jobs") for p in (ROOT / d).rglob("*.py")
                 if re.search(r"allow_foreign_tables\s*=\s*True", p.read_text())}
    assert offenders == FOREIGN_WRITERS
