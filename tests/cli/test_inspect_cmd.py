"""``logdir-gc inspect`` through click's CliRunner, on real (temporary) directories."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kafka"))  # the shared log-dir factory
from logdir_factory import PartitionSpec, make_log_dir

from pipelines.cli.exit_codes import UNREADABLE
from pipelines.cli.inspect_cmd import inspect


def test_json_output(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "logs", partitions=[PartitionSpec("orders", 0)], extra_dirs=["lost+found"])
    result = CliRunner().invoke(inspect, [str(root), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {d["name"] for d in doc["partition_dirs"]} == {"orders-0", "lost+found"}


def test_text_output_exit_zero_with_problems(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "logs", meta_properties=False, extra_dirs=[".snapshot"])
    result = CliRunner().invoke(inspect, [str(root)])
    assert result.exit_code == 0
    assert "KAFKA WOULD FAIL TO START" in result.output and "meta_properties_missing" in result.output


def test_missing_dir_exit_3_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(inspect, [str(tmp_path / "absent")])
    assert result.exit_code == UNREADABLE == 3
    assert result.stderr.count("\n") == 1 and "cannot read" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_unknown_protocol_exit_3() -> None:
    result = CliRunner().invoke(inspect, ["nosuchproto://x/y"])
    assert result.exit_code == UNREADABLE


def test_storage_option_syntax(tmp_path: Path) -> None:
    root = make_log_dir(tmp_path / "logs")
    bad = CliRunner().invoke(inspect, [str(root), "--storage-option", "novalue"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output + bad.stderr
    ok = CliRunner().invoke(inspect, [root.as_uri(), "--storage-option", "auto_mkdir=False", "--json"])
    assert ok.exit_code == 0, ok.output
