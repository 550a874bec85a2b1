"""Interlock with a running broker (the JVM's own lock on <logdir>/.lock) and one executor per broker."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from exec_world import build_world

from pipelines.errors import ExecutorBusy
from pipelines.execute.apply import apply_plan
from pipelines.execute.locks import FileLock, kafka_dir_lock

LOCKER = Path(__file__).resolve().parent / "Locker.java"


def _jvm_holding(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen(["java", str(LOCKER), str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "LOCKED", f"the JVM could not take its lock: {line!r}"
    return proc


def _release(proc: subprocess.Popen) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=60)


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (java) to run Locker.java")
def test_apply_refuses_while_a_jvm_holds_the_log_dir_lock(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    proc = _jvm_holding(w.log_dir / ".lock")
    try:
        with pytest.raises(ExecutorBusy, match="broker is running"):
            apply_plan(w.config, w.store, "plan-1", 1, execute=True)
        assert all(p.exists() for p in w.garbage.values())
    finally:
        _release(proc)
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert report.count("quarantined") == 3


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (java) to run Locker.java")
def test_the_jvm_cannot_lock_while_the_executor_holds_the_lock(tmp_path: Path) -> None:
    """The other direction: a broker starting during an apply fails to lock (Kafka: 'Failed to acquire lock')."""
    (tmp_path / ".lock").touch()
    with kafka_dir_lock(tmp_path):
        proc = subprocess.run(["java", str(LOCKER), str(tmp_path / ".lock")], input="", capture_output=True,
                              text=True, timeout=120)
        assert proc.stdout.strip() == "BUSY"


_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("LOCKED", flush=True)
sys.stdin.read()
"""


def test_a_second_executor_for_the_same_broker_refuses(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    w.state_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(w.state_dir / "executor-broker-1.lock")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "LOCKED"
        with pytest.raises(ExecutorBusy, match="another logdir-gc executor is already running for broker 1"):
            apply_plan(w.config, w.store, "plan-1", 1, execute=True)
        assert all(p.exists() for p in w.garbage.values())
    finally:
        _release(proc)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == 3


def test_lock_is_not_taken_twice_in_one_process(tmp_path: Path) -> None:
    """POSIX locks die with ANY close of the file: a second open+close in-process would silently drop the first."""
    path = tmp_path / "x.lock"
    with FileLock(path, busy_message="busy"), pytest.raises(ExecutorBusy, match="already locked by this process"):
        FileLock(path, busy_message="busy").acquire()
