"""The executor's node_exporter textfile, written by the real CLI on a real log dir (tests/execute's world)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from metrics_files import parse, select, value

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
from exec_world import World, backdate_journal, build_world

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.execute.locks import kafka_dir_lock
from pipelines.metrics import catalog
from pipelines.metrics.textfile import write_atomic


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _setup(tmp_path: Path, **world: object) -> tuple[World, tuple[str, str], Path]:
    w = build_world(tmp_path, **world)
    textfiles = tmp_path / "node_exporter" / "textfile"
    cfg = tmp_path / "config.yaml"
    data = w.config.model_dump(mode="json")
    data["metrics"] = {"textfile_dir": str(textfiles)}
    cfg.write_text(yaml.safe_dump(data))
    return w, ("--config", str(cfg)), textfiles / "logdir_gc_executor_c1_1.prom"


def _samples(path: Path) -> dict:
    types, samples = parse(path.read_text())
    assert set(types) <= {s.name.removesuffix("_total") for s in catalog.EXECUTOR}
    return samples


def test_apply_purge_restore_accumulate_counters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c, prom = _setup(tmp_path)
    assert run(capsys, "apply", "plan-1", "--broker", "1", *c)[0] == 0
    assert not prom.exists()  # a dry run changes nothing on disk and records nothing
    assert run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)[0] == 0
    base = {"cluster": "c1", "broker": 1}
    s = _samples(prom)
    assert value(s, "logdir_gc_executor_items_total", **base, outcome="quarantined") == 3
    assert value(s, "logdir_gc_executor_bytes_total", **base, action="quarantined") == w.plan.total_bytes
    assert value(s, "logdir_gc_executor_last_apply_outcome", **base, outcome="applied") == 1
    assert value(s, "logdir_gc_executor_last_apply_outcome", **base, outcome="refused") == 0
    assert value(s, "logdir_gc_executor_last_apply_timestamp_seconds", **base) > 1.6e9
    assert oct(prom.stat().st_mode & 0o777) == "0o644"

    one = next(iter(w.garbage))
    assert run(capsys, "restore", "plan-1", "--broker", "1", "--item", one, "--execute", *c)[0] == 0
    restored = sum(f.stat().st_size for f in w.garbage[one].iterdir())
    backdate_journal(w.state_dir, hours=2)  # purge takes what was quarantined over an hour ago
    assert run(capsys, "purge", "--older-than", "1h", "--execute", *c)[0] == 0
    s = _samples(prom)
    assert value(s, "logdir_gc_executor_items_total", **base, outcome="restored") == 1
    assert value(s, "logdir_gc_executor_bytes_total", **base, action="restored") == restored
    assert value(s, "logdir_gc_executor_items_total", **base, outcome="purged") == 2
    assert value(s, "logdir_gc_executor_bytes_total", **base, action="purged") == w.plan.total_bytes - restored
    assert value(s, "logdir_gc_executor_items_total", **base, outcome="quarantined") == 3  # carried over
    assert sorted(p.name for p in prom.parent.iterdir()) == [prom.name, prom.name + ".lock"]  # no temp file left


def test_refusals_are_counted_by_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c, prom = _setup(tmp_path)
    with kafka_dir_lock(w.log_dir):  # the broker is running
        code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.BUSY and len(err.splitlines()) == 1
    code, _, _ = run(capsys, "apply", "nope", "--broker", "1", "--execute", *c)
    assert code == exit_codes.POLICY
    base = {"cluster": "c1", "broker": 1}
    s = _samples(prom)
    assert value(s, "logdir_gc_executor_refusals_total", **base, reason="lock_held") == 1
    assert value(s, "logdir_gc_executor_refusals_total", **base, reason="policy") == 1
    assert value(s, "logdir_gc_executor_last_apply_outcome", **base, outcome="refused") == 1
    assert not select(s, "logdir_gc_executor_items_total")


def test_a_precondition_refusal_and_a_damaged_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, c, prom = _setup(tmp_path, node_id=7)  # meta.properties names another broker
    prom.parent.mkdir(parents=True)
    prom.write_text("this is not exposition text {\n")  # replaced, never a crash
    code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.PRECONDITION and len(err.splitlines()) == 1
    s = _samples(prom)
    assert value(s, "logdir_gc_executor_refusals_total", cluster="c1", broker=1, reason="precondition") == 1


def test_write_atomic_replaces_the_file_in_one_step(tmp_path: Path) -> None:
    path = tmp_path / "x.prom"
    write_atomic(path, "a 1\n")
    reader = path.open()
    inode = os.stat(path).st_ino
    write_atomic(path, "a 2\n")
    assert reader.read() == "a 1\n"  # an open reader keeps the whole old file
    assert path.read_text() == "a 2\n" and os.stat(path).st_ino != inode
    reader.close()
    assert [p.name for p in tmp_path.iterdir()] == ["x.prom"]
