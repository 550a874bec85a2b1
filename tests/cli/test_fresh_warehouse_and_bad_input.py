"""Commands on a warehouse where nothing was ever planned, and on input that is not Kafka metadata: one line, the
documented exit code, never a traceback (and `prestart` never blocks a broker start)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipelines.cli.main import main
from pipelines.cli.run_cmd import build_config


def _exit_code(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture
def config(tmp_path: Path) -> Path:
    log_dir = tmp_path / "kafka-logs"
    log_dir.mkdir()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
        "brokers": [{"broker_id": 1, "log_dirs": [str(log_dir)]}],
        "metadata": {"kind": "metadata_log", "source": "sftp://ctl/meta", "storage_options": {"username": "gc"}},
    }))
    return path


@pytest.mark.parametrize("argv", [["plans", "approve", "p1", "--by", "bob"],
                                  ["plans", "reject", "p1", "--by", "bob", "--reason", "no"]])
def test_decisions_on_a_fresh_warehouse_name_the_problem(argv, config: Path, capsys) -> None:
    code, _, err = _exit_code([*argv, "--config", str(config)], capsys)
    assert code == 5
    assert "no gc_plans table" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_prestart_on_a_fresh_warehouse_exits_zero(config: Path, capsys) -> None:
    code, out, err = _exit_code(["prestart", "--broker", "1", "--config", str(config)], capsys)
    assert code == 0 and "Traceback" not in err
    assert out.strip() == "nothing for broker 1 in any approved plan"


def test_metadata_show_refuses_bytes_that_are_not_kafka_metadata(tmp_path: Path, capsys) -> None:
    junk = tmp_path / "00000000000000000000.log"
    junk.write_bytes(bytes(range(256)) * 2)
    code, _, err = _exit_code(["metadata", "show", str(junk)], capsys)
    assert code == 8 and "no decodable KRaft metadata record" in err


def test_run_metadata_flag_keeps_the_configured_storage_options(config: Path) -> None:
    cfg = build_config(str(config), logdirs=(), metadata="sftp://ctl2/meta", warehouse=None, cluster=None)
    assert cfg.metadata.source == "sftp://ctl2/meta"
    assert cfg.metadata.storage_options == {"username": "gc"}


@pytest.mark.parametrize("value", ["yesterday", "2024-06-01T00:00:00"])
def test_run_now_must_be_an_iso_time_with_a_zone(value: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--logdir", "1=/nonexistent", "--now", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--now" in err and repr(value) in err and "Traceback" not in err
