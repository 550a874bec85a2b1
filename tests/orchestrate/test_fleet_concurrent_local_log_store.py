"""``LocalLinkLogStore``: writers racing for one version of a table on local disk leave exactly one commit.

Delta's default for ``file:`` paths (``HDFSLogStore`` over Hadoop's local file system) checks that the version is
absent (``lstat``) and then ``rename(2)``s its temporary file over the name: two writers that both pass the check
both "succeed", the later rename replacing the earlier commit. On a local disk that window is two system calls wide
and 100 races here did not hit it (``KLGC_TEST_WITHOUT_COORDINATION=1`` races Delta's default); on NFS the check
reads the client's attribute cache, seconds old. ``link(2)`` has no window: the kernel (or the NFS server) refuses an
existing name. Writers race in threads of one JVM (neither store takes an in-JVM lock, so threads race as drivers
do).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pipelines.tables.commit_log_store import LOCAL_LOG_STORE
from tests.fleet_concurrency import WITHOUT_COORDINATION
from tests.log_store_driver import LogStoreDriver, assert_a_retried_commit_is_ours, java_error

STORE = "io.delta.storage.HDFSLogStore" if WITHOUT_COORDINATION else LOCAL_LOG_STORE
WRITERS = 4
VERSIONS = 25


def _driver(spark: Any) -> LogStoreDriver:
    return LogStoreDriver(spark, STORE, spark.sparkContext._jsc.hadoopConfiguration())


@pytest.mark.spark
def test_writers_racing_for_one_version_leave_exactly_one_commit(spark: Any, tmp_path: Path) -> None:
    driver = _driver(spark)
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    for version in range(VERSIONS):
        path = f"file:{log}/{version:020d}.json"
        barrier = threading.Barrier(WRITERS)
        won: list[int] = []
        lost: list[str] = []

        def write(writer: int, path: str = path, barrier: threading.Barrier = barrier,
                  won: list[int] = won, lost: list[str] = lost) -> None:
            lines = [f'{{"commitInfo":{{"writer":{writer}}}}}']
            barrier.wait()
            try:
                driver.write(path, lines)
                won.append(writer)
            except Exception as exc:
                lost.append(java_error(exc) or repr(exc))

        threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1, f"version {version}: writers {won} all committed, one commit replaced the others"
        assert set(lost) == {"java.nio.file.FileAlreadyExistsException"}, lost
        assert driver.read(path) == [f'{{"commitInfo":{{"writer":{won[0]}}}}}']
    assert not [p.name for p in log.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


@pytest.mark.spark
def test_a_retried_write_of_the_same_commit_succeeds_and_another_commit_is_refused(spark: Any,
                                                                                   tmp_path: Path) -> None:
    """A link whose reply was lost (NFS) and is retried finds its own bytes: that is our commit, not a conflict."""
    driver = _driver(spark)
    (tmp_path / "_delta_log").mkdir()
    path = f"file:{tmp_path}/_delta_log/{0:020d}.json"
    assert_a_retried_commit_is_ours(driver, path)
