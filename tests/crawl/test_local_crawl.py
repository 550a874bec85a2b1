"""The pure-Python crawl of synthetic log dirs: rows as expected, bad entries as error rows, nothing raised."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.crawl.local_crawl import crawl_local
from pipelines.kafka.root_files import KNOWN_ROOT_FILES
from pipelines.tables.schemas import CRAWL_ERRORS, CRAWL_RUNS, LOG_DIRS, PARTITION_DIRS, SEGMENT_FILES
from tests.crawl.conftest import Broker, expected_topic_id

pytestmark = pytest.mark.timeout(60)


def _files_under(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.is_file()]


def test_rows_have_exact_columns_and_utc_times(brokers: list[Broker]) -> None:
    result = crawl_local(brokers, run_id="r1", cluster="c1", include_segments=True)
    for rows, schema in ((result.log_dirs, LOG_DIRS), (result.partition_dirs, PARTITION_DIRS),
                         (result.segment_files, SEGMENT_FILES), (result.errors, CRAWL_ERRORS),
                         ([result.run_row], CRAWL_RUNS)):  # fmt: skip
        for row in rows:
            assert tuple(row) == schema.column_names
    assert result.log_dirs[0]["crawled_at"].utcoffset().total_seconds() == 0
    assert result.run_row["status"] == "succeeded" and result.errors == []


def test_partition_rows_match_what_is_on_disk(cluster: dict[str, Path], brokers: list[Broker]) -> None:
    result = crawl_local(brokers, run_id="r1", cluster="c1")
    by_name = {(r["broker_id"], Path(r["log_dir"]).name, r["dir_name"]): r for r in result.partition_dirs}
    for (broker, logdir, name), row in by_name.items():
        files = _files_under(cluster[logdir] / name)
        assert row["files"] == len(files)
        assert row["bytes"] == sum(f.stat().st_size for f in files)
        assert row["run_id"] == "r1" and row["cluster"] == "c1" and row["broker_id"] == broker
    orders0 = by_name[(1, "b1-d0", "orders-0")]
    assert (orders0["kind"], orders0["topic"], orders0["partition"]) == ("live", "orders", 0)
    assert orders0["topic_id"] == expected_topic_id("orders")
    assert (orders0["segment_count"], orders0["min_base_offset"], orders0["max_base_offset"]) == (2, 0, 100)
    kinds = {r["dir_name"].split(".")[0]: r["kind"] for r in result.partition_dirs}
    assert kinds["gone-3"] == "delete" and kinds["old-0"] == "stray" and kinds["__cluster_metadata-0"] == "metadata"
    assert result.run_row["partition_dirs"] == len(result.partition_dirs) == 7


def test_log_dir_rows_totals_and_attribution(cluster: dict[str, Path], brokers: list[Broker]) -> None:
    result = crawl_local(brokers, run_id="r1", cluster="c1")
    rows = {Path(r["log_dir"]).name: r for r in result.log_dirs}
    assert set(rows) == set(cluster)
    for name, row in rows.items():
        st = os.statvfs(cluster[name])
        assert row["fs_total_bytes"] == st.f_blocks * st.f_frsize
        root_bytes = sum(f.stat().st_size for f in _files_under(cluster[name]) if f.name in KNOWN_ROOT_FILES)
        dir_bytes = sum(r["bytes"] for r in result.partition_dirs if Path(r["log_dir"]).name == name)
        assert row["attributed_bytes"] == root_bytes + dir_bytes
    assert rows["b1-d0"]["is_metadata_log_dir"] and not rows["b1-d1"]["is_metadata_log_dir"]
    assert rows["b2-d0"]["meta_node_id"] == 2 and rows["b1-d0"]["has_lock_file"]


def test_unreadable_entries_become_error_rows_and_the_rest_is_crawled(cluster: dict[str, Path],
                                                                      brokers: list[Broker]) -> None:  # fmt: skip
    d0 = cluster["b1-d0"]
    os.symlink("no-such-target", d0 / "orders-0" / "dangling.log")  # dangling link inside a partition dir
    os.symlink("loop-0", d0 / "loop-0")  # a symlink loop where a partition dir should be
    (d0 / "orders-1" / "partition.metadata").unlink()
    os.mkfifo(d0 / "orders-1" / "partition.metadata")  # a FIFO: reading it would block forever
    (d0 / "gone-3.0123456789abcdef0123456789abcdef-delete").mkdir()
    (d0 / "gone-3.0123456789abcdef0123456789abcdef-delete" / "partition.metadata").write_bytes(b"\x00\xff\xfe")
    as_file = cluster["b1-d1"] / "payments-2"
    for f in as_file.iterdir():
        f.unlink()
    as_file.rmdir()
    as_file.write_bytes(b"a file where a partition dir was")
    missing = str(d0.parent / "not-there")
    brokers = [Broker(1, (*brokers[0].log_dirs, missing), {}), brokers[1]]

    result = crawl_local(brokers, run_id="r1", cluster="c1")

    errors = {(e["stage"], e["path"].removeprefix(str(d0.parent) + "/")): e for e in result.errors}
    assert errors[("list", "b1-d0/orders-0/dangling.log")]["error_class"] == "FileNotFoundError"
    assert errors[("list", "b1-d0/loop-0")]["error_class"] == "OSError"
    assert errors[("read", "b1-d0/orders-1/partition.metadata")]["error_class"] == "OSError"
    bad_pm = "b1-d0/gone-3.0123456789abcdef0123456789abcdef-delete/partition.metadata"
    assert errors[("parse", bad_pm)]["error_class"] == "partition_metadata_malformed"
    assert errors[("list", "not-there")]["error_class"] == "FileNotFoundError"
    assert len(errors) == len(result.errors) == 5

    pm_status = {r["dir_name"]: r["partition_metadata_status"] for r in result.partition_dirs}
    assert pm_status["orders-1"] == "unreadable" and pm_status["orders-0"] == "ok"
    assert "payments-2" not in pm_status  # now a plain file: Kafka ignores it, so does the crawl
    assert len(result.log_dirs) == 3 and result.run_row["status"] == "partial"
    assert result.run_row["errors"] == 5


def test_a_log_dir_that_is_a_file_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = crawl_local([Broker(5, (str(tmp_path / "f"),), {})], run_id="r", cluster="c")
    assert [(e["stage"], e["error_class"]) for e in result.errors] == [("list", "NotADirectoryError")]
    assert result.run_row["status"] == "failed" and result.log_dirs == []


def _canon(rows: list[dict], drop: frozenset[str] = frozenset({"fs_used_bytes", "fs_free_bytes"})) -> list[tuple]:
    return sorted(tuple((k, repr(v)) for k, v in r.items() if k not in drop) for r in rows)


def test_fanned_out_crawl_gives_the_same_rows(brokers: list[Broker], cluster: dict[str, Path]) -> None:
    os.symlink("nowhere", cluster["b1-d0"] / "orders-1" / "dangling")
    whole = crawl_local(brokers, run_id="r", cluster="c", include_segments=True, fanout_dirs=None)
    at = whole.log_dirs[0]["crawled_at"]
    for fanout in (1, 2):
        split = crawl_local(brokers, run_id="r", cluster="c", include_segments=True, fanout_dirs=fanout,
                            crawled_at=at)  # fmt: skip
        for table in ("log_dirs", "partition_dirs", "segment_files", "errors"):
            assert _canon(getattr(split, table)) == _canon(getattr(whole, table)), (fanout, table)


@pytest.mark.parametrize("compiled", [False, True], ids=["pure", "compiled"])
def test_local_listing_uses_one_scandir_per_directory(
    brokers: list[Broker], cluster: dict[str, Path], monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """A spy (calls pass through to the real os functions) counts directory listings and per-file stats.

    With the compiled lister, every directory is listed in C (opendir/readdir + one fstatat each), none in Python."""
    from pipelines.crawl.backends import local

    if compiled and local._native is None:
        pytest.skip("the compiled lister is not built (or KLGC_PURE_PYTHON is set)")
    if not compiled:
        monkeypatch.setattr(local, "_native", None)
    root = cluster["b2-d0"]
    dirs = [p for p in root.iterdir() if p.is_dir()]
    calls: list[str] = []
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path):  # type: ignore[no-untyped-def]
        calls.append(str(path))
        return real_scandir(path)

    def stat(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(f"stat:{path}")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    crawl_local(brokers[1:], run_id="r", cluster="c")
    monkeypatch.undo()
    assert sorted(calls) == ([] if compiled else sorted([str(root)] + [str(d) for d in dirs]))
