"""``logdir-gc`` as a child process, run as a user runs it: in a directory of its own, with Spark's ``PYSPARK_*``
variables cleared."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LOGDIR_GC = [sys.executable, "-m", "pipelines.cli.main"]


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``logdir-gc ARGS`` as a child process in ``cwd``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.run([*LOGDIR_GC, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                          check=False)


@dataclass(frozen=True)
class DemoRun:
    done: subprocess.CompletedProcess[str]
    out: Path
    """``--out``: the generated cluster, its ``cluster.yaml`` and the warehouse."""
    caller: Path
    """The (empty) directory the demo was run from."""
