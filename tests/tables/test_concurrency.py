"""Concurrent writers through the delta-rs engine: every write lands, none is lost (commit conflicts retry)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipelines.tables.base import RetryPolicy
from pipelines.tables.rust_engine import RustTableStore
from pipelines.tables.schemas import Column, TableSchema

COUNTER = TableSchema("counter", (Column("key", "string", nullable=False), Column("n", "long")))
RETRY = RetryPolicy(attempts=60, base_delay_s=0.01, max_delay_s=0.2)


def increment(warehouse: str, times: int) -> int:
    """Compare-and-set increments of the single counter row; returns how many CAS attempts lost."""
    store = RustTableStore(warehouse, retry=RETRY)
    lost = 0
    for _ in range(times):
        while True:
            current = store.read_rows(COUNTER, {"key": "c"})[0]["n"]
            if store.update(COUNTER, {"key": "c", "n": current}, {"n": current + 1}) == 1:
                break
            lost += 1
    return lost


def new_counter(tmp_path: Path) -> str:
    store = RustTableStore(str(tmp_path))
    store.create_if_missing(COUNTER)
    store.append(COUNTER, [{"key": "c", "n": 0}])
    return str(tmp_path)


def test_concurrent_compare_and_set_updates_from_threads_all_land(tmp_path: Path) -> None:
    warehouse = new_counter(tmp_path)
    workers, times = 4, 5
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: increment(warehouse, times), range(workers)))
    assert RustTableStore(warehouse).read_rows(COUNTER) == [{"key": "c", "n": workers * times}]


def test_concurrent_updates_from_processes_all_land(tmp_path: Path) -> None:
    warehouse = new_counter(tmp_path)
    workers, times = 2, 3
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.starmap(increment, [(warehouse, times)] * workers)
    assert RustTableStore(warehouse).read_rows(COUNTER) == [{"key": "c", "n": workers * times}]


def test_concurrent_appends_from_threads_all_land(tmp_path: Path) -> None:
    store = RustTableStore(str(tmp_path), retry=RETRY)
    store.create_if_missing(COUNTER)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: store.append(COUNTER, [{"key": f"k{i}", "n": i}]), range(12)))
    assert sorted(r["n"] for r in store.read_rows(COUNTER)) == list(range(12))
