"""A class-data sharing archive for the driver JVM: Spark's classes mapped from a file instead of loaded one by one.

A driver JVM loads some 20,000 classes (Spark, Scala, Hadoop, Delta) before the first row is written; on a 2-core
machine that is a third of a small run. Java 17's dynamic CDS (JEP 350) records the classes one JVM loaded into an
archive as it exits (``-XX:ArchiveClassesAtExit``); later JVMs given it (``-XX:SharedArchiveFile``) map them
instead: a local session that writes one Delta row starts and finishes ~4 s sooner.

``build_archive()`` records one, from a throw-away session that runs the Delta operations the pipeline runs, into
the cache (set-up does this after resolving the jars). ``build_spark`` then adds the archive to the driver JVM it
starts. The archive is keyed by the ``java`` binary, pyspark's version and the Delta jars; the JVM itself checks it
against its class path and ignores it (the run is as before, only slower) when they differ.

Environment:
    KLGC_CLASS_ARCHIVE: ``off`` starts the driver without the archive.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["archive_path", "build_archive", "driver_java_options"]

#: CDS's own warnings off: a JVM that cannot map the archive (another class path) starts as it would without it.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found is not None and found.is_file() else None


def archive_path() -> Path | None:
    """Where the archive of this ``java``, pyspark and Delta jars is (or would be); None without a ``java``."""
    from pipelines.tables.spark_session import cache_dir, cached_jars

    java = _java()
    if java is None:
        return None
    jars = [f"{p.name}:{p.stat().st_size}" for p in cached_jars() or []]
    stat = java.stat()
    key = "\n".join([str(java), str(stat.st_size), str(stat.st_mtime_ns), importlib.metadata.version("pyspark"),
                     *jars])
    return cache_dir() / "class-archive" / f"driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def driver_java_options() -> str:
    """The driver JVM options that map the archive, or "" when there is none (or ``KLGC_CLASS_ARCHIVE=off``)."""
    if os.environ.get("KLGC_CLASS_ARCHIVE", "").lower() == "off":
        return ""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {_QUIET}"


def build_archive(*, verbose: bool = True) -> Path | None:
    """Record the archive (a child process runs a throw-away session); the path, or None when the JVM made none.

    A no-op when it exists. Written under a temporary name and renamed when the JVM has finished writing it, so a
    session starting meanwhile never maps half an archive; archives of another key are then removed.
    """
    say = print if verbose else (lambda *_args, **_kw: None)
    target = archive_path()
    if target is None:
        say("class archive: no java found")
        return None
    if target.is_file():
        say(f"class archive already in {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="klgc-class-archive-") as work:
        env = {**os.environ, "KLGC_CLASS_ARCHIVE": "off"}
        training = [sys.executable, "-m", "pipelines.orchestrate.class_archive_training", str(partial), work]
        done = subprocess.run(training, env=env, capture_output=True, text=True)
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no archive written"]
        say(f"class archive not built ({tail[0]}); Spark starts without it")
        return None
    partial.replace(target)
    for stale in target.parent.glob("driver-*.jsa"):  # archives of another java, pyspark or jars: never mapped
        if stale != target:
            stale.unlink(missing_ok=True)
    say(f"class archive built: {target} ({target.stat().st_size // 2**20} MiB)")
    return target
