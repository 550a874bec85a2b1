"""Every command that has ``--json`` prints exactly one JSON document on stdout, and nothing else there.

The commands are found by walking the click tree, so a new ``--json`` command without a case here fails.
``run`` and ``demo`` are real processes on local Spark (their stdout must survive Spark's and Ivy's output).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "metadata"))
from exec_world import backdate_journal, build_world, keyring_of
from mdrecords import broker, encode_log, feature, partition, tid, topic

from pipelines.cli.main import cli, main
from pipelines.tables import open_store
from tests.cli.cli_process import DemoRun, run_cli

FIXTURE_LOG_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "kraft-cluster" / "broker1" / "d0"
IN_PROCESS = {"inspect", "metadata show", "plans list", "plans show", "plans register", "plans propose",
              "plans approve", "plans verify", "plans reject", "apply", "restore", "purge", "prestart"}
SPARK = {"run", "demo"}
ELSEWHERE = {"package"}  # builds a wheel and an environment archive: tests/cluster/conftest.py parses its document


def json_commands() -> set[str]:
    ctx = click.Context(cli)
    found: set[str] = set()

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                walk(sub, [*path, name])
        elif any("--json" in p.opts for p in cmd.params):
            found.add(" ".join(path))

    walk(cli, [])
    return found


def test_every_json_command_is_covered() -> None:
    assert json_commands() == IN_PROCESS | SPARK | ELSEWHERE


def one_document(out: str) -> Any:
    """The whole of stdout parses as one JSON value (json.loads refuses trailing data)."""
    assert out.strip(), "nothing on stdout"
    return json.loads(out)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, _ = capsys.readouterr()
    return int(exc.value.code or 0), out


def test_in_process_commands_print_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    covered = set()

    def check(name: str, *argv: str) -> Any:
        code, out = run(capsys, *argv, "--json")
        assert code == 0, (name, out)
        covered.add(name)
        return one_document(out)

    check("inspect", "inspect", str(FIXTURE_LOG_DIR))
    meta = tmp_path / "meta.log"
    meta.write_bytes(encode_log([feature("metadata.version", 21), broker(1, 1), topic("t", tid(1)),
                                 partition(tid(1), 0, [1])]))
    assert check("metadata show", "metadata", "show", str(meta))["summary"]["partitions"] == 1

    w = build_world(tmp_path / "world", approve_plan=False)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(w.plan.to_json())
    c = ("--config", str(cfg))
    check("plans register", "plans", "register", str(plan_file), *c)
    check("plans list", "plans", "list", *c)
    keys = keyring_of(w.config)
    check("plans propose", "plans", "propose", "plan-1", "--key", str(keys.key("detector")), *c)
    check("plans approve", "plans", "approve", "plan-1", "--by", "reviewer", "--key", str(keys.key("reviewer")), *c)
    assert check("plans verify", "plans", "verify", "plan-1", "--broker", "1", *c)["would_apply"] is True
    check("plans show", "plans", "show", "plan-1", *c)
    assert check("apply", "apply", "plan-1", "--broker", "1", "--execute", *c)["status"] == "applied"
    check("restore", "restore", "plan-1", "--broker", "1", *c)
    backdate_journal(w.state_dir, hours=2)
    check("purge", "purge", "--older-than", "1h", *c)
    check("prestart", "prestart", "--broker", "1", *c)

    other = build_world(tmp_path / "other", approve_plan=False)
    other_cfg = tmp_path / "other.yaml"
    other_cfg.write_text(yaml.safe_dump(other.config.model_dump(mode="json")))
    other_plan = tmp_path / "other-plan.json"
    other_plan.write_text(other.plan.to_json())
    run(capsys, "plans", "register", str(other_plan), "--config", str(other_cfg))
    check("plans reject", "plans", "reject", "plan-1", "--by", "reviewer", "--reason", "no",
          "--key", str(keyring_of(other.config).key("reviewer")), "--config", str(other_cfg))
    assert covered == IN_PROCESS


@pytest.mark.spark
def test_demo_prints_one_document(demo_run: DemoRun) -> None:
    demo = demo_run.done
    assert demo.returncode == 0, demo.stderr[-3000:]
    doc = one_document(demo.stdout)
    assert doc["plan_id"] and doc["metrics"]["file"]
    step_lines = [line for line in demo.stderr.splitlines() if " done in " in line]
    assert [line.split("]")[0] for line in step_lines] == ["[1/4", "[2/4", "[3/4", "[4/4"]  # one line per step


@pytest.mark.spark
@pytest.mark.second_tier  # a second whole run in a fresh process (over 2 minutes in CI); demo covers the same output
def test_run_prints_one_document_and_runs_at_its_now(demo_run: DemoRun, tmp_path: Path) -> None:
    demo = one_document(demo_run.done.stdout)
    now = "2030-01-02T03:04:05+00:00"  # --now: the clock of detect and plan, as the jobs' --now
    again = run_cli(["run", "--config", str(demo_run.out / "cluster.yaml"), "--run-id", "again", "--now", now,
                     "--json"], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert one_document(again.stdout)["cluster"] == demo["cluster"]
    warehouse = yaml.safe_load((demo_run.out / "cluster.yaml").read_text())["warehouse"]
    detected = {r["detected_at"] for r in open_store("rust", warehouse).read_rows("findings", {"run_id": "again"})}
    assert detected == {datetime.fromisoformat(now)}
