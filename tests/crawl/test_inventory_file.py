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
from pipelines.crawl.inventory_file import parse_inventory, read_inventory, write_inventory
from pipelines.crawl.local_crawl import crawl_local
from pipelines.errors import DecodeError
from tests.crawl.conftest import Broker

_VOLATILE = {"fs_used_bytes", "fs_free_bytes", "crawled_at", "at"}


def _canon(rows: list[dict]) -> list[tuple]:
    return sorted(tuple((k, repr(v)) for k, v in r.items() if k not in _VOLATILE) for r in rows)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_cli_inventory_round_trip_gives_the_crawl_rows(brokers: list[Broker], cluster: dict[str, Path],
                                                       tmp_path: Path, suffix: str) -> None:  # fmt: skip
    (cluster["b1-d1"] / "payments-2" / "partition.metadata").write_bytes(b"version: 0\ntopic_id: nope")
    os.symlink("x", cluster["b1-d0"] / "dangling")
    out = tmp_path / f"inv{suffix}"
    res = CliRunner().invoke(cli, ["inventory", *brokers[0].log_dirs, "--out", str(out), "--broker-id", "1"])
    assert res.exit_code == 0, res.output
    direct = crawl_local(brokers[:1], run_id="r", cluster="c", include_segments=True)
    ingested = crawl_local([replace(brokers[0], inventory=str(out))], run_id="r", cluster="c", include_segments=True)
    for table in ("log_dirs", "partition_dirs", "segment_files", "errors"):
        assert _canon(getattr(ingested, table)) == _canon(getattr(direct, table)), table
    assert ingested.run_row["source"] == "inventory" and len(ingested.errors) == 2


def test_unlistable_log_dir_is_recorded_and_exit_3(tmp_path: Path, cluster: dict[str, Path]) -> None:
    out = tmp_path / "inv.jsonl"
    res = CliRunner().invoke(cli, ["inventory", str(cluster["b2-d0"]), str(tmp_path / "nope"), "--out", str(out)])
    assert res.exit_code == 3
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
