"""``rust_allocator``: delta-rs' jemalloc gives a write's freed pages back to the OS within seconds, unless the
environment says otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipelines.tables.rust_allocator import ALLOCATOR_ENV

REPO = Path(__file__).resolve().parents[2]

# In a fresh process (jemalloc reads its setting once, when deltalake loads): one 50 MB document written, as the plan
# step writes gc_plans.plan_json, then the RSS over the next seconds.
PROBE = """
import sys, time
import pipelines.tables  # sets the allocator, as every store import does
import pyarrow as pa
from deltalake import write_deltalake

def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))

doc = pa.table({"doc": pa.array(["x" * 50_000_000])})
write_deltalake(sys.argv[1] + "/warm", pa.table({"doc": pa.array(["x"])}))
before = rss_mib()
write_deltalake(sys.argv[1] + "/t", doc)
after = rss_mib()
for _ in range(int(sys.argv[2])):  # a 1 s decay: back within a few seconds
    time.sleep(0.25)
    if rss_mib() - before < 40:
        break
print(before, after, rss_mib())
"""


def _probe(tmp_path: Path, env: dict[str, str], polls: int) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), str(polls)], cwd=REPO, capture_output=True,
                         text=True, check=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "", **env})
    before, after, settled = map(int, out.stdout.split())
    return before, after, settled


def test_a_writes_pages_go_back_to_the_os(tmp_path: Path) -> None:
    before, after, settled = _probe(tmp_path / "a", {}, polls=40)  # up to 10 s, however loaded the machine
    assert after - before > 80, "the write holds its pages at first: the premise"
    assert settled - before < 40


def test_a_setting_in_the_environment_is_kept(tmp_path: Path) -> None:
    before, after, settled = _probe(tmp_path / "b", {ALLOCATOR_ENV: ""}, polls=12)  # jemalloc's defaults
    assert after - before > 80
    assert settled - before > 80
