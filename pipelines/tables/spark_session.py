"""The one place that builds a Spark session with Delta Lake.

Library code never calls this: it takes ``spark`` as a parameter. Jobs, notebooks, the set-up script and the
test fixture call :func:`build_spark`.

Two situations:

* **Under spark-submit / a pyspark shell** (a session is active, or the JVM gateway was launched for us): the
  cluster's session is reused; jars must come from the submitter (``--packages`` or the cluster image). Only
  settings the caller passes explicitly, plus the Delta extension and catalog when none is set, are applied.
* **Standalone Python** (``logdir-gc run``, tests, notebooks, the set-up script): a session is started on the
  given master (``local[*]`` by default, or a cluster's ``spark://``/``yarn``/``k8s://`` URL in client mode).
  Delta jars are resolved ONCE by Spark's Ivy from one Maven repository (``KLGC_MAVEN_REPO``, default Maven
  Central) into a cache directory of ours, because Spark's default resolver chain also consults ``~/.m2`` (which
  may hold poms without jars) and an unreachable package host. The jars that resolution retrieved are recorded in
  a manifest beside them; every later session starts on those files (``spark.jars``) without a resolver run. The
  driver ships ``spark.jars`` to a cluster's executors, so the same works for non-local masters.

The JVM we start can write its output (Spark's log4j, Ivy, JVM warnings) to a log file instead of the terminal
(``log_file``), and Spark's ``spark.sql.warehouse.dir`` points into our cache, never at the caller's directory.

Environment:
    KLGC_CACHE_DIR: cache root (Ivy settings, Ivy cache, resolved jars). Default: ``<repo>/.cache`` when this
        file lives in a source checkout, else ``~/.cache/kafka-logdir-gc``.
    KLGC_MAVEN_REPO: Maven repository root URL. Default: Maven Central.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from pipelines.errors import PipelinesError
from pipelines.tables.class_archive import with_archive
from pipelines.tables.object_store import S3A_EXCLUDES, S3A_PACKAGES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_APP_NAME",
    "JarsUnavailable",
    "build_spark",
    "cache_dir",
    "cached_jars",
    "delta_jar_settings",
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


def jars_manifest_path() -> Path:
    """The record of the jars one resolution of the Delta and s3a packages retrieved (names in :func:`jars_dir`)."""
    key = hashlib.sha256("\n".join([*delta_packages(), *S3A_PACKAGES, maven_repo()]).encode()).hexdigest()[:16]
    return cache_dir() / "ivy" / f"resolved-{key}.jars"


def cached_jars() -> list[Path] | None:
    """The jar files a previous resolution recorded, when every one of them is still there; else None."""
    try:
        names = jars_manifest_path().read_text().split()
    except OSError:
        return None
    paths = [jars_dir() / name for name in names]
    if not names or not all(path.is_file() for path in paths):
        return None
    return paths


def _record_resolved_jars(spark_jars: str) -> None:
    """Write the manifest from the ``spark.jars`` a resolving session ended up with (our cache's jars only)."""
    directory = jars_dir().resolve()
    names = []
    for url in filter(None, spark_jars.split(",")):
        path = Path(url.removeprefix("file://").removeprefix("file:")).resolve()
        if path.parent == directory:
            names.append(path.name)
    if not set(_expected_jar_names()) <= set(names):
        return
    target = jars_manifest_path()
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_text("".join(f"{name}\n" for name in sorted(names)))
    tmp.replace(target)


def delta_jar_settings() -> dict[str, str]:
    """Settings that put the Delta jars on a session we start: the cached files, else an Ivy resolution."""
    jars = cached_jars()
    if jars is not None:
        return {"spark.jars": ",".join(str(path) for path in jars)}
    return {
        "spark.jars.packages": ",".join(delta_packages() + list(S3A_PACKAGES)),
        "spark.jars.excludes": ",".join(S3A_EXCLUDES),
        "spark.jars.ivySettings": str(ivy_settings_path()),
        "spark.jars.ivy": str(cache_dir() / "ivy"),
    }


def scratch_dir() -> Path:
    """Where Spark's own catalog directory goes (``spark.sql.warehouse.dir``): under the cache, not the cwd."""
    return cache_dir() / "spark-scratch"


def under_spark_submit() -> bool:
    """True inside a Python process launched by spark-submit / the pyspark shell (the JVM is already up)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _local_cores(master: str) -> int:
    inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
    if inside.isdigit():
        return max(1, int(inside))
    return os.cpu_count() or 2


def _local_defaults(master: str) -> dict[str, str]:
    """Settings of a session on a local master (they win over ``_COMMON_DEFAULTS``; the caller's ``conf`` over both).

    Adaptive query execution is off: with its 2 x cores shuffle partitions a local session has nothing for it to
    coalesce, and it runs every shuffle and broadcast of a query as a job of its own, Delta's state reconstruction
    of each table too (3 jobs instead of 1 per table in a fresh JVM): 139 -> 90 Spark jobs in a run of 976 dirs.
    Joins are then chosen from the tables' sizes at planning, which Delta reports from its log.
    """
    cores = _local_cores(master)
    return {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(2 * cores),
        "spark.default.parallelism": str(2 * cores),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.snapshotPartitions": str(max(2, cores)),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Dderby.system.home={scratch_dir()}",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    }


_COMMON_DEFAULTS: dict[str, str] = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # A scan's size estimate is its compressed file size times this. Delta reports the Parquet bytes, about a tenth
    # of the rows in memory: at 1x, a 633k-partition controller_partitions (6.3 MB of files, ~100 MB as rows) was
    # broadcast and ran the driver's 1 GiB heap out (BytesToBytesMap) in detect.
    "spark.sql.sources.fileCompressionFactor": "10",
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
    log_file: str | Path | None = None,
) -> SparkSession:
    """Return a Spark session with Delta Lake enabled.

    Args:
        app_name: Spark application name.
        master: Spark master; ``None`` means the cluster's (under spark-submit) or ``local[*]``. Any other master
            (``spark://``, ``yarn``, ``k8s://``) is started in client mode with the Delta jars.
        conf: extra settings; they win over our defaults (``spark.jars`` and ``spark.jars.packages`` are added to
            ours, not replacing them).
        warehouse: ``spark.sql.warehouse.dir`` (catalog tables; path-based tables do not need it).
        log_file: when this call starts the JVM, its stdout and stderr (log4j, Ivy, JVM warnings) are appended to
            this file instead of the terminal. Ignored under spark-submit (the submitter owns the output).

    An already active session is returned as is, except that runtime-modifiable entries of ``conf`` are set
    on it. Static settings (jars, extensions) cannot change once a JVM runs; they are silently kept.

    Raises:
        JarsUnavailable: a session could not start because the Delta jars could not be resolved.
    """
    from pyspark.sql import SparkSession

    extra = dict(conf or {})
    extra["spark.sql.warehouse.dir"] = warehouse or extra.get("spark.sql.warehouse.dir") or str(scratch_dir())

    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in extra.items():
            if active.conf.isModifiable(key):
                active.conf.set(key, value)
        return active

    settings: dict[str, str] = dict(_COMMON_DEFAULTS)
    starts_jvm = not (under_spark_submit() and master is None)
    if not starts_jvm:
        from pyspark import SparkConf

        existing = SparkConf()  # loaded from the running JVM: what spark-submit was given wins
        settings.update(_DELTA_SQL)
        settings["spark.sql.warehouse.dir"] = extra.pop("spark.sql.warehouse.dir")
        settings = {key: value for key, value in settings.items() if not existing.contains(key)}
    else:
        master = master or "local[*]"
        settings.update(_DELTA_SQL)
        settings.update(delta_jar_settings())
        if master.startswith("local"):
            settings.update(_local_defaults(master))
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        settings["spark.master"] = master
    for key in ("spark.jars", "spark.jars.packages"):
        if key in settings and key in extra:
            extra[key] = ",".join([settings[key], extra[key]])
    settings.update(extra)
    if starts_jvm and (options := with_archive(settings.get("spark.driver.extraJavaOptions", ""), master)):
        settings["spark.driver.extraJavaOptions"] = options  # Spark's classes mapped from a file (class_archive)
    if starts_jvm and "spark.pyspark.python" in settings:  # pyspark takes the executors' Python from this variable
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    resolving = "spark.jars.packages" in settings
    if starts_jvm and log_file is not None:
        _launch_jvm(app_name, settings, Path(log_file))
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    from pyspark.errors import PySparkRuntimeError

    try:
        session = builder.getOrCreate()
    except PySparkRuntimeError as exc:  # the JVM died before the gateway came up: jar resolution, usually
        if exc.getCondition() == "JAVA_GATEWAY_EXITED":
            where = f"see {log_file}" if log_file is not None else "see the Ivy output above"
            raise JarsUnavailable(
                f"Spark could not start; Delta jars {delta_packages()} not resolvable from {maven_repo()} "
                f"(cache {cache_dir()}); {where}"
            ) from exc
        raise
    if starts_jvm and resolving:
        _record_resolved_jars(session.sparkContext.getConf().get("spark.jars", ""))
    return session


def _launch_jvm(app_name: str, settings: Mapping[str, str], log_file: Path) -> None:
    """Start the driver JVM ourselves with its stdout and stderr appended to ``log_file``.

    pyspark's ``launch_gateway`` takes ``popen_kwargs`` for exactly this; the session built next finds the gateway
    and does not start another JVM. Spark's Python workers are forked by that JVM and inherit the same file.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a JVM already runs in this process: the session reuses it
        return
    conf = SparkConf(loadDefaults=False).setAll([*settings.items(), ("spark.app.name", app_name)])
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as out:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": subprocess.STDOUT})
    SparkContext._ensure_initialized(gateway=gateway)


def resolve_jars(*, verbose: bool = True) -> list[Path]:
    """Make sure the Delta jars are in the local cache: start a throw-away local session, then stop it.

    Returns the jar files in :func:`jars_dir`. A no-op (no JVM start) when a previous resolution was recorded
    (:func:`cached_jars`); the first session after it records what Ivy retrieved.

    Raises:
        JarsUnavailable: the repository is unreachable or does not have the artifact.
    """
    say = print if verbose else (lambda *_args, **_kw: None)
    jars = cached_jars()
    if jars is not None:
        say(f"Delta jars already cached in {jars_dir()}")
        return jars
    say(f"resolving {', '.join(delta_packages())} from {maven_repo()} into {cache_dir() / 'ivy'}")
    spark = build_spark(f"{DEFAULT_APP_NAME}-resolve-jars", master="local[1]")
    try:
        spark.range(1).count()
    finally:
        spark.stop()
    jars = cached_jars()
    if jars is None:
        raise JarsUnavailable(f"Spark started but {_expected_jar_names()} are not in {jars_dir()}")
    say(f"Delta jars cached in {jars_dir()} ({jars_manifest_path().name})")
    return jars
