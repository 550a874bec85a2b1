"""Delta log stores that never overwrite a commit, so several Spark drivers can commit to one table at once.

Delta's optimistic concurrency needs one thing from storage: writing ``_delta_log/<version>.json`` fails when the
file exists. delta-spark 4.4.0's defaults do not give it across drivers:

* S3 (``S3SingleDriverLogStore``): an in-JVM lock, a HEAD/LIST, then an unconditional PUT. Two drivers (or a driver
  and delta-rs) can both write version N; the later PUT replaces the earlier commit, which is lost.
* Local disk and NFS (``HDFSLogStore`` over Hadoop's local file system): ``FileContext.rename(tmp, N.json, NONE)``,
  which Hadoop 3.5.0 implements as "stat the destination, then ``rename(2)``" (``AbstractFileSystem.renameInternal``,
  ``FileSystem.rename(src, dst, Rename...)``): a commit landing between the two is silently replaced.

Delta's own multi-driver S3 store (``io.delta:delta-storage-s3-dynamodb``) is not served by the Maven repository
this project resolves from, so the two stores below use what the storage itself guarantees, as delta-rs does:

* :data:`S3_LOG_STORE`: the commit is one PUT with ``If-None-Match: *`` (Hadoop 3.5.0's ``createFile()`` option
  ``fs.option.create.conditional.overwrite``); the store answers 412 when the version exists.
* :data:`LOCAL_LOG_STORE`: the commit is written to a temporary file, fsynced, then ``link(2)``-ed to its name;
  ``link`` fails with ``EEXIST`` when the version exists (atomic on local file systems and on NFS servers).

Either way a lost race raises ``java.nio.file.FileAlreadyExistsException``, the LogStore contract: Delta checks the
winning commit for conflicts and retries at the next version. A conflict whose existing file holds exactly our bytes
is our own commit (a PUT or LINK retried after a lost reply; each commit carries a unique ``txnId``) and counts as
written. Anything else (``overwrite=true`` writes such as ``_last_checkpoint``, reads, listing) is Delta's own code.

The classes are compiled once per cache from the sources below (``javac`` of the JDK Spark runs on) into
``<cache>/logstore/`` and put on every session :func:`~pipelines.tables.spark_session.build_spark` starts
(:func:`log_store_settings`). :func:`check_log_store` refuses an S3 warehouse to a session whose S3 log store is
Delta's single-driver default that nobody chose (e.g. under spark-submit without ``--jars``).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pipelines.errors import ConfigError
from pipelines.tables.jar_cache import cache_dir, cached_jars

__all__ = [
    "LOCAL_LOG_STORE",
    "LOG_STORE_KEYS",
    "S3_LOG_STORE",
    "check_log_store",
    "log_store_jar",
    "log_store_settings",
]

log = logging.getLogger(__name__)

S3_LOG_STORE = "logdirgc.delta.S3ConditionalPutLogStore"
LOCAL_LOG_STORE = "logdirgc.delta.LocalLinkLogStore"
#: Spark settings naming the log store of each scheme our warehouses use (Delta reads them from the SparkConf).
LOG_STORE_KEYS: Mapping[str, str] = {
    "s3": "spark.delta.logStore.s3.impl",
    "s3a": "spark.delta.logStore.s3a.impl",
    "file": "spark.delta.logStore.file.impl",
}
#: Log stores that never overwrite a commit of another driver, per scheme.
MULTI_DRIVER: Mapping[str, frozenset[str]] = {
    "s3": frozenset({S3_LOG_STORE, "io.delta.storage.S3DynamoDBLogStore"}),
    "s3a": frozenset({S3_LOG_STORE, "io.delta.storage.S3DynamoDBLogStore"}),
    "file": frozenset({LOCAL_LOG_STORE}),
}

_COMMITS_JAVA = """\
package logdirgc.delta;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/** What both log stores share: a commit's bytes, and whether a conflicting file is our own commit. */
final class Commits {
    private Commits() {}

