"""The one place that builds a Spark session with Delta Lake.

Library code never calls this: it takes ``spark`` as a parameter. Jobs, notebooks, the set-up script and the
test fixture call :func:`build_spark`.

Two situations:

* **Under spark-submit / a pyspark shell** (a session is active, or the JVM gateway was launched for us): the
  cluster's session is reused; jars must come from the submitter (``--packages`` or the cluster image). Only
  settings the caller passes explicitly, plus the Delta extension and catalog when none is set, are applied.
* **Standalone Python** (tests, notebooks, the set-up script): a ``local[*]`` session is started. Delta jars
  are resolved by Spark's Ivy from one Maven repository (``KLGC_MAVEN_REPO``, default Maven Central) into a
  cache directory of ours, because Spark's default resolver chain also consults ``~/.m2`` (which may hold poms
  without jars) and an unreachable package host.

Environment:
    KLGC_CACHE_DIR: cache root (Ivy settings, Ivy cache, resolved jars). Default: ``<repo>/.cache`` when this
        file lives in a source checkout, else ``~/.cache/kafka-logdir-gc``.
    KLGC_MAVEN_REPO: Maven repository root URL. Default: Maven Central.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from pipelines.errors import PipelinesError
from pipelines.tables.object_store import S3A_EXCLUDES, S3A_PACKAGES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_APP_NAME",
    "JarsUnavailable",
    "build_spark",
    "cache_dir",
    "delta_packages",
    "ivy_settings_path",
    "jars_dir",
    "jars_ready",
    "maven_repo",
    "resolve_jars",
]

DEFAULT_APP_NAME = "kafka-logdir-gc"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
_SCALA_VERSION = "2.13"
_REPO_ROOT = Path(__file__).resolve().parents[2]


class JarsUnavailable(PipelinesError):
    """The Delta Lake jars could not be resolved (repository unreachable or artifact missing)."""


def cache_dir() -> Path:
    """Cache root for Ivy settings, the Ivy cache and resolved jars (see module docstring)."""
    override = os.environ.get("KLGC_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    if (_REPO_ROOT / "pyproject.toml").is_file() and (_REPO_ROOT / "pipelines").is_dir():
        return _REPO_ROOT / ".cache"
    return Path.home() / ".cache" / "kafka-logdir-gc"


def maven_repo() -> str:
    """Root URL of the one Maven repository jars are resolved from (``KLGC_MAVEN_REPO``)."""
    url = os.environ.get("KLGC_MAVEN_REPO") or MAVEN_CENTRAL
    return url if url.endswith("/") else url + "/"


def delta_packages() -> list[str]:
    """Maven coordinates of the Delta jars matching the installed ``pyspark`` and ``delta-spark``.

    Same rule as ``delta.configure_spark_with_delta_pip``: ``io.delta:delta-spark_<spark major.minor>_2.13``.
    """
    spark_version = importlib.metadata.version("pyspark")
    delta_version = importlib.metadata.version("delta-spark")
    major_minor = ".".join(spark_version.split(".")[:2])
    return [f"io.delta:delta-spark_{major_minor}_{_SCALA_VERSION}:{delta_version}"]


def jars_dir() -> Path:
    """Directory Spark's Ivy copies resolved jars into (``<spark.jars.ivy>/jars``)."""
    return cache_dir() / "ivy" / "jars"


def ivy_settings_path() -> Path:
    """Write (if changed) and return an Ivy settings file with one Maven resolver and our own cache."""
    root = cache_dir()
    path = root / "ivysettings.xml"
    text = (
        "<ivysettings>\n"
        '  <settings defaultResolver="klgc-maven"/>\n'
        f"  <caches defaultCacheDir={quoteattr(str(root / 'ivy' / 'cache'))}/>\n"
        "  <resolvers>\n"
        f'    <ibiblio name="klgc-maven" m2compatible="true" root={quoteattr(maven_repo())}/>\n'
        "  </resolvers>\n"
        "</ivysettings>\n"
    )
    if not path.is_file() or path.read_text() != text:
        root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".xml.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _expected_jar_names() -> list[str]:
    names = []
    for coordinate in delta_packages() + list(S3A_PACKAGES):
        group, artifact, version = coordinate.split(":")
        names.append(f"{group}_{artifact}-{version}.jar")
    return names


