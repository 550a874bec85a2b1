"""Damage stays local: a corrupt manifest or journal line fails its own item, the others proceed, the exit code says
something failed, and nothing ends in a traceback; a full disk mid-apply is one line and the plan resumes."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from exec_world import build_world

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.execute.apply import apply_plan
from pipelines.execute.journal import Journal
from pipelines.execute.purge import purge
from pipelines.execute.restore import restore
from pipelines.plan import approval

LATER = datetime.now(timezone.utc) + timedelta(days=8)


def _applied(tmp_path: Path):
    w = build_world(tmp_path)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == len(w.garbage)
    return w


def _manifest(w, item_id: str) -> Path:
    return w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1" / item_id / "manifest.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _config_file(w, tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    return str(path)


@pytest.mark.parametrize("damage", [b"{not json", b"", "fifo"])
def test_a_corrupt_manifest_fails_only_its_item(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                damage: bytes | str) -> None:
    w = _applied(tmp_path)
    bad = next(iter(w.garbage))
    manifest = _manifest(w, bad)
    manifest.unlink()
    if damage == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.write_bytes(damage)
    code, out, err = run(capsys, "restore", "plan-1", "--execute", "--config", _config_file(w, tmp_path))
    assert code == exit_codes.FAILED and "Traceback" not in err
    assert f"failed           {w.root / '.logdir-gc-quarantine/kafka-logs/plan-1' / bad}" in out
    assert not w.garbage[bad].exists() and all(p.exists() for i, p in w.garbage.items() if i != bad)
    report = purge(w.config, 1, execute=True, now=LATER)
    assert "manifest" in report.failed[f"plan-1/{bad}"] and report.items == []


def test_a_damaged_journal_line_affects_only_its_item(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    journal = w.state_dir / "journal-broker-1.jsonl"
    lines = journal.read_text().splitlines()
    victim = next(iter(w.garbage))
    index = next(i for i, line in enumerate(lines) if f'"item_id": "{victim}"' in line and '"step": "rename"' in line
                 and '"state": "done"' in line)
    lines[index] = lines[index][: len(lines[index]) // 2] + "#garbage"
    journal.write_text("".join(f"{line}\n" for line in lines))
    j = Journal(w.state_dir, "c1", 1)
    assert len(list(j.records())) == len(lines) - 1 and len(j.problems) == 1
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "journal records no such move" in report.failed[victim]
    assert sorted(report.restored) == sorted(i for i in w.garbage if i != victim)
    assert any("damaged record skipped" in p for p in report.problems)
    # A rerun of the apply sees the damaged item as a move interrupted after its intent, finds the copy in quarantine
    # matching its manifest, and journals it again; then it can be restored like the others.
    again = {i.item_id: i for i in apply_plan(w.config, w.store, "plan-1", 1, execute=True).items}
    assert (again[victim].action, again[victim].reason) == ("quarantined", "recovered after a crash")
    assert restore(w.config, w.store, "plan-1", 1, execute=True).restored == [victim] and w.garbage[victim].is_dir()
    assert approval.get_plan(w.store, "plan-1").status == "restored"


def test_unknown_plan_ids_exit_5_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = _applied(tmp_path)
    c = ("--config", _config_file(w, tmp_path))
    for argv in (("apply", "nope", "--broker", "1"), ("restore", "nope"), ("restore", "nope", "--execute")):
        code, _, err = run(capsys, *argv, *c)
        assert code == exit_codes.POLICY and "no plan 'nope'" in err and len(err.splitlines()) == 1, argv


def test_an_apply_that_skips_or_fails_an_item_exits_non_zero(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    c = ("--config", _config_file(w, tmp_path))
    first, second = list(w.garbage.values())[:2]
    (first / "00000000000000000000.log").write_bytes(b"changed since the crawl")  # → skipped
    code, out, _ = run(capsys, "apply", "plan-1", "--broker", "1", *c)
    assert code == exit_codes.PRECONDITION and "changed since the crawl" in out
    item = w.plan.items[1]
    dst = w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1" / item.item_id / item.dir_name
    dst.mkdir(parents=True)  # → failed: the destination is occupied
    code, out, _ = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.FAILED and "already exists" in out
    assert first.is_dir() and second.is_dir()


def test_a_config_that_is_not_utf8_or_not_a_file_is_one_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("cluster: caf\xe9\n".encode("latin-1"))
    code, _, err = run(capsys, "apply", "p", "--broker", "1", "--config", str(bad))
    assert code == exit_codes.CONFIG and "not UTF-8" in err and len(err.splitlines()) == 1
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "apply", "p", "--broker", "1", "--config", str(fifo))
    assert code == exit_codes.CONFIG and "not a regular file" in err


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for a real ENOSPC here: {proc.stderr.strip()}")


def test_a_full_disk_mid_apply_is_one_line_and_the_plan_resumes(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The state dir (journal) on a real 64 KiB tmpfs, filled so the journal runs out of space part-way."""
    w = build_world(tmp_path)
    state = w.state_dir
    _mount_tmpfs(state, "64k")
    try:
        filler = state / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        os.truncate(filler, os.path.getsize(filler) - 4096)  # one page left: the journal fills it part-way
        c = ("--config", _config_file(w, tmp_path))
        code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
        assert code == exit_codes.HOST_IO and "No space left on device" in err and "rerun to resume" in err
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert approval.get_plan(w.store, "plan-1").status == "applying"
        filler.unlink()
        code, out, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c, "--json")
        assert code == 0, (out, err)
        assert not any(p.exists() for p in w.garbage.values())
        moved = [r for r in Journal(state, "c1", 1).records() if (r.step, r.state) == ("rename", "done")]
        assert sorted(r.item_id for r in moved) == sorted(w.garbage)  # each item moved exactly once
    finally:
        subprocess.run(["umount", str(state)], check=False)
