"""The driver JVM maps Spark's classes from the class archive set-up records, and starts as before without it, with
it switched off, or with an archive it cannot use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.tables.class_archive import archive_path, build_archive, driver_java_options

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

# A fresh process: the session's JVM options are fixed when it starts. It writes one Delta row and prints where the
# JVM loaded a Spark SQL class from (the JVM's own class-loading log).
SESSION = """
import sys
from pathlib import Path
from pipelines.tables.spark_session import build_spark
out = Path(sys.argv[1])
spark = build_spark("klgc-class-archive-test", master="local[1]", log_file=out / "spark.log",
                    conf={"spark.driver.extraJavaOptions": f"-Xlog:class+load=info:file={out / 'classes.log'}"})
spark.range(3).write.format("delta").save(str(out / "t"))
print(spark.read.format("delta").load(str(out / "t")).count())
spark.stop()
"""


def _session(tmp_path: Path, **env: str) -> str:
    """How the JVM loaded ``org.apache.spark.sql.Dataset``: the line of its class-loading log."""
    done = subprocess.run([sys.executable, "-c", SESSION, str(tmp_path)], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "3"
    lines = [line for line in (tmp_path / "classes.log").read_text().splitlines()
             if " org.apache.spark.sql.Dataset " in line]
    assert lines, "the JVM never loaded Dataset"
    return lines[0]


@pytest.mark.second_tier  # ~57 s in CI: a speed-up, not a rule
def test_the_driver_maps_spark_from_the_archive(tmp_path: Path) -> None:
    path = build_archive(verbose=False) or archive_path()
    assert path is not None and path.is_file(), "set-up builds the archive; it could not here"
    assert str(path) in driver_java_options()
    assert "shared objects file (top)" in _session(tmp_path / "with")  # the dynamic archive, above the JDK's own
    assert "shared objects file" not in _session(tmp_path / "off", KLGC_CLASS_ARCHIVE="off")


@pytest.mark.second_tier  # ~32 s in CI
def test_an_archive_the_jvm_cannot_use_changes_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    real = archive_path()
    assert real is not None
    (cache / "ivy").mkdir(parents=True)
    env = {"KLGC_CACHE_DIR": str(cache)}
    # the same jars, under another cache: the archive key is theirs; its file holds no archive
    from pipelines.tables.spark_session import cache_dir, jars_manifest_path

    os.symlink(cache_dir() / "ivy" / "jars", cache / "ivy" / "jars")
    (cache / "ivy" / jars_manifest_path().name).write_bytes(jars_manifest_path().read_bytes())
    os.environ["KLGC_CACHE_DIR"] = str(cache)
    try:
        broken = archive_path()
        assert broken is not None
        broken.parent.mkdir(parents=True)
        broken.write_bytes(b"not an archive" * 1000)
        assert str(broken) in driver_java_options()
    finally:
        del os.environ["KLGC_CACHE_DIR"]
    assert "shared objects file (top)" not in _session(tmp_path / "broken", **env)


def test_a_training_run_cut_short_leaves_no_archive_and_no_partial_file(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KLGC_CACHE_DIR", str(tmp_path / "cache"))
    target = archive_path()
    assert target is not None
    target.parent.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    leftover = target.with_name(f"{target.name}.{dead.pid}.tmp")  # of a set-up killed before it could rename
    leftover.write_bytes(b"half")
    assert build_archive(verbose=False, timeout_s=1) is None  # the JVM has not even started in a second
    assert not target.exists()
    assert list(target.parent.iterdir()) == []
    assert driver_java_options() == ""
