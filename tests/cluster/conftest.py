"""Fixtures of the Spark standalone cluster tests: the workers' bare Python, the shipped package, the cluster.

Both the workers' venv (pyspark, pyarrow, pandas: NOT this package) and the package built by `logdir-gc package`
are built once into the project cache (``KLGC_CACHE_DIR``, default ``.cache/``) and reused across runs; the package
is keyed by a hash of the sources, so a change rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_standalone import StandaloneCluster

from pipelines.tables.spark_session import cache_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, StandaloneCluster):
                report.sections.append(("spark standalone logs", value.log_tails(40)))


def _build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``build(tmp)`` into a sibling directory, then renamed to ``target`` (a half-built one is never reused)."""
    if target.is_dir():
        return target
    tmp = target.with_name(target.name + ".building")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    build(tmp)
    tmp.rename(target)
    return target


@pytest.fixture(scope="session")
def worker_python_bin() -> Path:
    """bin/ of a venv with what a cluster's workers typically have (pyspark, pyarrow, pandas) and NOT this package."""
    key = f"py{sys.version_info.major}.{sys.version_info.minor}-pyspark{version('pyspark')}"

    def build(tmp: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True)
        subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        f"pyspark=={version('pyspark')}", "pyarrow", "pandas<3"], check=True)

    venv = _build_once(cache_dir() / "spark-worker-python" / key, build)
    return venv / "bin"


def _source_hash() -> str:
    digest = hashlib.sha256()
    files = [REPO / "pyproject.toml", REPO / "setup.py", *sorted((REPO / "pipelines").rglob("*.py")),
             *sorted((REPO / "pipelines").rglob("*.c"))]
    for path in files:
        digest.update(path.relative_to(REPO).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def package() -> dict:
    """What `logdir-gc package --json` printed (built once per source hash)."""
    def build(tmp: Path) -> None:
        done = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "package", "--out", str(tmp), "--json"],
                              capture_output=True, text=True, check=False, cwd=REPO, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        (tmp / "package.json").write_text(done.stdout)

    out = _build_once(cache_dir() / "spark-package" / _source_hash(), build).resolve()
    for stale in out.parent.iterdir():  # packages of older sources: ~150 MB each
        if stale != out and not stale.name.endswith(".building"):
            shutil.rmtree(stale, ignore_errors=True)
    printed = (out / "package.json").read_text()
    # the paths were printed for the directory it was built in; the same files sit in `out` now
    return json.loads(printed.replace(str(out.with_name(out.name + ".building")), str(out)))


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory, worker_python_bin: Path) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2,
                                worker_python_bin=worker_python_bin)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
