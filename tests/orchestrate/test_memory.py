"""``release_unused_memory``: a step's freed Arrow rows stop counting against the driver's RSS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# In a fresh process: the figures are this allocation's alone, not whatever the test session did before.
PROBE = """
import sys
import pyarrow as pa
from pipelines.orchestrate.memory import release_unused_memory

def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))

pa.nulls(10, pa.int64()).fill_null(7)  # compute's kernels loaded before the first figure
before = rss_mib()
rows = pa.nulls(20_000_000, pa.int64()).fill_null(7)  # 160 MB of Arrow buffers, written
del rows
kept = rss_mib()
if sys.argv[1] == "release":
    release_unused_memory()
print(before, kept, rss_mib())
"""


def _probe(mode: str) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=REPO, capture_output=True, text=True, check=True,
                         timeout=300, env={"PYTHONPATH": str(REPO), "PATH": ""})
    before, kept, after = map(int, out.stdout.split())
    return before, kept, after


def test_freed_arrow_pages_go_back_to_the_os() -> None:
    before, kept, after = _probe("release")
    assert kept - before > 100, "the allocator keeps the freed table's pages: the premise of the release"
    assert after - before < 50
    before, kept, after = _probe("keep")
    assert after - before > 100, "without the release the pages stay resident"
