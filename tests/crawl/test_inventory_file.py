"""Bring-your-own inventory: written by ``logdir-gc inventory``, ingested by the crawl with the same rows."""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli.main import cli
from pipelines.crawl.backends import local as local_backend
from pipelines.crawl.inventory_file import parse_inventory, read_inventory, write_inventory
from pipelines.crawl.local_crawl import crawl_local
from pipelines.errors import DecodeError
from tests.crawl.conftest import Broker

_VOLATILE = {"fs_used_bytes", "fs_free_bytes", "crawled_at", "at"}


def _canon(rows: list[dict]) -> list[tuple]:
    return sorted(tuple((k, repr(v)) for k, v in r.items() if k not in _VOLATILE) for r in rows)


@pytest.mark.parametrize(("suffix", "args", "version", "segments"), [
    (".jsonl", [], 1, True), (".jsonl.gz", [], 1, True), (".parquet", [], 2, False), ("", [], 2, False),
    (".jsonl", ["--format", "2"], 2, False), (".bin", ["--format", "1"], 1, True),
])  # fmt: skip
def test_cli_inventory_round_trip_gives_the_crawl_rows(brokers: list[Broker], cluster: dict[str, Path],
                                                       tmp_path: Path, suffix: str, args: list[str], version: int,
                                                       segments: bool) -> None:  # fmt: skip
    """Format 1 (JSON Lines, still written for *.jsonl names or --format 1) and format 2 (Parquet, the default) both
    give the direct crawl's rows; format 1 keeps per-file entries, so its segment_files rows too."""
    (cluster["b1-d1"] / "payments-2" / "partition.metadata").write_bytes(b"version: 0\ntopic_id: nope")
    os.symlink("x", cluster["b1-d0"] / "dangling")
    out = tmp_path / f"inv{suffix}"
    res = CliRunner().invoke(cli, ["inventory", *brokers[0].log_dirs, "--out", str(out), "--broker-id", "1", *args])
    assert res.exit_code == 0, res.output
    assert f"(format {version})" in res.output
    assert (out.read_bytes()[:4] == b"PAR1") == (version == 2)
    assert read_inventory(str(out)).header.version == version
    direct = crawl_local(brokers[:1], run_id="r", cluster="c", include_segments=segments)
    ingested = crawl_local([replace(brokers[0], inventory=str(out))], run_id="r", cluster="c",
                           include_segments=segments)  # fmt: skip
    for table in ("log_dirs", "partition_dirs", "segment_files", "errors"):
        assert _canon(getattr(ingested, table)) == _canon(getattr(direct, table)), table
    assert ingested.run_row["source"] == "inventory" and len(ingested.errors) == 2
    assert bool(direct.segment_files) == segments


