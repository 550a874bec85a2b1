"""A first run on an empty jar cache: two Spark starts at once both get the jars, and a resolution that fails is one
line naming the cause and the log file (exit 12), no traceback.

Offline: the jars come from a Maven repository on disk (``file://``) laid out from the project cache's Ivy files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.cli.exit_codes import SPARK_START
from pipelines.tables import jar_cache

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

# The cheapest Spark start: a session on the jars it resolved (or found), one Delta row, stop.
START = """
import sys
from pathlib import Path
from pipelines.tables.spark_session import build_spark
out = Path(sys.argv[1])
spark = build_spark("klgc-first-run", master="local[1]", log_file=out / "spark.log")
spark.range(1).write.format("delta").save(str(out / "t"))
print(spark.read.format("delta").load(str(out / "t")).count())
spark.stop()
"""


@pytest.fixture(scope="module")
def maven_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Maven repository (poms and jars) of what the project cache's Ivy holds: what a resolution needs."""
    ivy_cache = jar_cache.cache_dir() / "ivy" / "cache"
    if jar_cache.cached_jars() is None or not ivy_cache.is_dir():
        pytest.skip("the project cache holds no resolved jars (run scripts/setup.sh)")
    repo = tmp_path_factory.mktemp("m2")
    for pom in ivy_cache.glob("*/*/ivy-*.xml.original"):
        org, module = pom.parent.parent.name, pom.parent.name
        rev = pom.name.removeprefix("ivy-").removesuffix(".xml.original")
        target = repo.joinpath(*org.split("."), module, rev)
        target.mkdir(parents=True, exist_ok=True)
        (target / f"{module}-{rev}.pom").symlink_to(pom)
        for kind in ("jars", "bundles"):
            jar = pom.parent / kind / f"{module}-{rev}.jar"
            if jar.is_file():
                (target / f"{module}-{rev}.jar").symlink_to(jar)
    return repo


def _env(cache: Path, repo: str) -> dict[str, str]:
    return {**os.environ, "KLGC_CACHE_DIR": str(cache), "KLGC_MAVEN_REPO": repo, "KLGC_CLASS_ARCHIVE": "off"}


@pytest.mark.second_tier  # ~68 s in CI: two JVMs resolve 83 jars; the lock itself: test_jar_resolution_lock
def test_two_spark_starts_at_once_on_an_empty_cache_both_succeed(tmp_path: Path, maven_repo: Path) -> None:
    env = _env(tmp_path / "cache", maven_repo.as_uri())
    runs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        runs.append(subprocess.Popen([sys.executable, "-c", START, str(tmp_path / name)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for run, name in zip(runs, "ab", strict=True):
        out, err = run.communicate(timeout=800)
        log = tmp_path / name / "spark.log"
        assert run.returncode == 0, f"{err[-1500:]}\n{log.read_text()[-3000:] if log.exists() else ''}"
        assert out.split()[-1] == "1"
    # one resolution: exactly one of the two JVMs ran Ivy, the other started on the jars it recorded
    resolved = [name for name in "ab" if ":: resolving dependencies ::" in (tmp_path / name / "spark.log").read_text()]
    assert len(resolved) == 1, resolved


def test_an_unreachable_repository_is_one_line_naming_the_cause_and_the_log(tmp_path: Path) -> None:
    env = _env(tmp_path / "cache", "http://127.0.0.1:9/")
    logdir = tmp_path / "broker-1"
    logdir.mkdir()
    done = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "run", "--logdir", f"1={logdir}",
                           "--warehouse", str(tmp_path / "wh"), "--run-id", "first"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == SPARK_START, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("logdir-gc: error:")]
    log = tmp_path / "wh" / "_logs" / "spark-first.log"
    assert len(errors) == 1, done.stderr
    assert "Spark could not start: unresolved dependency io.delta#delta-spark" in errors[0], errors[0]
    assert "http://127.0.0.1:9/" in errors[0] and errors[0].endswith(f"see {log}")
    assert "unresolved dependency" in log.read_text()


# A JVM java refuses to start (a heap size it cannot read), on the project cache's recorded jars (no resolution).
BAD_OPTION = """
import sys
from pathlib import Path
from pipelines.tables.spark_session import JarsUnavailable, SparkStartFailed, build_spark
try:
    build_spark("klgc-bad-option", master="local[1]", log_file=Path(sys.argv[1]),
                conf={"spark.driver.memory": "1x"})
except JarsUnavailable as exc:
    sys.exit(f"JarsUnavailable: {exc}")
except SparkStartFailed as exc:
    print(exc)
"""


def test_a_jvm_that_exits_at_start_is_one_line_naming_the_cause_and_the_log(tmp_path: Path) -> None:
    if jar_cache.cached_jars() is None:
        pytest.skip("the project cache holds no resolved jars (run scripts/setup.sh)")
    log = tmp_path / "spark.log"
    done = subprocess.run([sys.executable, "-c", BAD_OPTION, str(log)], env={**os.environ, "KLGC_CLASS_ARCHIVE": "off"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"Spark could not start: Invalid maximum heap size: -Xmx1x: see {log}"
