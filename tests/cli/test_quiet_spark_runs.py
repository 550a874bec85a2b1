"""What `logdir-gc demo` / `run` leave on the terminal and on disk, run as a user runs them: a child process in a
directory of its own. Spark's output goes to one log file (its path said once), or to stderr with -v; the Delta jars
come from the cache without a resolver run; nothing lands in the caller's directory; a run whose crawl failed exits
non-zero with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.tables import open_store
from pipelines.tables.spark_session import cached_jars
from tests.cli.cli_process import DemoRun, run_cli

pytestmark = pytest.mark.spark

SPARK_DEBRIS = ("spark-warehouse", "metastore_db", "derby.log")
IVY_SAYS = ":: resolving dependencies"


def test_demo_is_quiet_starts_on_cached_jars_and_leaves_nothing_behind(demo_run: DemoRun) -> None:
    assert cached_jars() is not None, "the session fixture's resolution records the jars"
    done = demo_run.done
    assert done.returncode == 0, done.stderr[-2000:]

    logs = sorted((demo_run.out / "warehouse" / "_logs").glob("spark-*.log"))  # later runs on the demo add theirs
    mentions = [(line, log) for line in done.stderr.splitlines() for log in logs if str(log) in line]
    assert len(mentions) == 1, done.stderr  # the demo's one log file, named once
    [(_, log)] = mentions
    assert "log4j" in log.read_text(), "Spark's own output went to the log file"
    assert IVY_SAYS not in log.read_text(), "no resolver run: the jars came from the cache"
    for line in done.stderr.splitlines():
        assert not any(word in line for word in ("WARN", "log4j", "ivy", "Ivy", "Traceback")), line
    assert json.loads(done.stdout)["plan_id"], "the demo ran to its plan"
    assert sorted(p.name for p in demo_run.caller.iterdir()) == [], "nothing Spark writes by default lands in the cwd"
    assert not any((demo_run.out / name).exists() for name in SPARK_DEBRIS)


@pytest.mark.second_tier  # ~47 s in CI: a whole failed Spark run in a fresh process
def test_run_on_a_failed_crawl_exits_non_zero_with_one_line_and_verbose_shows_spark(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    done = run_cli(["run", "--logdir", f"1={tmp_path / 'no-such-log-dir'}", "--warehouse", str(warehouse),
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