@pytest.mark.parametrize("compiled", [True, False])
def test_format_2_from_either_lister_gives_the_crawl_rows(brokers: list[Broker], cluster: dict[str, Path],
                                                          tmp_path: Path, compiled: bool) -> None:  # fmt: skip
    """The compiled lister sums partition dirs up while listing; without it (pure Python) the writer sums them up:
    the file is read back to the same rows either way."""
    if compiled and local_backend._native is None:
        pytest.skip("compiled lister not built, or KLGC_PURE_PYTHON is set")
    (cluster["b1-d0"] / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    os.mkfifo(cluster["b1-d1"] / "payments-2" / "00000000000000000003.snapshot")
    out = tmp_path / "inv.parquet"
    saved = local_backend._native
    if not compiled:
        local_backend._native = None
    try:
        result = write_inventory(brokers[0].log_dirs, str(out), broker_id=1)
    finally:
        local_backend._native = saved
    assert (result.format, result.failed) == (2, ())
    listing = read_inventory(str(out)).sections[0].listing
    assert listing is not None and listing.summaries  # one row per partition dir, summed up
    direct = crawl_local(brokers[:1], run_id="r", cluster="c")
    ingested = crawl_local([replace(brokers[0], inventory=str(out))], run_id="r", cluster="c")
    for table in ("log_dirs", "partition_dirs", "errors"):
        assert _canon(getattr(ingested, table)) == _canon(getattr(direct, table)), table


def test_format_2_keeps_names_that_are_not_utf8(tmp_path: Path, cluster: dict[str, Path]) -> None:
    odd = os.fsdecode(b"orders\xff-0")
    (cluster["b2-d0"] / odd).mkdir()
    (cluster["b2-d0"] / "orders-0" / os.fsdecode(b"x\xfe.tmp")).write_bytes(b"")
    out = tmp_path / "inv.parquet"
    write_inventory([str(cluster["b2-d0"])], str(out), broker_id=2)
    import pyarrow.parquet as pq

    assert pq.read_table(out).num_rows > 0  # valid Parquet strings
    broker = Broker(2, (str(cluster["b2-d0"]),), {})
    direct = crawl_local([broker], run_id="r", cluster="c")
    ingested = crawl_local([replace(broker, inventory=str(out))], run_id="r", cluster="c")
    assert odd in {r["dir_name"] for r in ingested.partition_dirs}
    for table in ("log_dirs", "partition_dirs", "errors"):
        assert _canon(getattr(ingested, table)) == _canon(getattr(direct, table)), table


def test_a_parquet_file_that_is_not_an_inventory_is_an_error_row(tmp_path: Path, cluster: dict[str, Path]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    truncated = tmp_path / "truncated.parquet"
    write_inventory([str(cluster["b2-d0"])], str(truncated), broker_id=2)
    truncated.write_bytes(truncated.read_bytes()[:-20])
    result = crawl_local([Broker(2, (), {}, str(other)), Broker(3, (), {}, str(truncated))], run_id="r", cluster="c")
    assert sorted((e["broker_id"], e["stage"], e["error_class"]) for e in result.errors) == [
        (2, "inventory", "DecodeError"), (3, "inventory", "DecodeError"),
    ]
    res = CliRunner().invoke(cli, ["inventory", str(cluster["b2-d0"]), "--out", str(tmp_path), "--format", "2"])
    assert res.exit_code == 3 and "cannot write" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("name", ["inv.jsonl", "inv.parquet"])
def test_unlistable_log_dir_is_recorded_and_exit_3(tmp_path: Path, cluster: dict[str, Path], name: str) -> None:
    out = tmp_path / name
    res = CliRunner().invoke(cli, ["inventory", str(cluster["b2-d0"]), str(tmp_path / "nope"), "--out", str(out)])
    assert res.exit_code == 3
    assert f"cannot list {tmp_path / 'nope'}" in res.output
    result = crawl_local([Broker(2, (), {}, str(out))], run_id="r", cluster="c")
    assert len(result.log_dirs) == 1
    assert [(e["stage"], e["error_class"]) for e in result.errors] == [("list", "FileNotFoundError")]


def test_broker_mismatch_and_garbage_are_error_rows(tmp_path: Path, cluster: dict[str, Path]) -> None:
    out = tmp_path / "inv.jsonl"
    write_inventory([str(cluster["b2-d0"])], str(out), broker_id=2)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"hello": 1}\n')
    result = crawl_local([Broker(7, (), {}, str(out)), Broker(8, (), {}, str(garbage))], run_id="r", cluster="c")
    assert sorted((e["broker_id"], e["stage"], e["error_class"]) for e in result.errors) == [
        (7, "inventory", "BrokerMismatch"), (8, "inventory", "DecodeError"),
    ]
    assert result.partition_dirs == []


def test_malformed_lines_are_refused_with_line_numbers(tmp_path: Path, cluster: dict[str, Path]) -> None:
    out = tmp_path / "inv.jsonl"
    write_inventory([str(cluster["b2-d0"])], str(out))
    lines = out.read_text().splitlines()
    assert read_inventory(str(out)).sections[0].listing is not None
    bad_entry = json.loads(next(line for line in lines if '"t":"entry"' in line))
    bad_entry["size"] = "big"
    for bad, line_no in (([*lines, json.dumps(bad_entry)], len(lines) + 1), ([*lines[:2], "{oops"], 3),
                         ([lines[0].replace('"version":1', '"version":99')], 1)):  # fmt: skip
        with pytest.raises(DecodeError) as info:
            parse_inventory(io.StringIO("\n".join(bad) + "\n"))
        assert info.value.offset == line_no
