"""Predicates and literals shared by both engines (quoting is where injection and wrong matches come from)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pipelines.tables.base import matches, sql_literal, sql_predicate


@pytest.mark.parametrize(
    ("value", "spark", "datafusion"),
    [
        ("it's", "'it\\'s'", "'it''s'"),
        ("a\\b", "'a\\\\b'", "'a\\b'"),
        (True, "TRUE", "TRUE"),
        (7, "7", "7"),
        (
            datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))),
            "TIMESTAMP '2024-01-01T00:00:00+00:00'",
            "'2024-01-01T00:00:00+00:00'",
        ),
    ],
)
def test_literals_per_dialect(value: object, spark: str, datafusion: str) -> None:
    assert sql_literal(value, "spark") == spark
    assert sql_literal(value, "datafusion") == datafusion


@pytest.mark.parametrize("value", [datetime(2024, 1, 1), float("nan"), object()])
def test_literals_refuse_ambiguous_values(value: object) -> None:
    with pytest.raises(TypeError):
        sql_literal(value, "spark")


def test_predicate_quotes_identifiers_and_handles_null_and_in() -> None:
    where = {"partition": 1, "topic`x": None, "run_id": ["b", "a"], "k": []}
    assert sql_predicate(where, "datafusion", alias="t") == (
        "t.`partition` = 1 AND t.`topic``x` IS NULL AND t.`run_id` IN ('a', 'b') AND FALSE"
    )
    assert sql_predicate({}, "spark") == "TRUE"


def test_matches_is_the_python_twin_of_the_predicate() -> None:
    row = {"a": 1, "b": None, "c": "x"}
    assert matches(row, {"a": 1, "b": None, "c": ["x", "y"]})
    assert not matches(row, {"a": 2})
    assert not matches(row, {"b": 0})
    assert not matches(row, {"c": []})
