"""The SFTP listing parser sums partition dirs up while parsing (``summarize=True``); the scan must not notice.

The remote command runs under a local ``/bin/sh`` (no SSH needed: the parser only sees its output). Equal means:
the listing's errors and failed dirs, the inventory (without per-file entries) and the failed reads. Trees come from
the compiled lister's differential test (odd names, links, FIFOs, subdirectories, malformed partition.metadata),
the project's fixtures and the real log dirs under ../shared/real-logdirs.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.crawl.backends import sftp
from pipelines.crawl.rows import scan_listing
from tests.crawl.test_native_dirscan import PARTITION, REPO, _real_roots, build_tree


def _parse_both(root: str) -> tuple[object, object]:
    done = subprocess.run(["sh", "-c", sftp.remote_command(root)], capture_output=True, check=False)
    stderr = done.stderr.decode("utf-8", "replace")
    return (sftp.parse_output(root, done.stdout, stderr),
            sftp.parse_output(root, done.stdout, stderr, summarize=True))  # fmt: skip


def assert_same_scan(root: str) -> None:
    plain, summed = _parse_both(root)
    assert not plain.summaries
    assert summed.errors == plain.errors
    assert {r: str(e) for r, e in summed.failed_dirs.items()} == {r: str(e) for r, e in plain.failed_dirs.items()}
    assert summed.contents == plain.contents
    inv_plain, failed_plain = scan_listing(plain, keep_entries=False)
    inv_summed, failed_summed = scan_listing(summed, keep_entries=False)
    assert inv_summed == inv_plain
    assert {r: str(e) for r, e in failed_summed.items()} == {r: str(e) for r, e in failed_plain.items()}
    segment_free = {r for r, e in summed.entries.items() if "/" in r}
    assert segment_free <= set(plain.entries)  # only entries the plain listing has, fewer of them
    if any(inv.segment_count for inv in inv_plain.partition_dirs):
        assert len(summed.entries) < len(plain.entries)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PARTITION, min_size=1, max_size=4))
def test_generated_trees_scan_alike(partitions: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build_tree(Path(tmp), partitions)
        assert_same_scan(str(Path(tmp) / "logdir"))


def test_project_fixtures(cluster: dict[str, Path]) -> None:
    for path in sorted(cluster.values()):
        assert_same_scan(str(path))
    for log_dir in sorted(p for p in (REPO / "tests" / "fixtures" / "kraft-cluster").glob("*/*") if p.is_dir()):
        assert_same_scan(str(log_dir))


def test_real_log_dirs() -> None:
    roots = _real_roots()
    if roots and not isinstance(roots[0], str):
        pytest.skip("real log dirs not available")
    for root in roots:
        assert_same_scan(str(root))
