"""Names an attacker chose (directory names, topic names in a metadata log, plan fields in the warehouse) reach an
operator's terminal escaped: ``logdir-gc`` runs on a real pseudo-terminal (raw mode, so nothing is translated) and
the bytes the terminal receives hold no control, bidi or other format character, only their visible escapes."""

from __future__ import annotations

import os
import subprocess
import sys
import tty
import unicodedata
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipelines.config.models import PolicyConfig
from pipelines.plan import approval
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.tables.rust_engine import RustTableStore
from tests.metadata.mdrecords import broker, did, encode_log, feature, partition, remove, tid, topic

REPO = Path(__file__).resolve().parents[2]
#: What the escapes must show instead of the raw characters.
ERASE_LINE, CR, RLO, LRI = "\x1b[2K", "\r", "\u202e", "\u2066"


def on_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """``logdir-gc ARGS`` with stdin, stdout and stderr on one raw pseudo-terminal; its exit code and screen."""
    master, slave = os.openpty()
    tty.setraw(slave)  # no output translation: a \r on the screen came from the program
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(PYTHONPATH=str(REPO), TERM="xterm-256color", COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli.main", *args], stdin=slave, stdout=slave,
                            stderr=slave, cwd=cwd, env=env, close_fds=True)
    os.close(slave)
    screen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    code = proc.wait(timeout=300)
    os.close(master)
    return code, screen.decode("utf-8")