    static byte[] bytesOf(Iterator<String> actions) {
        StringBuilder text = new StringBuilder();
        while (actions.hasNext()) {
            text.append(actions.next()).append('\\n');
        }
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** True when the file at path holds exactly ours (a request retried after its reply was lost). */
    static boolean holds(FileSystem fs, Path path, byte[] ours) throws IOException {
        try (InputStream in = fs.open(path)) {
            byte[] theirs = in.readNBytes(ours.length + 1);
            return Arrays.equals(theirs, ours);
        }
    }

    /** True for the store's answer to a create over an existing key: s3a turns HTTP 412 (and S3 Express's
     *  PreconditionFailed) into RemoteFileChangedException; a file system may say FileAlreadyExistsException. */
    static boolean isExisting(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            String name = e.getClass().getName();
            if (name.equals("org.apache.hadoop.fs.s3a.RemoteFileChangedException")
                    || name.equals("org.apache.hadoop.fs.FileAlreadyExistsException")
                    || name.equals("java.nio.file.FileAlreadyExistsException")) {
                return true;
            }
        }
        return false;
    }
}
"""

_S3_JAVA = """\
package logdirgc.delta;

import java.io.IOException;
import java.util.Iterator;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import io.delta.storage.S3SingleDriverLogStore;

/** Delta's S3 log store, except that a new commit is one PUT with If-None-Match: * (no check-then-write). */
public class S3ConditionalPutLogStore extends S3SingleDriverLogStore {
    static final String CONDITIONAL = "fs.option.create.conditional.overwrite";

    public S3ConditionalPutLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        if (overwrite) {
            super.write(path, actions, true, hadoopConf);
            return;
        }
        FileSystem fs = path.getFileSystem(hadoopConf);
        Path target = fs.makeQualified(path);
        if (!fs.hasPathCapability(target, CONDITIONAL)) {
            throw new IOException("cannot commit " + target + " safely: the file system offers no conditional "
                + "create (If-None-Match); fs.s3a.create.conditional.enabled must stay true on a store that has it");
        }
        byte[] data = Commits.bytesOf(actions);
        try {
            FSDataOutputStream out = (FSDataOutputStream) fs.createFile(target).overwrite(false).recursive()
                .must(CONDITIONAL, true).build();
            try {
                out.write(data);
            } finally {
                out.close();
            }
        } catch (IOException e) {
            if (!Commits.isExisting(e)) {
                throw e;
            }
            if (Commits.holds(fs, target, data)) {
                return;
            }
            throw new java.nio.file.FileAlreadyExistsException(target.toString());
        }
    }
}
"""

_LOCAL_JAVA = """\
package logdirgc.delta;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import io.delta.storage.HDFSLogStore;

/** Delta's log store for file: paths, except that a new commit is link(2)-ed to its name (fails if it exists). */
public class LocalLinkLogStore extends HDFSLogStore {
    public LocalLinkLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        if (overwrite) {
            super.write(path, actions, true, hadoopConf);
            return;
        }
        FileSystem fs = path.getFileSystem(hadoopConf);
        Path qualified = fs.makeQualified(path);
        java.nio.file.Path target = Paths.get(qualified.toUri());
        java.nio.file.Path temp = target.resolveSibling("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
        byte[] data = Commits.bytesOf(actions);
        Files.createDirectories(target.getParent());
        try {
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.wrap(data);
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
                channel.force(true);
            }
            try {
                Files.createLink(target, temp);
            } catch (java.nio.file.FileAlreadyExistsException e) {
                if (Commits.holds(fs, qualified, data)) {
                    return;
                }
                throw new java.nio.file.FileAlreadyExistsException(target.toString());
            }
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;
    }
}
"""

_SOURCES: Mapping[str, str] = {
    "Commits.java": _COMMITS_JAVA,
    "S3ConditionalPutLogStore.java": _S3_JAVA,
    "LocalLinkLogStore.java": _LOCAL_JAVA,
}


def _digest() -> str:
    text = "\0".join([importlib.metadata.version("delta-spark"), *(_SOURCES[name] for name in sorted(_SOURCES))])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def log_store_jar_path() -> Path:
    """Where the compiled log stores go: one jar per source text and Delta version."""
    return cache_dir() / "logstore" / f"klgc-logstore-{_digest()}.jar"


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _compile_classpath() -> list[Path] | None:
    """pyspark's Hadoop jars and the cached Delta storage jar; None before the Delta jars are resolved."""
    jars = cached_jars()
    if jars is None:
        return None
    storage = [jar for jar in jars if jar.name.startswith("io.delta_delta-storage-")]
    import pyspark

    hadoop = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    return [*storage, *hadoop] if storage and hadoop else None


