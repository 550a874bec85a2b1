"""One process at a time resolves the Delta jars into a cache; another waits, then starts on the jars it recorded.

JVM-free: the lock and the settings it hands out (``jar_cache.jar_resolution``); the JVM's part is in
``test_first_run.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.tables import jar_cache
from pipelines.tables.jar_cache import S3A_PACKAGES

# A second process about to start Spark: the jar settings it would start with.
SECOND = """
import json
from pipelines.tables.jar_cache import jar_resolution
with jar_resolution() as settings:
    print(json.dumps(settings))
"""


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("KLGC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KLGC_MAVEN_REPO", "file:///no/such/repository")
    yield tmp_path / "cache"


def _second_process() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SECOND], env=dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _resolve_as_ivy_would() -> list[Path]:
    """What a resolving session leaves: the jars in the cache and the record of them."""
    jars_dir = jar_cache.jars_dir()
    jars_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for coordinate in jar_cache.delta_packages() + list(S3A_PACKAGES):
        group, artifact, version = coordinate.split(":")
        names.append(f"{group}_{artifact}-{version}.jar")
    for name in names:
        (jars_dir / name).write_bytes(b"jar")
    jar_cache.record_resolved_jars(",".join(f"file://{jars_dir / name}" for name in names))
    return sorted(jars_dir / name for name in names)


def test_a_second_process_waits_for_the_resolution_then_starts_on_its_jars(cache: Path) -> None:
    with jar_cache.jar_resolution() as first:
        assert "spark.jars.packages" in first  # an empty cache: this process resolves
        second = _second_process()
        # it says so, then blocks on the lock; without the lock it would go on to start a resolution of its own
        waiting = second.stderr.readline() if second.stderr else ""
        assert "waiting for another process resolving the Delta jars" in waiting, second.communicate()
        jars = _resolve_as_ivy_would()
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out) == {"spark.jars": ",".join(str(path) for path in jars)}  # no second resolution


def test_a_resolution_that_failed_leaves_the_next_process_to_resolve(cache: Path) -> None:
    with jar_cache.jar_resolution() as first:
        assert "spark.jars.packages" in first
        second = _second_process()
        assert second.stderr is not None and "waiting" in second.stderr.readline()
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert "spark.jars.packages" in json.loads(out)


def test_with_the_jars_recorded_a_session_starts_without_the_lock(cache: Path) -> None:
    jars = _resolve_as_ivy_would()
    with jar_cache.jar_resolution(caller_packages=True) as first:  # held: this caller resolves packages of its own
        second = _second_process()
        out, err = second.communicate(timeout=120)  # a hang guard: it must not wait for this lock
    assert second.returncode == 0 and "waiting" not in err, err
    assert json.loads(out) == {"spark.jars": ",".join(str(path) for path in jars)}
    assert first == json.loads(out)


def test_the_lock_file_is_in_the_ivy_directory_it_guards(cache: Path) -> None:
    assert jar_cache.resolve_lock_path().parent == jar_cache.jars_dir().parent == cache / "ivy"
