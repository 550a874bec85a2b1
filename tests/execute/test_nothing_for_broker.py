"""A broker a plan does not name has nothing to do, and says so: ``apply``/``restore --broker N`` print one line
"nothing for broker N in PLAN" and exit 0 without writing anything (a loop over a fleet's brokers, or a hook on
every broker, would otherwise report a refusal). An unknown plan is still refused, and a config without brokers
names the real cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from exec_world import build_world

from pipelines.cli import exit_codes
from pipelines.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _host_with_broker_2(tmp_path: Path) -> tuple[Path, Path]:
    """The exec world's plan (every item on broker 1) and a host config that also registers broker 2."""
    w = build_world(tmp_path)
    other = w.root / "kafka-logs-2"
    other.mkdir()
    document = w.config.model_dump(mode="json")
    document["brokers"].append({"broker_id": 2, "log_dirs": [str(other)]})
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(document))
    return config, Path(w.config.executor.state_dir)


def test_apply_and_restore_for_a_broker_without_items_say_so_and_exit_0(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, state = _host_with_broker_2(tmp_path)
    c = ("--config", str(config))
    code, out, err = run(capsys, "apply", "plan-1", "--broker", "2", "--execute", *c)
    assert (code, out.strip()) == (0, "nothing for broker 2 in plan-1"), err
    code, out, _ = run(capsys, "apply", "plan-1", "--broker", "2", "--execute", *c, "--json")
    assert code == 0 and json.loads(out)["nothing_to_do"] is True
    code, out, err = run(capsys, "restore", "plan-1", "--broker", "2", "--execute", *c)
    assert (code, out.strip()) == (0, "nothing for broker 2 in plan-1"), err
    assert not list(state.glob("journal-broker-2*")) and not list(state.glob("*broker-2*"))

    code, out, err = run(capsys, "apply", "no-such-plan", "--broker", "2", *c)
    assert code == exit_codes.POLICY and "no plan 'no-such-plan'" in err
    code, out, err = run(capsys, "apply", "plan-1", "--broker", "1", *c, "--json")  # broker 1 still has its items
    assert code == 0 and len(json.loads(out)["items"]) == 3


def test_a_config_without_brokers_names_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    document = w.config.model_dump(mode="json")
    document["brokers"] = []
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(document))
    code, _, err = run(capsys, "purge", "--execute", "--config", str(config))
    assert code == exit_codes.CONFIG and "lists no brokers" in err and "several" not in err