def log_store_jar() -> Path | None:
    """The jar of the log stores, compiled on first use; None when it cannot be built here (no ``javac``, Delta
    jars not resolved yet), in which case sessions keep Delta's default log stores (see :func:`check_log_store`).
    """
    target = log_store_jar_path()
    if target.is_file():
        return target
    javac, classpath = _javac(), _compile_classpath()
    if javac is None or classpath is None:  # the session that resolves the Delta jars is the only one without them
        log.log(logging.WARNING if javac is None else logging.DEBUG,
                "cannot build the multi-driver Delta log stores (%s): Spark keeps Delta's single-driver ones",
                "no javac on PATH or in JAVA_HOME" if javac is None else "Delta jars not resolved yet")
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as work:
            sources = Path(work) / "src"
            classes = Path(work) / "classes"
            sources.mkdir()
            for name, text in _SOURCES.items():
                (sources / name).write_text(text)
            result = subprocess.run(
                [javac, "-nowarn", "--release", "17", "-cp", os.pathsep.join(map(str, classpath)), "-d", str(classes),
                 *sorted(str(p) for p in sources.iterdir())], capture_output=True, text=True, check=False)
            if result.returncode != 0:
                log.warning("javac could not build the Delta log stores: %s", result.stderr.strip()[-500:])
                return None
            staged = Path(work) / target.name
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
                for path in sorted(classes.rglob("*.class")):
                    jar.write(path, path.relative_to(classes).as_posix())
            staged.replace(target)
    return target


def log_store_settings(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """Settings that make a session we start commit with the multi-driver log stores: the jar and each scheme's
    ``spark.delta.logStore.<scheme>.impl``. Empty when the jar cannot be built, or when ``conf`` already names
    ``spark.delta.logStore.class`` (Delta refuses it together with per-scheme settings). A scheme ``conf`` names
    keeps the caller's store.
    """
    conf = conf or {}
    if "spark.delta.logStore.class" in conf:
        return {}
    jar = log_store_jar()
    if jar is None:
        return {}
    stores = {"s3": S3_LOG_STORE, "s3a": S3_LOG_STORE, "file": LOCAL_LOG_STORE}
    settings = {key: stores[scheme] for scheme, key in LOG_STORE_KEYS.items() if key not in conf}
    return {"spark.jars": str(jar), **settings} if settings else {}


def check_log_store(spark_conf: Mapping[str, str], scheme: str, warehouse: str) -> None:
    """Refuse delta-spark commits to ``warehouse`` (an ``s3``/``s3a`` one) through Delta's single-driver S3 log
    store when nobody chose it; warn when the session's store for ``scheme`` is not a multi-driver one otherwise.

    ``spark_conf``: the session's SparkConf entries (Delta reads its log store from there).

    Raises:
        ConfigError: an S3 warehouse and no ``spark.delta.logStore.{s3,s3a}.impl``/``spark.delta.logStore.class``.
    """
    scheme = scheme or "file"
    key = LOG_STORE_KEYS.get(scheme)
    if key is None:
        return
    chosen = spark_conf.get(key) or spark_conf.get("spark.delta.logStore.class")
    if chosen in MULTI_DRIVER[scheme]:
        return
    if chosen is None and scheme in ("s3", "s3a"):
        raise ConfigError(
            f"refusing to commit to {warehouse} with delta-spark's single-driver S3 log store (concurrent pipelines "
            f"would overwrite each other's commits): start Spark with {log_store_jar_path()} in --jars and "
            f"{key}={S3_LOG_STORE} (or io.delta.storage.S3DynamoDBLogStore)")
    log.warning("Spark commits to %s through %s, which can lose a commit when several drivers write one table at "
                "once; run one pipeline at a time on this warehouse", warehouse,
                chosen or "Delta's default log store")
