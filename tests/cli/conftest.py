"""One ``logdir-gc demo --json`` child process for the whole session: a demo costs minutes of local Spark, and the
quiet-run test and the one-document test read the same run."""

from __future__ import annotations

import pytest

from tests.cli.cli_process import DemoRun, run_cli


@pytest.fixture(scope="session")
def demo_run(spark, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """``demo --json``, after the session's Spark fixture has recorded the cached jars (so no resolver runs)."""
    root = tmp_path_factory.mktemp("demo-run")
    caller = root / "caller"
    caller.mkdir()
    return DemoRun(run_cli(["demo", "--out", str(root / "demo"), "--json"], caller), root / "demo", caller)
