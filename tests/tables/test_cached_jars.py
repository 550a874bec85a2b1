"""Resolve once, then start on the cached jars: the manifest logic without a JVM (the CLI test starts one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.tables import jar_cache, spark_session
from pipelines.tables.jar_cache import S3A_PACKAGES


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("KLGC_CACHE_DIR", str(tmp_path))
    jar_cache.jars_dir().mkdir(parents=True)
    return jar_cache.jars_dir()


def _jar(coordinate: str) -> str:
    group, artifact, version = coordinate.split(":")
    return f"{group}_{artifact}-{version}.jar"


def _delta_jar() -> str:
    return _jar(jar_cache.delta_packages()[0])


def _top_level_jars() -> list[str]:
    """The jars of the coordinates the session asks for: Delta and the s3a packages."""
    return [_jar(c) for c in jar_cache.delta_packages() + list(S3A_PACKAGES)]


def test_without_a_recorded_resolution_the_session_resolves_with_ivy(cache: Path) -> None:
    (cache / _delta_jar()).write_bytes(b"jar")  # the jar alone (an older cache) is not a record of its dependencies
    assert jar_cache.cached_jars() is None
    settings = jar_cache.delta_jar_settings()
    requested = jar_cache.delta_packages() + list(S3A_PACKAGES)
    assert settings["spark.jars.packages"] == ",".join(requested)
    assert "spark.jars" not in settings


def test_a_recorded_resolution_starts_spark_on_those_files_only(cache: Path) -> None:
    names = [*_top_level_jars(), "io.delta_delta-storage-4.4.0.jar"]
    for name in [*names, "some-other-version.jar"]:
        (cache / name).write_bytes(b"jar")
    urls = [f"file://{cache / n}" for n in names] + ["file:///elsewhere/hadoop-aws.jar"]
    jar_cache.record_resolved_jars(",".join(urls))

    assert jar_cache.cached_jars() == sorted(cache / n for n in names)
    settings = jar_cache.delta_jar_settings()
    assert settings == {"spark.jars": ",".join(str(cache / n) for n in sorted(names))}

    (cache / names[1]).unlink()  # a jar gone from the cache: resolve again rather than start without it
    assert jar_cache.cached_jars() is None


def test_a_resolution_without_the_delta_jar_is_not_recorded(cache: Path) -> None:
    (cache / "x.jar").write_bytes(b"jar")
    jar_cache.record_resolved_jars(f"file://{cache / 'x.jar'}")
    assert not jar_cache.jars_manifest_path().exists()


def test_a_resolution_without_the_s3a_jars_is_not_recorded(cache: Path) -> None:
    """A cache from before the s3a packages joined would start sessions that cannot read s3a:// warehouses."""
    (cache / _delta_jar()).write_bytes(b"jar")
    jar_cache.record_resolved_jars(f"file://{cache / _delta_jar()}")
    assert not jar_cache.jars_manifest_path().exists()


def test_the_record_is_per_coordinates_and_repository(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    central = jar_cache.jars_manifest_path()
    monkeypatch.setenv("KLGC_MAVEN_REPO", "https://mirror.example/m2")
    assert jar_cache.jars_manifest_path() != central


def test_the_catalog_directory_is_under_the_cache_never_the_cwd(cache: Path) -> None:
    assert spark_session.scratch_dir().is_relative_to(spark_session.cache_dir())
    java_options = spark_session._local_defaults("local[2]")["spark.driver.extraJavaOptions"]
    assert f"-Dderby.system.home={spark_session.scratch_dir()}" in java_options
