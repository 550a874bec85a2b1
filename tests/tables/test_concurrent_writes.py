"""``run_writes``: every write runs, results keep their order, the first error is raised, local properties follow."""

from __future__ import annotations

import threading

import pytest

from pipelines.tables.concurrent_writes import run_writes


def _writes(log: list[str], fail: set[int]) -> list:
    def make(i: int):
        def write() -> int:
            log.append(f"w{i}")
            if i in fail:
                raise ValueError(f"write {i} failed")
            return i * 10
        return write
    return [make(i) for i in range(4)]


def test_without_a_session_the_writes_run_in_order() -> None:
    log: list[str] = []
    assert run_writes(_writes(log, set())) == [0, 10, 20, 30]
    assert log == ["w0", "w1", "w2", "w3"]


@pytest.mark.spark
def test_with_a_session_every_write_runs_and_the_first_error_is_raised(spark) -> None:
    log: list[str] = []
    with pytest.raises(ValueError, match="write 1 failed"):
        run_writes(_writes(log, {1, 3}), spark=spark)
    assert sorted(log) == ["w0", "w1", "w2", "w3"]


@pytest.mark.spark
def test_with_a_session_writes_run_in_threads_with_the_callers_local_properties(spark) -> None:
    sc = spark.sparkContext
    sc.setLocalProperty("logdir_gc.step", "crawl")
    try:
        def seen() -> tuple[str | None, str]:
            return sc.getLocalProperty("logdir_gc.step"), threading.current_thread().name

        results = run_writes([seen, seen, seen], spark=spark)
    finally:
        sc.setLocalProperty("logdir_gc.step", None)
    assert [step for step, _ in results] == ["crawl"] * 3
    assert all(name != threading.current_thread().name for _, name in results)
