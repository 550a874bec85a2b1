"""The one place that builds a Spark session with Delta Lake.

Library code never calls this: it takes ``spark`` as a parameter. Jobs, notebooks, the set-up script and the
test fixture call :func:`build_spark`.

Two situations:

* **Under spark-submit / a pyspark shell** (a session is active, or the JVM gateway was launched for us): the
  cluster's session is reused; jars must come from the submitter (``--packages`` or the cluster image). Only
  settings the caller passes explicitly, plus the Delta extension and catalog when none is set, are applied.
* **Standalone Python** (``logdir-gc run``, tests, notebooks, the set-up script): a session is started on the
  given master (``local[*]`` by default, or a cluster's ``spark://``/``yarn``/``k8s://`` URL in client mode).
  The Delta jars come from our own cache (``pipelines.tables.jar_cache``): resolved once by Spark's Ivy, one
  process at a time, then started from as files (``spark.jars``). The driver ships ``spark.jars`` to a cluster's
  executors, so the same works for non-local masters.

The JVM we start can write its output (Spark's log4j, Ivy, JVM warnings) to a log file instead of the terminal
(``log_file``), and Spark's ``spark.sql.warehouse.dir`` points into our cache, never at the caller's directory.
A JVM that exits before it is up (jars not resolvable, a bad option) is one :class:`SparkStartFailed` line naming
the cause and the log file.

Environment: ``KLGC_CACHE_DIR`` and ``KLGC_MAVEN_REPO`` (see ``pipelines.tables.jar_cache``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.errors import SparkStartFailed
from pipelines.tables.class_archive import with_archive
from pipelines.tables.commit_log_store import log_store_settings
from pipelines.tables.jar_cache import (
    MAVEN_CENTRAL,
    S3A_PACKAGES,
    JarsUnavailable,
    cache_dir,
    cached_jars,
    delta_jar_settings,
    delta_packages,
    ivy_settings_path,
    jar_resolution,
    jars_dir,
    jars_manifest_path,
    jars_ready,
    maven_repo,
    record_resolved_jars,
)
from pipelines.tables.start_failure import cause_in_log, log_size

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [  # the jar cache's names stay importable from here (set-up script, tests, jobs)
    "DEFAULT_APP_NAME",
    "MAVEN_CENTRAL",
    "S3A_PACKAGES",
    "JarsUnavailable",
    "SparkStartFailed",
    "build_spark",
    "cache_dir",
    "cached_jars",
    "delta_jar_settings",
    "delta_packages",
    "ivy_settings_path",
    "jars_dir",
    "jars_manifest_path",
    "jars_ready",
    "maven_repo",
    "resolve_jars",
]

DEFAULT_APP_NAME = "kafka-logdir-gc"


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

    A session that has to resolve the Delta jars (none recorded yet, or ``spark.jars.packages`` in ``conf``) starts
    under the cache's resolve lock (``jar_cache.jar_resolution``): another process resolving into the same cache
    is waited for, and its jars are used.

    Raises:
        SparkStartFailed: the JVM exited before it was up; one line naming the cause and ``log_file``.
        JarsUnavailable: the same, while it resolved the Delta jars (repository unreachable, artifact missing).
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

    if under_spark_submit() and master is None:  # the submitter's JVM runs: what it was given wins
        from pyspark import SparkConf

        existing = SparkConf()  # loaded from the running JVM
        ours = {**_COMMON_DEFAULTS, **_DELTA_SQL, "spark.sql.warehouse.dir": extra.pop("spark.sql.warehouse.dir")}
        settings = {key: value for key, value in ours.items() if not existing.contains(key)}
        return _start(app_name, {**settings, **extra}, None)
    master = master or "local[*]"
    with jar_resolution(caller_packages="spark.jars.packages" in extra) as jar_settings:
        settings = _jvm_settings(master, jar_settings, extra)
        session = _start(app_name, settings, None if log_file is None else Path(log_file))
        if "spark.jars.packages" in settings:  # recorded before the lock goes: a waiting process starts on it
            record_resolved_jars(session.sparkContext.getConf().get("spark.jars", ""))
    return session


def _jvm_settings(master: str, jar_settings: Mapping[str, str], conf: Mapping[str, str]) -> dict[str, str]:
    """The settings of a driver JVM we start on ``master``: ours, then ``conf`` (jars and packages added to ours).

    Ours include the multi-driver Delta log stores (``commit_log_store``) once the Delta jars are cached.

    Sets ``PYSPARK_PYTHON`` (and ``PYSPARK_DRIVER_PYTHON`` on a local master) for the Python workers.
    """
    settings = {**_COMMON_DEFAULTS, **_DELTA_SQL, **jar_settings}
    for key, value in log_store_settings(conf).items():  # commits that never overwrite another driver's
        settings[key] = ",".join([settings[key], value]) if key == "spark.jars" and settings.get(key) else value
    if master.startswith("local"):
        settings.update(_local_defaults(master))
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings["spark.master"] = master
    extra = dict(conf)
    for key in ("spark.jars", "spark.jars.packages"):
        if key in settings and key in extra:
            extra[key] = ",".join([settings[key], extra[key]])
    settings.update(extra)
    if options := with_archive(settings.get("spark.driver.extraJavaOptions", ""), master):
        settings["spark.driver.extraJavaOptions"] = options  # Spark's classes mapped from a file (class_archive)
    if "spark.pyspark.python" in settings:  # pyspark takes the executors' Python from this variable
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    return settings


def _start(app_name: str, settings: Mapping[str, str], log_file: Path | None) -> SparkSession:
    """The session of ``settings``, its JVM's output appended to ``log_file`` when given (else the terminal's).

    Raises:
        SparkStartFailed: the JVM exited before its gateway came up (``JarsUnavailable`` while it resolved jars).
    """
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    start = log_size(log_file)
    try:
        if log_file is not None:
            _launch_jvm(app_name, settings, log_file)
        builder = SparkSession.builder.appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    except PySparkRuntimeError as exc:
        if exc.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        raise _start_failure(settings, log_file, start) from exc


def _start_failure(settings: Mapping[str, str], log_file: Path | None, start: int) -> SparkStartFailed:
    """One line: the cause the JVM's output names (from byte ``start`` of ``log_file``) and where to read more."""
    cause = cause_in_log(log_file, start) if log_file is not None else None
    where = f"see {log_file}" if log_file is not None else "see the JVM's output above"
    if "spark.jars.packages" not in settings:
        return SparkStartFailed(f"Spark could not start: {cause or 'the driver JVM exited before it was up'}: {where}")
    cause = cause or f"{', '.join(delta_packages())} not resolvable"
    return JarsUnavailable(
        f"Spark could not start: {cause} (resolving from {maven_repo()} into {cache_dir() / 'ivy'}): {where}")


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
        raise JarsUnavailable(f"Spark started but the Delta jars it resolved are not all in {jars_dir()}")
    say(f"Delta jars cached in {jars_dir()} ({jars_manifest_path().name})")
    return jars
