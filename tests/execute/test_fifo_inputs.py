"""The executor never blocks on a FIFO planted where it reads a file (partition.metadata, meta.properties)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pipelines.errors import PreconditionFailed
from pipelines.execute.observe import ItemSkipped, observe_dir
from pipelines.execute.preconditions import check_host
from pipelines.plan.model import GcPlan


def _run_bounded(fn, *args) -> BaseException | None:
    """Run ``fn`` in a thread; a thread still blocked after 30 s means it hung on the FIFO."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            fn(*args)
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():
        pytest.fail("blocked reading a FIFO (the daemon thread is abandoned)")
    return outcome[0]


def test_fifo_partition_metadata_skips_the_item(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    os.mkfifo(part / "partition.metadata")
    exc = _run_bounded(observe_dir, str(tmp_path), "t-0")
    assert isinstance(exc, ItemSkipped) and "partition.metadata" in str(exc)


def test_fifo_meta_properties_refuses_the_host(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "meta.properties")
    plan = GcPlan.model_validate({"plan_id": "p", "cluster": "c", "cluster_id": "x", "created_by": "a",
                                  "created_at": "2026-01-01T00:00:00Z", "run_id": "r"})
    exc = _run_bounded(check_host, plan, 1, str(tmp_path), [])
    assert isinstance(exc, PreconditionFailed) and "meta.properties" in str(exc)


def test_fifo_in_the_metadata_log_never_blocks_the_replay_or_the_executor(tmp_path: Path) -> None:
    """A FIFO planted as a segment or as the leader-epoch file of the controller log the executor re-reads."""
    from exec_world import build_world

    from pipelines.execute.apply import apply_plan

    w = build_world(tmp_path)
    meta = Path(w.config.metadata.source)
    os.mkfifo(meta / "00000000000000000100.log")
    os.mkfifo(meta / "leader-epoch-checkpoint")
    exc = _run_bounded(apply_plan, w.config, w.store, "plan-1", 1)
    assert exc is None


def test_metadata_show_on_a_fifo_segment_or_empty_files_exits_with_a_code(tmp_path: Path) -> None:
    import subprocess
    import sys

    fifo_dir = tmp_path / "fifo" / "__cluster_metadata-0"
    fifo_dir.mkdir(parents=True)
    os.mkfifo(fifo_dir / "00000000000000000000.log")
    empty_dir = tmp_path / "empty" / "__cluster_metadata-0"
    empty_dir.mkdir(parents=True)
    for name in ("00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint"):
        (empty_dir / name).write_bytes(b"")
    for d in (fifo_dir, empty_dir):
        proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "metadata", "show", str(d)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 8 and "no decodable KRaft metadata record" in proc.stderr, proc
        assert len(proc.stderr.splitlines()) == 1


def test_prestart_kills_a_worker_that_hangs_and_still_exits_0(tmp_path: Path) -> None:
    """The worker blocks forever in the middle of an apply, holding Kafka's lock (a hung disk, armed with the fault
    hook): the supervisor's hard deadline kills it, exits 0, and the next apply resumes what was journalled."""
    import json
    import subprocess
    import sys
    import time

    import yaml
    from exec_world import build_world

    from pipelines.execute.apply import apply_plan
    from pipelines.execute.faults import ENV_POINT

    w = build_world(tmp_path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "prestart", "--broker", "1", "--config",
                           str(cfg), "--budget", "8s", "--json"], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, ENV_POINT: "rename.done:1:hang"})
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc
    assert "time budget of 8000 ms spent" in json.loads(proc.stdout)[-1]["error"]
    assert elapsed < 60, elapsed  # a generous bound: the point is that it returned, not how fast
    moved = [p for p in w.garbage.values() if not p.exists()]
    assert len(moved) == 1  # the first item's rename happened before the hang
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)  # the killed worker's locks are gone
    assert report.status == "applied" and not any(p.exists() for p in w.garbage.values())
