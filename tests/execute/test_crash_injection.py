"""kill -9 the executor at every journal step boundary in turn, rerun, and check nothing was lost or done twice.

The executor runs as a process of its own (``logdir-gc apply ... --execute``, forked from a pre-imported CLI by
:mod:`cli_forkserver`); ``KLGC_FAULT_POINT`` makes it SIGKILL itself at one point. The points are discovered by a
traced clean run, so a new step is covered automatically.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_forkserver import ForkServer
from exec_world import LIVE, World, build_world, tree_digest
from logdir_factory import PartitionSpec

from pipelines.plan import approval

GARBAGE = (PartitionSpec("gone", 0, segments=(0, 100), log_content=b"x" * 3000),
           PartitionSpec("old", 3, kind="delete", log_content=b"z" * 2000))


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    with ForkServer(tmp_path_factory.mktemp("command-output")) as server:
        yield server


def _cli(commands: ForkServer, w: World, tmp: Path, *args: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cfg = tmp / "config.yaml"
    if not cfg.exists():
        cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    clean = {k: v for k, v in os.environ.items() if k not in ("KLGC_FAULT_POINT", "KLGC_FAULT_TRACE")}
    return commands.run([*args, "--config", str(cfg)], {**clean, **(env or {})})


def _world(tmp: Path) -> tuple[World, dict[str, str], dict[str, dict[str, str]]]:
    w = build_world(tmp, garbage=GARBAGE, live=LIVE)
    garbage_names = {p.name for p in w.garbage.values()}
    untouched = {k: v for k, v in tree_digest(w.log_dir).items() if k.split(os.sep)[0] not in garbage_names}
    originals = {item_id: tree_digest(p) for item_id, p in w.garbage.items()}
    return w, untouched, originals


def _check_final(w: World, untouched: dict[str, str], originals: dict[str, dict[str, str]], label: str) -> None:
    garbage_names = {p.name for p in w.garbage.values()}
    now = {k: v for k, v in tree_digest(w.log_dir).items() if k.split(os.sep)[0] not in garbage_names}
    assert now == untouched, f"{label}: a non-planned file changed"
    for item_id, src in w.garbage.items():
        dst = w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1" / item_id / src.name
        assert not src.exists(), f"{label}: {item_id} still in the log dir"
        assert tree_digest(dst) == originals[item_id], f"{label}: {item_id} quarantined copy differs"
        assert (dst.parent / "manifest.json").exists(), f"{label}: {item_id} has no manifest"
    journal = [json.loads(line) for line in (w.state_dir / "journal-broker-1.jsonl").read_text().splitlines()]
    renames = Counter(r["item_id"] for r in journal if r["step"] == "rename" and r["state"] == "done")
    assert renames == {i: 1 for i in w.garbage}, f"{label}: rename journalled {renames}"
    assert approval.get_plan(w.store, "plan-1").status == "applied", label


def test_kill_at_every_step_boundary_then_rerun(commands: ForkServer, tmp_path: Path) -> None:
    w, untouched, originals = _world(tmp_path / "trace")
    trace = tmp_path / "trace.txt"
    clean = _cli(commands, w, tmp_path / "trace", "apply", "plan-1", "--broker", "1", "--execute",
                 env={"KLGC_FAULT_TRACE": str(trace)})
    assert clean.returncode == 0, clean.stderr
    _check_final(w, untouched, originals, "clean run")
    points = trace.read_text().split()
    assert {"item.intent", "manifest.done", "rename.intent", "rename.performed", "rename.done",
            "item.done"} <= set(points)
    seen: Counter[str] = Counter()
    for point in points:
        seen[point] += 1
        label = f"{point}:{seen[point]}"
        run_dir = tmp_path / label.replace(":", "_")
        w, untouched, originals = _world(run_dir)
        crashed = _cli(commands, w, run_dir, "apply", "plan-1", "--broker", "1", "--execute",
                       env={"KLGC_FAULT_POINT": label})
        assert crashed.returncode == -signal.SIGKILL, f"{label}: not killed ({crashed.returncode}) {crashed.stderr}"
        rerun = _cli(commands, w, run_dir, "apply", "plan-1", "--broker", "1", "--execute")
        assert rerun.returncode == 0, f"{label}: rerun failed: {rerun.stderr}"
        _check_final(w, untouched, originals, label)


def test_kill_during_restore_then_rerun(commands: ForkServer, tmp_path: Path) -> None:
    for point in ("restore.intent:1", "restore.performed:1", "restore.done:1", "restore.performed:2"):
        run_dir = tmp_path / point.replace(":", "_")
        w = build_world(run_dir, garbage=GARBAGE, live=LIVE)
        before = tree_digest(w.log_dir)
        assert _cli(commands, w, run_dir, "apply", "plan-1", "--broker", "1", "--execute").returncode == 0
        crashed = _cli(commands, w, run_dir, "restore", "plan-1", "--execute", env={"KLGC_FAULT_POINT": point})
        assert crashed.returncode == -signal.SIGKILL, f"{point}: {crashed.returncode} {crashed.stderr}"
        rerun = _cli(commands, w, run_dir, "restore", "plan-1", "--execute", "--json")
        assert rerun.returncode == 0, f"{point}: {rerun.stdout} {rerun.stderr}"
        assert tree_digest(w.log_dir) == before, point