def jars_ready() -> bool:
    """True when the Delta jars are already in :func:`jars_dir` (a session starts without network)."""
    directory = jars_dir()
    return all((directory / name).is_file() for name in _expected_jar_names())


def _under_spark_submit() -> bool:
    """True inside a Python process launched by spark-submit / the pyspark shell (the JVM is already up)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _local_cores(master: str) -> int:
    inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
    if inside.isdigit():
        return max(1, int(inside))
    return os.cpu_count() or 2


def _local_defaults(master: str) -> dict[str, str]:
    cores = _local_cores(master)
    return {
        "spark.jars.packages": ",".join(delta_packages() + list(S3A_PACKAGES)),
        "spark.jars.excludes": ",".join(S3A_EXCLUDES),
        "spark.jars.ivySettings": str(ivy_settings_path()),
        "spark.jars.ivy": str(cache_dir() / "ivy"),
        "spark.sql.shuffle.partitions": str(2 * cores),
        "spark.default.parallelism": str(2 * cores),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.snapshotPartitions": str(max(2, cores)),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    }


_COMMON_DEFAULTS: dict[str, str] = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}

_DELTA_SQL = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def build_spark(
    app_name: str = DEFAULT_APP_NAME,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    warehouse: str | None = None,
) -> SparkSession:
    """Return a Spark session with Delta Lake enabled.

    Args:
        app_name: Spark application name.
        master: Spark master; ``None`` means the cluster's (under spark-submit) or ``local[*]``.
        conf: extra settings; they win over our defaults.
        warehouse: ``spark.sql.warehouse.dir`` (catalog tables; path-based tables do not need it).

    An already active session is returned as is, except that runtime-modifiable entries of ``conf`` are set
    on it. Static settings (jars, extensions) cannot change once a JVM runs; they are silently kept.

    Raises:
        JarsUnavailable: a local session could not start because the Delta jars could not be resolved.
    """
    from pyspark.sql import SparkSession

    extra = dict(conf or {})
    if warehouse is not None:
        extra["spark.sql.warehouse.dir"] = warehouse

    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in extra.items():
            if active.conf.isModifiable(key):
                active.conf.set(key, value)
        return active

    settings: dict[str, str] = dict(_COMMON_DEFAULTS)
    builder = SparkSession.builder.appName(app_name)
    if _under_spark_submit() and master is None:
        from pyspark import SparkConf

        existing = SparkConf()  # loaded from the running JVM: what spark-submit was given wins
        settings.update(_DELTA_SQL)
        settings = {key: value for key, value in settings.items() if not existing.contains(key)}
    else:
        master = master or "local[*]"
        builder = builder.master(master)
        settings.update(_DELTA_SQL)
        if master.startswith("local"):
            settings.update(_local_defaults(master))
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings.update(extra)
    for key, value in settings.items():
        builder = builder.config(key, value)
    from pyspark.errors import PySparkRuntimeError

    try:
        return builder.getOrCreate()
    except PySparkRuntimeError as exc:  # the JVM died before the gateway came up: jar resolution, usually
        if exc.getCondition() == "JAVA_GATEWAY_EXITED":
            raise JarsUnavailable(
                f"Spark could not start; Delta jars {delta_packages()} not resolvable from {maven_repo()} "
                f"(cache {cache_dir()}); see the Ivy output above"
            ) from exc
        raise


def resolve_jars(*, verbose: bool = True) -> list[Path]:
    """Make sure the Delta jars are in the local cache: start a throw-away local session, then stop it.

    Returns the jar files in :func:`jars_dir`. A no-op (no JVM start) when :func:`jars_ready` already holds.

    Raises:
        JarsUnavailable: the repository is unreachable or does not have the artifact.
    """
    say = print if verbose else (lambda *_args, **_kw: None)
    if jars_ready():
        say(f"Delta jars already cached in {jars_dir()}")
    else:
        say(f"resolving {', '.join(delta_packages())} from {maven_repo()} into {cache_dir() / 'ivy'}")
        spark = build_spark(f"{DEFAULT_APP_NAME}-resolve-jars", master="local[1]")
        try:
            spark.range(1).count()
        finally:
            spark.stop()
        if not jars_ready():
            raise JarsUnavailable(f"Spark started but {_expected_jar_names()} are not in {jars_dir()}")
        say(f"Delta jars cached in {jars_dir()}")
    return sorted(jars_dir().glob("*.jar"))