def raw_controls(screen: str) -> list[str]:
    """Every character a terminal would act on instead of showing (newlines between lines are allowed)."""
    return sorted({f"U+{ord(c):04X}" for c in screen
                   if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")})


def _hostile_log_dir(root: Path) -> Path:
    log_dir = root / "kafka-logs"
    log_dir.mkdir()
    names = [f"{ERASE_LINE}forged{CR}line",  # unparseable: listed by name
             f"evil{RLO}exe.txt-0.{'a' * 32}-delete",  # a -delete dir: listed by name
             f"orders{LRI}x-3.{'b' * 32}-stray",
             "live\x1b]0;owned\x07-0"]
    for name in names:
        (log_dir / name).mkdir()
        (log_dir / name / "00000000000000000000.log").write_bytes(b"")
    return log_dir


def _hostile_metadata(root: Path) -> Path:
    d = root / "__cluster_metadata-0"
    d.mkdir()
    evil = f"ev{ERASE_LINE}il{CR}{RLO}topic"
    records = [feature("metadata.version", 21), broker(1, 1, log_dirs=[did(1)], fenced=False),
               topic(evil, tid(1)), partition(tid(1), 0, [1]), topic(f"gone\x1b[1A{LRI}", tid(2)),
               partition(tid(2), 0, [1]), remove(tid(2))]
    (d / f"{0:020d}.log").write_bytes(encode_log(records))
    return d


HOSTILE_PLAN_ID = f"p-1\n# APPROVED by security{CR}"


def _hostile_warehouse(root: Path) -> Path:
    item = PlanItem.model_validate({
        "item_id": f"i{ERASE_LINE}1", "broker_id": 1, "log_dir": f"/data{RLO}",
        "dir_name": f"gone{CR}\n| forged | row |-0", "class": "deleted_topic", "bytes": 10,
        "fingerprint": "f" * 64, "reason": f"ok\n## Approved{LRI}", "topic_id": "x|y`z"})
    plan = GcPlan(plan_id=HOSTILE_PLAN_ID, cluster="c1", created_at=datetime(2026, 11, 1, tzinfo=timezone.utc),
                  created_by=f"mallory{RLO}", run_id="r\x1b[2J", items=(item,)).with_hash()
    warehouse = root / "warehouse"
    approval.register_plan(RustTableStore(str(warehouse)), plan, actor=f"mallory{RLO}\x1b[8m", policy=PolicyConfig())
    return warehouse


def _assert_clean(code: int, screen: str, *, expect: list[str]) -> None:
    assert code == 0, screen
    assert raw_controls(screen) == [], screen
    for visible in expect:
        assert visible in screen, (visible, screen)


def test_inspect_shows_hostile_directory_names_escaped(tmp_path: Path) -> None:
    code, screen = on_terminal(["inspect", str(_hostile_log_dir(tmp_path))], tmp_path)
    _assert_clean(code, screen, expect=["\\x1b[2Kforged\\x0dline", "evil\\u202eexe.txt-0."])


@pytest.mark.parametrize("view", [[], ["--topics"], ["--partitions"], ["--events"], ["--records"]])
def test_metadata_show_shows_hostile_topic_names_escaped(view: list[str], tmp_path: Path) -> None:
    code, screen = on_terminal(["metadata", "show", str(_hostile_metadata(tmp_path)), *view], tmp_path)
    _assert_clean(code, screen, expect=[] if view == ["--records"] else ["ev\\x1b[2Kil\\x0d\\u202etopic"])
    if view in ([], ["--events"]):
        assert "gone\\x1b[1A\\u2066" in screen  # the deletion names the deleted topic


def _output_lines(screen: str) -> list[str]:
    """The screen's lines but the plans commands' warnings (stderr shares the terminal; with no config there is no
    reviewers' trust file, which they warn about once)."""
    return [line for line in screen.strip("\n").split("\n") if not line.startswith("logdir-gc plans: warning: ")]


def test_plans_list_and_show_show_hostile_plan_fields_escaped(tmp_path: Path) -> None:
    warehouse = _hostile_warehouse(tmp_path)
    code, screen = on_terminal(["plans", "list", "--warehouse", str(warehouse)], tmp_path)
    _assert_clean(code, screen, expect=["p-1\\x0a# APPROVED by security\\x0d"])
    assert len(_output_lines(screen)) == 1  # one plan, one line
    code, screen = on_terminal(["plans", "show", HOSTILE_PLAN_ID, "--warehouse", str(warehouse)], tmp_path)
    _assert_clean(code, screen, expect=["gone\\x0d\\x0a\\| forged \\| row \\|-0", "mallory\\u202e",
                                        "ok\\x0a\\#\\# Approved\\u2066"])
    rows = [line for line in screen.split("\n") if line.startswith("| ")]
    item_rows = [r for r in rows if "deleted_topic" in r and "forged" in r]
    assert len(item_rows) == 1 and item_rows[0].replace("\\|", "").count("|") == 7  # six cells, none forged
    assert not any(line.startswith(("# APPROVED", "## Approved")) for line in screen.split("\n"))


def test_json_output_stays_exact_json(tmp_path: Path) -> None:
    """``--json`` is for machines: the values are exact, and ASCII escapes keep controls off the terminal."""
    import json

    warehouse = _hostile_warehouse(tmp_path)
    code, screen = on_terminal(["plans", "show", HOSTILE_PLAN_ID, "--warehouse", str(warehouse), "--json"],
                               tmp_path)
    assert code == 0 and raw_controls(screen) == []
    data = json.loads("\n".join(_output_lines(screen)))
    assert data["plan_id"] == HOSTILE_PLAN_ID and data["plan"]["items"][0]["dir_name"] == "gone\r\n| forged | row |-0"


def test_prestart_prints_one_text_line_per_outcome_and_exits_0(tmp_path: Path) -> None:
    """Text by default (it printed Python dict reprs), JSON with --json; a broker start is never blocked."""
    import json

    missing = tmp_path / f"no{ERASE_LINE}such.yaml"
    code, screen = on_terminal(["prestart", "--broker", "1", "--config", str(missing)], tmp_path)
    _assert_clean(code, screen, expect=["no\\x1b[2Ksuch.yaml"])
    lines = screen.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("prestart: ") and "{'" not in lines[0], lines
    code, screen = on_terminal(["prestart", "--broker", "1", "--config", str(missing), "--json"], tmp_path)
    assert code == 0 and "error" in json.loads(screen)[0]


def test_an_error_line_escapes_what_it_quotes(tmp_path: Path) -> None:
    """``logdir-gc: error:`` lines quote paths and names: a hostile one is shown, never performed."""
    missing = tmp_path / f"gone{ERASE_LINE}{RLO}.yaml"
    code, screen = on_terminal(["plans", "list", "--config", str(missing)], tmp_path)
    assert code == 4 and raw_controls(screen) == [], screen
    assert screen.startswith("logdir-gc: error: ") and "gone\\x1b[2K\\u202e.yaml" in screen
    assert len(screen.strip("\n").split("\n")) == 1
