from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from sim_specs import NOW_MS

from pipelines.cli.main import cli
from pipelines.simulate import load_truth

ARGS = ["--brokers", "3", "--topics", "2", "--partitions", "2", "--internal-partitions", "2", "--jbod", "2",
        "--files-per-partition", "4", "--now-ms", str(NOW_MS)]


def test_simulate_writes_and_summarizes(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    result = CliRunner().invoke(cli, ["simulate", "--out", str(out), "--anomalies", "all", *ARGS])
    assert result.exit_code == 0, result.output
    truth = load_truth(out / "truth.json")
    assert f"truth:  {out / 'truth.json'}" in result.output
    assert f"config: {out / 'cluster.yaml'}" in result.output
    for cls, count in truth.counts().items():
        assert any(line.split() == [cls, f"{count:,}"] for line in result.output.splitlines()), cls


def test_simulate_refuses_a_non_empty_dir_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    assert CliRunner().invoke(cli, ["simulate", "--out", str(out), *ARGS]).exit_code == 0
    again = CliRunner().invoke(cli, ["simulate", "--out", str(out), *ARGS])
    assert again.exit_code == 2
    assert again.output.strip().count("\n") == 0 and "--force" in again.output
    forced = CliRunner().invoke(cli, ["simulate", "--out", str(out), "--force", *ARGS])
    assert forced.exit_code == 0, forced.output


def test_simulate_rejects_impossible_specs(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--out", str(tmp_path / "x"), "--brokers", "1"])
    assert result.exit_code == 2
    assert "2 brokers" in result.output
    assert not (tmp_path / "x").exists()
