"""The rules behind concurrent pipelines on one warehouse, without Spark: which log store a session may commit to an
S3 warehouse with, and how a table another driver created at the same moment is joined (verified, never rebuilt)."""

from __future__ import annotations

import logging

import pytest

from pipelines.errors import ConfigError
from pipelines.tables.commit_log_store import LOCAL_LOG_STORE, S3_LOG_STORE, check_log_store, log_store_settings
from pipelines.tables.schemas import ALL_TABLES
from pipelines.tables.table_creation import check_existing, create_once, is_creation_race

FINDINGS = ALL_TABLES["findings"]
WH = "s3://bucket/wh"


def test_an_s3_warehouse_is_refused_to_a_session_with_delta_s_unchosen_single_driver_store() -> None:
    with pytest.raises(ConfigError, match="single-driver S3 log store"):
        check_log_store({"spark.master": "local[1]"}, "s3", WH)
    with pytest.raises(ConfigError):
        check_log_store({"spark.delta.logStore.file.impl": LOCAL_LOG_STORE}, "s3a", WH)


@pytest.mark.parametrize("conf", [{"spark.delta.logStore.s3.impl": S3_LOG_STORE},
                                  {"spark.delta.logStore.s3.impl": "io.delta.storage.S3DynamoDBLogStore"},
                                  {"spark.delta.logStore.class": S3_LOG_STORE}])
def test_a_multi_driver_s3_log_store_is_accepted_silently(conf: dict[str, str],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        check_log_store(conf, "s3", WH)
    assert not caplog.records


def test_an_explicitly_chosen_single_driver_store_and_an_unchosen_local_one_are_warned_about(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pipelines.tables.commit_log_store"):
        check_log_store({"spark.delta.logStore.s3.impl": "io.delta.storage.S3SingleDriverLogStore"}, "s3", WH)
        check_log_store({}, "", "/data/wh")
    assert [r.getMessage().split(" through ")[1].split(",")[0] for r in caplog.records] == [
        "io.delta.storage.S3SingleDriverLogStore", "Delta's default log store"]


def test_settings_keep_a_store_the_caller_chose() -> None:
    settings = log_store_settings({"spark.delta.logStore.s3.impl": "io.delta.storage.S3DynamoDBLogStore"})
    assert "spark.delta.logStore.s3.impl" not in settings
    assert settings.get("spark.delta.logStore.file.impl") == LOCAL_LOG_STORE  # javac and the Delta jars are here
    assert log_store_settings({"spark.delta.logStore.class": "x.Y"}) == {}  # Delta refuses both kinds together


class _Race(Exception):
    pass


def test_a_creation_race_joins_the_table_the_winner_made_after_checking_it() -> None:
    calls: list[str] = []
    tables: list[str] = []

    def create() -> None:
        calls.append("create")
        tables.append("theirs")  # the other driver's commit landed first
        raise _Race("[DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION] cannot create table")

    made = create_once(create, lambda: bool(tables), lambda: calls.append("check"), sleep=lambda _s: None)
    assert made is False and calls == ["create", "check"]


def test_a_creation_race_whose_table_is_not_there_yet_creates_again() -> None:
    attempts = iter([_Race("ProtocolChangedException: concurrent update"), None])

    def create() -> None:
        error = next(attempts)
        if error:
            raise error

    assert create_once(create, lambda: False, lambda: None, sleep=lambda _s: None) is True


def test_other_errors_are_raised_at_once() -> None:
    calls = []

    def create() -> None:
        calls.append(1)
        raise PermissionError("denied")

    with pytest.raises(PermissionError):
        create_once(create, lambda: True, lambda: None, sleep=lambda _s: None)
    assert calls == [1]
    assert not is_creation_race(PermissionError("denied"))


def test_a_table_made_with_other_types_or_partitioning_is_named_not_joined() -> None:
    columns = {f.name: f.dataType.simpleString() for f in FINDINGS.to_spark().fields}
    check_existing(FINDINGS, columns, list(FINDINGS.partition_by), "wh/findings")
    check_existing(FINDINGS, {k: v for k, v in columns.items() if k != "bytes"}, list(FINDINGS.partition_by), "w")
    with pytest.raises(ConfigError, match="column bytes of type string"):
        check_existing(FINDINGS, {**columns, "bytes": "string"}, list(FINDINGS.partition_by), "wh/findings")
    with pytest.raises(ConfigError, match="partitioned by"):
        check_existing(FINDINGS, columns, ["cluster"], "wh/findings")
