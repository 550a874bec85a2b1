"""The JVM-free parts of the session factory: cache location, Ivy settings, coordinates (no Spark started)."""

from __future__ import annotations

import importlib.metadata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pipelines.tables import spark_session


def test_cache_dir_and_maven_repo_follow_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KLGC_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("KLGC_MAVEN_REPO", "https://mirror.example/m2")
    assert spark_session.cache_dir() == tmp_path / "c"
    assert spark_session.maven_repo() == "https://mirror.example/m2/"
    assert spark_session.jars_dir() == tmp_path / "c" / "ivy" / "jars"
    assert not spark_session.jars_ready()


def test_ivy_settings_have_one_resolver_and_our_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KLGC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KLGC_MAVEN_REPO", raising=False)
    path = spark_session.ivy_settings_path()
    root = ET.parse(path).getroot()
    resolvers = root.find("resolvers")
    assert resolvers is not None and [r.get("root") for r in resolvers] == [spark_session.MAVEN_CENTRAL]
    cache = root.find("caches")
    assert cache is not None and cache.get("defaultCacheDir") == str(tmp_path / "ivy" / "cache")
    mtime = path.stat().st_mtime_ns
    assert spark_session.ivy_settings_path() == path and path.stat().st_mtime_ns == mtime  # unchanged: not rewritten


def test_delta_coordinates_match_the_installed_pyspark_and_delta_spark() -> None:
    spark_minor = ".".join(importlib.metadata.version("pyspark").split(".")[:2])
    delta = importlib.metadata.version("delta-spark")
    assert spark_session.delta_packages() == [f"io.delta:delta-spark_{spark_minor}_2.13:{delta}"]


@pytest.mark.parametrize(("master", "cores"), [("local[2]", 2), ("local[1]", 1), ("local", 1)])
def test_local_shuffle_partitions_are_twice_the_cores(master: str, cores: int) -> None:
    assert spark_session._local_defaults(master)["spark.sql.shuffle.partitions"] == str(2 * cores)


def test_local_sessions_run_without_adaptive_execution() -> None:
    """A local session runs each query's shuffles and broadcasts in one job (AQE makes each one a job of its own)."""
    assert spark_session._local_defaults("local[2]")["spark.sql.adaptive.enabled"] == "false"
    assert spark_session._COMMON_DEFAULTS["spark.sql.adaptive.enabled"] == "true"  # a cluster's session keeps it


def test_only_a_local_masters_driver_maps_the_class_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Another master's driver keeps the cluster's own ``spark.driver.extraJavaOptions`` (Kerberos, truststores)."""
    from pipelines.tables import class_archive

    monkeypatch.setenv("KLGC_CACHE_DIR", str(tmp_path))
    path = class_archive.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert class_archive.with_archive("-Da=1", "local[2]") == f"-Da=1 {class_archive.driver_java_options()}"
    assert str(path) in class_archive.with_archive("", "local[*]")
    for master in ("spark://master:7077", "yarn", "k8s://https://api:6443"):
        assert class_archive.with_archive("-Da=1", master) == "-Da=1"
        assert class_archive.with_archive("", master) == ""
    monkeypatch.setenv("KLGC_CLASS_ARCHIVE", "off")
    assert class_archive.with_archive("-Da=1", "local[2]") == "-Da=1"


def test_an_archive_key_that_cannot_be_worked_out_means_no_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyspark from ``$SPARK_HOME/python`` has no package metadata: the session starts without the archive."""
    from pipelines.tables import class_archive

    def no_metadata(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(class_archive.importlib.metadata, "version", no_metadata)
    assert class_archive.driver_java_options() == ""
    assert class_archive.with_archive("-Da=1", "local[2]") == "-Da=1"
