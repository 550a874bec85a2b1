"""The Delta jars' local cache: where they are resolved from and into, what a resolution retrieved, and the lock
that lets one process at a time resolve them.

Spark's Ivy resolves ``spark.jars.packages`` from one Maven repository (``KLGC_MAVEN_REPO``, default Maven
Central) into a cache directory of ours (Spark's default resolver chain also consults ``~/.m2``, which may hold
poms without jars, and an unreachable package host). The jars that resolution retrieved are recorded in a manifest
beside them; every later session starts on those files (``spark.jars``) without a resolver run.

Two processes resolving into one Ivy cache at once overwrite each other's files ("download failed"), so a
resolution runs under :func:`jar_resolution`: an exclusive ``flock`` on ``<cache>/ivy/resolve.lock``, held while the
JVM that resolves starts. A process that finds the lock taken waits, then reads the manifest the other one wrote
and starts without resolving.

Environment:
    KLGC_CACHE_DIR: cache root (Ivy settings, Ivy cache, resolved jars). Default: ``<repo>/.cache`` when this
        file lives in a source checkout, else ``~/.cache/kafka-logdir-gc``.
    KLGC_MAVEN_REPO: Maven repository root URL. Default: Maven Central.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from xml.sax.saxutils import quoteattr

from pipelines.errors import SparkStartFailed

#: Hadoop's s3a connector for delta-spark, resolved with the Delta jars: hadoop-aws of the Hadoop version pyspark
#: 4.2 ships (hadoop-client 3.5.0) and the AWS SDK v2 modules it was built against (2.35.4), instead of the SDK's
#: 690 MB ``bundle`` jar (excluded).
HADOOP_VERSION = "3.5.0"
AWS_SDK_VERSION = "2.35.4"
S3A_PACKAGES = (
    f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}",
    *(f"software.amazon.awssdk:{name}:{AWS_SDK_VERSION}" for name in ("s3", "sts", "s3-transfer-manager")),
)
S3A_EXCLUDES = ("software.amazon.awssdk:bundle",)

__all__ = [
    "MAVEN_CENTRAL",
    "S3A_EXCLUDES",
    "S3A_PACKAGES",
    "JarsUnavailable",
    "cache_dir",
    "cached_jars",
    "delta_jar_settings",
    "delta_packages",
    "ivy_settings_path",
    "jar_resolution",
    "jars_dir",
    "jars_manifest_path",
    "jars_ready",
    "maven_repo",
    "record_resolved_jars",
    "resolve_lock_path",
]

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
_SCALA_VERSION = "2.13"
_REPO_ROOT = Path(__file__).resolve().parents[2]


class JarsUnavailable(SparkStartFailed):
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
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
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


def record_resolved_jars(spark_jars: str) -> None:
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


def resolve_lock_path() -> Path:
    """The file whose ``flock`` one resolving process holds (in the Ivy directory it resolves into)."""
    return cache_dir() / "ivy" / "resolve.lock"


@contextmanager
def jar_resolution(*, caller_packages: bool = False) -> Iterator[dict[str, str]]:
    """The jar settings of a session about to start, under the resolve lock when they make Spark resolve.

    With the jars recorded, the cached files' settings come at once, no lock taken. Otherwise (or when the caller
    has Ivy resolve packages of its own: ``caller_packages``) the lock is taken, waiting for a process that holds
    it, and the cache is looked at again: a resolution that finished meanwhile is used as is. Start the JVM, and
    record what it resolved, inside the block; the lock is released when the block ends (the JVM does not inherit
    it).
    """
    settings = delta_jar_settings()
    if "spark.jars.packages" not in settings and not caller_packages:
        yield settings
        return
    path = resolve_lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)  # flock needs no write access
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another process resolving the Delta jars into {path.parent} ({path.name})",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield delta_jar_settings()
    finally:
        os.close(fd)  # releases the lock
