"""Apache Kafka's own jars from Maven Central, resolved with ``mvn`` into ``.cache/kafka/<version>/`` (cached), and
the ZooKeeper server's into ``.cache/zookeeper/<version>/``.

A generated minimal pom lists the server and tool artifacts; ``mvn dependency:copy-dependencies`` copies them with
their runtime dependencies into ``.cache/kafka/<version>/lib``. A ``.complete`` marker makes the second call
instant. Nothing is downloaded from anywhere but the Maven repositories ``mvn`` is configured with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "kafka"

#: The releases the integration tests run: a recent 4.x (strays renamed to ``-stray`` during log loading) and the
#: last 3.x line (same stray handling since 3.7.1, ZooKeeper still present, ``log.initial.task.delay.ms`` >= 3.8).
KAFKA_4 = "4.3.1"
KAFKA_3 = "3.9.2"
SCALA = "2.13"

#: groupId org.apache.kafka; artifacts resolved for every version (the broker, and the tools module for
#: ``ReassignPartitionsCommand``; ``kafka_2.13`` pulls kafka-server, kafka-metadata, kafka-storage, kafka-raft...).
ARTIFACTS = (f"kafka_{SCALA}", "kafka-tools")

#: Extra runtime artifacts so the JVMs log through log4j (Kafka marks its logging backend optional/test).
LOGGING = {
    "4": (("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"), ("org.apache.logging.log4j", "log4j-core",
                                                                         "2.24.3")),
    "3": (("org.slf4j", "slf4j-reload4j", "1.7.36"), ("ch.qos.reload4j", "reload4j", "1.2.25")),
}


class JarsUnavailable(RuntimeError):
    """Maven or Java is missing, or the artifacts could not be resolved."""


#: The standalone ZooKeeper server the ZooKeeper-mode tests run (Kafka 3.9's own client is 3.8.x; a 3.9 server
#: serves it).
ZOOKEEPER = "3.9.4"
#: What the server's pom leaves to the user ("provided"): metrics, snappy (snapshots) and an slf4j 2 backend.
ZOOKEEPER_EXTRAS = (("io.dropwizard.metrics", "metrics-core", "4.2.30"),
                    ("org.xerial.snappy", "snappy-java", "1.1.10.7"), ("org.slf4j", "slf4j-simple", "2.0.13"))


def _pom(version: str) -> str:
    deps = [("org.apache.kafka", a, version) for a in ARTIFACTS] + list(LOGGING[version.split(".")[0]])
    return _pom_of(f"kafka-jars-{version}", deps)


def _pom_of(artifact: str, deps: list[tuple[str, str, str]]) -> str:
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.logdirgc</groupId>
  <artifactId>{artifact}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


@dataclass(frozen=True)
class KafkaJars:
    version: str
    lib: Path

    @property
    def classpath(self) -> str:
        return os.pathsep.join(str(p) for p in sorted(self.lib.glob("*.jar")))

    @cached_property
    def _classes(self) -> frozenset[str]:
        names: set[str] = set()
        for jar in self.lib.glob("kafka*.jar"):
            with zipfile.ZipFile(jar) as zf:
                names.update(n[:-6].replace("/", ".") for n in zf.namelist() if n.endswith(".class"))
        return frozenset(names)

    def main_class(self, *candidates: str) -> str:
        """The first of ``candidates`` present in Kafka's jars (tools moved between modules across releases)."""
        for c in candidates:
            if c in self._classes:
                return c
        raise JarsUnavailable(f"none of {candidates} in Kafka {self.version}")

    @property
    def storage_tool(self) -> str:
        return self.main_class("org.apache.kafka.tools.StorageTool", "kafka.tools.StorageTool")

    @property
    def dump_log(self) -> str:
        return self.main_class("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")

    @property
    def reassign(self) -> str:
        return self.main_class("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                               "kafka.admin.ReassignPartitionsCommand")


def resolve(version: str, *, cache: Path = CACHE, quiet: bool = True) -> KafkaJars:
    """Resolve (once) and return Kafka ``version``'s jars; raises ``JarsUnavailable`` with the reason."""
    return KafkaJars(version, _resolve(cache / version, _pom(version), "kafka_*.jar", quiet=quiet))


def resolve_zookeeper(version: str = ZOOKEEPER, *, quiet: bool = True) -> KafkaJars:
    """``org.apache.zookeeper:zookeeper``, its runtime dependencies and the extras it leaves to its user into
    ``.cache/zookeeper/<version>/lib``."""
    deps = [("org.apache.zookeeper", "zookeeper", version), *ZOOKEEPER_EXTRAS]
    pom = _pom_of(f"zookeeper-jars-{version}", deps)
    return KafkaJars(version, _resolve(CACHE.parent / "zookeeper" / version, pom, "zookeeper-*.jar", quiet=quiet))


def _resolve(root: Path, pom: str, expect: str, *, quiet: bool) -> Path:
    lib = root / "lib"
    marker = root / ".complete"
    if marker.exists() and any(lib.glob(expect)):
        return lib
    if shutil.which("java") is None:
        raise JarsUnavailable("java not on PATH")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailable("mvn not on PATH")
    root.mkdir(parents=True, exist_ok=True)
    (root / "pom.xml").write_text(pom)
    if lib.exists():
        shutil.rmtree(lib)
    cmd = [mvn, "-B", *(["-q"] if quiet else []), "-f", str(root / "pom.xml"), "dependency:copy-dependencies",
           f"-DoutputDirectory={lib}", "-DincludeScope=runtime"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise JarsUnavailable(f"{' '.join(cmd)} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    marker.write_text("\n".join(sorted(p.name for p in lib.glob("*.jar"))) + "\n")
    return lib


def resolve_or_skip(version: str) -> KafkaJars:
    """For tests: the resolved jars, or ``pytest.skip`` with the reason (no java, no mvn, nothing resolved)."""
    import pytest

    try:
        return resolve(version)
    except JarsUnavailable as exc:
        pytest.skip(f"Kafka {version} jars unavailable: {exc}")


def zookeeper_or_skip(version: str = ZOOKEEPER) -> KafkaJars:
    """Like :func:`resolve_or_skip` for the ZooKeeper server."""
    import pytest

    try:
        return resolve_zookeeper(version)
    except JarsUnavailable as exc:
        pytest.skip(f"ZooKeeper {version} jars unavailable: {exc}")


if __name__ == "__main__":
    import sys

    for v in sys.argv[1:] or [KAFKA_4, KAFKA_3, "zookeeper"]:
        jars = resolve_zookeeper(quiet=False) if v == "zookeeper" else resolve(v, quiet=False)
        print(f"{v}: {len(list(jars.lib.glob('*.jar')))} jars in {jars.lib}")
