"""A class-data sharing archive for the driver JVM: Spark's classes mapped from a file instead of loaded one by one.

A driver JVM loads thousands of classes (Spark, Scala, Hadoop, Delta) before the first row is written; on a 2-core
machine that is about a third of a session that writes one Delta row. Java 17's dynamic CDS (JEP 350) records the
classes one JVM loaded into an archive as it exits (``-XX:ArchiveClassesAtExit``); later JVMs given it
(``-XX:SharedArchiveFile``) map them instead: a local session that writes one Delta row starts and finishes ~4 s
sooner.

``build_archive()`` records one, from a throw-away local session that runs the pipeline, into the cache (set-up does
this after resolving the jars). ``build_spark`` then adds the archive to the driver JVM of a local master it starts
(for another master the cluster's own driver options are left as they are). The archive is keyed by the ``java``
binary, pyspark's version and the Delta jars; the JVM itself checks it against its class path and ignores it (the
run is as before, only slower) when they differ.

Environment:
    KLGC_CLASS_ARCHIVE: ``off`` starts the driver without the archive.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from pipelines.tables.jar_cache import cache_dir, cached_jars

__all__ = ["archive_path", "build_archive", "driver_java_options", "with_archive"]

#: CDS's own warnings off: a JVM that cannot map the archive (another class path) starts as it would without it.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found is not None and found.is_file() else None


def archive_path() -> Path | None:
    """Where the archive of this ``java``, pyspark and Delta jars is (or would be); None without a ``java``."""
    java = _java()
    if java is None:
        return None
    jars = [f"{p.name}:{p.stat().st_size}" for p in cached_jars() or []]
    stat = java.stat()
    key = "\n".join([str(java), str(stat.st_size), str(stat.st_mtime_ns), importlib.metadata.version("pyspark"),
                     *jars])
    return cache_dir() / "class-archive" / f"driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def driver_java_options() -> str:
    """The driver JVM options that map the archive, or "" when there is none (or ``KLGC_CLASS_ARCHIVE=off``, or its
    key cannot be worked out: pyspark without package metadata, an unreadable jar)."""
    if os.environ.get("KLGC_CLASS_ARCHIVE", "").lower() == "off":
        return ""
    try:
        path = archive_path()
    except (OSError, importlib.metadata.PackageNotFoundError):
        return ""
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {_QUIET}"


def with_archive(options: str, master: str) -> str:
    """The driver JVM ``options`` of a session on ``master``, with the archive's appended on a local master."""
    archive = driver_java_options() if master.startswith("local") else ""
    return f"{options} {archive}".strip() if archive else options


def build_archive(*, verbose: bool = True, timeout_s: float = 900) -> Path | None:
    """Record the archive (a child process runs a throw-away session); the path, or None when the JVM made none.

    A no-op when it exists. The JVM writes it under a temporary name; it is renamed only after that JVM has exited,
    so a session starting meanwhile never maps half an archive. A training run that fails or outlasts
    ``timeout_s`` is killed with its JVM (no archive written after it) and its partial file removed; so are the
    partial files of earlier set-ups that were killed themselves.
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
    for leftover in target.parent.glob("driver-*.jsa.*.tmp"):
        if not _alive(leftover.suffixes[-2].lstrip(".")):
            leftover.unlink(missing_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="klgc-class-archive-") as work:
        env = {**os.environ, "KLGC_CLASS_ARCHIVE": "off"}
        training = [sys.executable, "-m", "pipelines.orchestrate.class_archive_training", str(partial), work]
        child = subprocess.Popen(training, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)  # its own process group: the JVM goes with it
        try:
            output, _ = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            output = f"no archive within {timeout_s:.0f} s"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # nothing of it is left to write the partial file later
        child.wait()
    if child.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = output.strip().splitlines()[-1:] or ["no archive written"]
        say(f"class archive not built ({tail[0]}); Spark starts without it")
        return None
    partial.replace(target)
    say(f"class archive built: {target} ({target.stat().st_size // 2**20} MiB)")
    return target


def _alive(pid: str) -> bool:
    """True when ``pid`` is a running process (a set-up writing its archive now)."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
