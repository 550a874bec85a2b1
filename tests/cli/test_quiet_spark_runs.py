"""What `logdir-gc demo` / `run` leave on the terminal and on disk, run as a user runs them: a child process in a
directory of its own. Spark's output goes to one log file (its path said once), or to stderr with -v; the Delta jars
come from the cache without a resolver run; nothing lands in the caller's directory; a run whose crawl failed exits
non-zero with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.tables import open_store
from pipelines.tables.spark_session import cached_jars

pytestmark = pytest.mark.spark

LOGDIR_GC = [sys.executable, "-m", "pipelines.cli.main"]
SPARK_DEBRIS = ("spark-warehouse", "metastore_db", "derby.log")
IVY_SAYS = ":: resolving dependencies"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.run([*LOGDIR_GC, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                          check=False)


def test_demo_is_quiet_starts_on_cached_jars_and_leaves_nothing_behind(spark, tmp_path: Path) -> None:
    assert cached_jars() is not None, "the session fixture's resolution records the jars"
    cwd = tmp_path / "caller"
    cwd.mkdir()
    done = _cli(["demo", "--out", str(tmp_path / "demo")], cwd)
    assert done.returncode == 0, done.stderr[-2000:]

    [log] = (tmp_path / "demo" / "warehouse" / "_logs").glob("spark-*.log")
    mentions = [line for line in done.stderr.splitlines() if str(log) in line]
    assert len(mentions) == 1, done.stderr
    assert "log4j" in log.read_text(), "Spark's own output went to the log file"
    assert IVY_SAYS not in log.read_text(), "no resolver run: the jars came from the cache"
    for line in done.stderr.splitlines():
        assert not any(word in line for word in ("WARN", "log4j", "ivy", "Ivy", "Traceback")), line
    assert "plan:" in done.stdout
    assert sorted(p.name for p in cwd.iterdir()) == [], "nothing Spark writes by default lands in the cwd"
    assert not any((tmp_path / "demo" / name).exists() for name in SPARK_DEBRIS)


def test_run_on_a_failed_crawl_exits_non_zero_with_one_line_and_verbose_shows_spark(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    done = _cli(["run", "--logdir", f"1={tmp_path / 'no-such-log-dir'}", "--warehouse", str(warehouse),
                 "--run-id", "r1", "-v"], tmp_path)
    assert done.returncode == 9, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("logdir-gc: error: detect refused: the crawl of run r1 did not succeed (status failed)")
    assert "Traceback" not in done.stderr
    assert "log4j" in done.stderr, "-v: Spark's own output stays on stderr"
    assert not (warehouse / "_logs").exists()
    [row] = open_store("rust", str(warehouse)).read_rows("crawl_runs", {"run_id": "r1"})
    assert row["status"] == "failed"
    assert not any((tmp_path / name).exists() for name in SPARK_DEBRIS)
