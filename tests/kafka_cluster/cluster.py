"""A KRaft cluster on 127.0.0.1 from Apache Kafka's own jars: one controller JVM and N broker JVMs with JBOD; or,
with ``zookeeper=`` (Kafka 3.x only), a ZooKeeper-mode cluster of N brokers (the controller is one of them).

Each node is ``java -cp <jars> kafka.Kafka server.properties`` in its own process group, logging to
``<root>/logs/<node>.out``. ``start()`` formats storage with Kafka's storage tool and waits until every broker is
registered; ``stop_broker``/``start_broker`` do a clean (SIGTERM) stop and a restart of one broker; ``close()``
kills whatever is left, process group by process group. Nothing here asserts: tests do.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jars import KafkaJars

CONTROLLER_ID = 9
JVM_OPTS = ("-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")

LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
"""
LOG4J1 = """log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


class ClusterError(RuntimeError):
    """The cluster did not come up or a tool failed; the message carries the tail of the relevant log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"<{path} unreadable>"


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120.0, interval: float = 0.25) -> Any:
    """Poll ``check`` until it returns something truthy; ``ClusterError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:
            last_exc = exc
        time.sleep(interval)
    raise ClusterError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_exc!r})"
                                                                             if last_exc else ""))


def random_cluster_id() -> str:
    """A base64url Uuid not starting with ``-`` (as Kafka's own ``Uuid.randomUuid`` since 3.2; argparse would
    otherwise take it for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class Node:
    node_id: int
    role: str  # "controller" | "broker"
    port: int
    log_dirs: tuple[Path, ...]
    config: Path
    log: Path
    overrides: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class KafkaCluster:
    """One controller (node id 9) and brokers 1..N, each broker with ``dirs_per_broker`` log dirs."""

    def __init__(
        self,
        root: Path,
        jars: KafkaJars,
        *,
        brokers: int = 3,
        dirs_per_broker: int = 2,
        broker_config: Mapping[str, str] | None = None,
        per_broker: Mapping[int, Mapping[str, str]] | None = None,
        zookeeper: str | None = None,
    ) -> None:
        self.root = root
        self.jars = jars
        self.zookeeper = zookeeper  # ``host:port/chroot``: ZooKeeper mode, no controller JVM, nothing to format
        self.cluster_id = random_cluster_id()
        self.major = int(jars.version.split(".")[0])
        (root / "logs").mkdir(parents=True, exist_ok=True)
        (root / "conf").mkdir(parents=True, exist_ok=True)
        self._log_config = root / "conf" / ("log4j2.properties" if self.major >= 4 else "log4j.properties")
        self._log_config.write_text(LOG4J2 if self.major >= 4 else LOG4J1)
        self.controller = Node(CONTROLLER_ID, "controller", free_port(), (root / "controller",),
                               root / "conf" / "controller.properties", root / "logs" / "controller.out")
        self.brokers: dict[int, Node] = {}
        for b in range(1, brokers + 1):
            dirs = tuple(root / f"broker{b}" / f"d{i}" for i in range(dirs_per_broker))
            overrides = {**(broker_config or {}), **((per_broker or {}).get(b, {}))}
            self.brokers[b] = Node(b, "broker", free_port(), dirs, root / "conf" / f"broker{b}.properties",
                                   root / "logs" / f"broker{b}.out", dict(overrides))

    # ---------------------------------------------------------------- config
    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.brokers.values() if n.running) or \
            ",".join(f"127.0.0.1:{n.port}" for n in self.brokers.values())

    @property
    def metadata_dir(self) -> Path:
        """The controller's ``__cluster_metadata-0``."""
        return self.controller.log_dirs[0] / "__cluster_metadata-0"

    @property
    def nodes(self) -> list[Node]:
        """Every JVM of the cluster: the KRaft controller (not in ZooKeeper mode) and the brokers."""
        return [*([] if self.zookeeper else [self.controller]), *self.brokers.values()]

    def _common(self) -> dict[str, str]:
        if self.zookeeper:
            return {"zookeeper.connect": self.zookeeper, "zookeeper.session.timeout.ms": "6000",
                    "num.network.threads": "1", "num.io.threads": "2", "background.threads": "2"}
        return {
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{self.controller.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
        }

    def _properties(self, node: Node) -> dict[str, str]:
        props = self._common()
        props["broker.id" if self.zookeeper else "node.id"] = str(node.node_id)
        props["log.dirs"] = ",".join(str(d) for d in node.log_dirs)
        if node.role == "controller":
            props |= {"process.roles": "controller", "listeners": f"CONTROLLER://127.0.0.1:{node.port}",
                      "metadata.log.segment.ms": "3600000"}
            return props
        props |= {
            **({} if self.zookeeper else {"process.roles": "broker"}),
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.replica.fetchers": "1",
            "num.recovery.threads.per.data.dir": "1",
            "replica.lag.time.max.ms": "10000",
            "log.initial.task.delay.ms": "1000",
            "auto.create.topics.enable": "false",
        }
        return props | node.overrides

    def _write_config(self, node: Node) -> None:
        node.config.write_text("".join(f"{k}={v}\n" for k, v in sorted(self._properties(node).items())))

    # ---------------------------------------------------------------- processes
    def java(self, main_class: str, *args: str, timeout: float = 300.0, check: bool = True,
             heap: str = "-Xmx256m") -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's tool main classes with the cluster's classpath."""
        cmd = ["java", heap, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *self._log_props(), "-cp",
               self.jars.classpath, main_class, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise ClusterError(f"{main_class} {' '.join(args)} exited {proc.returncode}:\n"
                               f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    def _log_props(self) -> list[str]:
        if self.major >= 4:
            return [f"-Dlog4j2.configurationFile={self._log_config}"]
        return [f"-Dlog4j.configuration=file:{self._log_config}"]

    def format(self, node: Node) -> None:
        self._write_config(node)
        for d in node.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.java(self.jars.storage_tool, "format", f"--cluster-id={self.cluster_id}", "-c", str(node.config),
                  "--ignore-formatted")

    def _spawn(self, node: Node) -> None:
        self._write_config(node)
        out = node.log.open("ab")
        try:
            node.proc = subprocess.Popen(
                ["java", *JVM_OPTS, *self._log_props(), "-cp", self.jars.classpath, "kafka.Kafka", str(node.config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            out.close()

    def _wait_port(self, node: Node, timeout: float) -> None:
        def up() -> bool:
            if not node.running:
                raise ClusterError(f"node {node.node_id} exited with {node.proc and node.proc.returncode}:\n"
                                   f"{tail(node.log)}")
            return port_open(node.port)

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if up():
                return
            time.sleep(0.2)
        raise ClusterError(f"node {node.node_id} port {node.port} not open after {timeout}s:\n{tail(node.log)}")

    def start(self, timeout: float = 240.0) -> None:
        """Format every node, start the controller then the brokers, and wait until all brokers are registered."""
        if not self.zookeeper:
            for n in self.nodes:
                self.format(n)
            self._spawn(self.controller)
        for b in self.brokers.values():
            self._spawn(b)
        if not self.zookeeper:
            self._wait_port(self.controller, timeout)
        for b in self.brokers.values():
            self._wait_port(b, timeout)
        self.wait_brokers(set(self.brokers), timeout)

    def live_broker_ids(self) -> set[int]:
        """Broker ids in the cluster metadata (unfenced brokers), as any running broker reports them."""
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10000)
        try:
            return {int(b["broker_id"]) for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced")}
        finally:
            admin.close()

    def wait_brokers(self, expected: set[int], timeout: float = 180.0) -> None:
        try:
            wait_for(f"brokers {sorted(expected)}", lambda: self.live_broker_ids() == expected, timeout)
        except ClusterError as exc:
            raise ClusterError(f"{exc}\n{self.log_tails()}") from None

    def stop_broker(self, broker_id: int, timeout: float = 120.0) -> None:
        """SIGTERM one broker and wait for its clean shutdown (``.kafka_cleanshutdown`` is written)."""
        node = self.brokers[broker_id]
        if not node.running:
            return
        assert node.proc is not None
        node.proc.send_signal(signal.SIGTERM)
        try:
            node.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill(node)
            raise ClusterError(f"broker {broker_id} did not stop in {timeout}s:\n{tail(node.log)}") from None
        others = {b for b, n in self.brokers.items() if n.running}
        if others:
            self.wait_brokers(others)

    def start_broker(self, broker_id: int, timeout: float = 180.0) -> None:
        node = self.brokers[broker_id]
        if node.running:
            return
        self._spawn(node)
        self._wait_port(node, timeout)
        self.wait_brokers({b for b, n in self.brokers.items() if n.running}, timeout)

    def renumber_broker(self, old: int, new: int) -> None:
        """ZooKeeper mode: a stopped broker comes back as a new broker id on the same disks (a replaced host), its
        ``meta.properties`` rewritten to the new id as an operator does."""
        node = self.brokers.pop(old)
        assert not node.running and self.zookeeper
        for d in node.log_dirs:
            meta = d / "meta.properties"
            meta.write_text(meta.read_text().replace(f"broker.id={old}", f"broker.id={new}"))
        conf, logs = self.root / "conf" / f"broker{new}.properties", self.root / "logs" / f"broker{new}.out"
        self.brokers[new] = Node(new, "broker", free_port(), node.log_dirs, conf, logs, node.overrides)

    def _kill(self, node: Node) -> None:
        if node.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait(10)

    def close(self, grace_s: float = 0.0) -> None:
        """Stop everything: SIGTERM and up to ``grace_s`` for a clean exit, then SIGKILL of each remaining process
        group. Tests are done with the cluster by then, so the default is no grace: a KRaft broker told to stop
        together with its controller waits out its controlled shutdown (20 s of every teardown, measured)."""
        nodes = self.nodes[::-1]
        for n in nodes:
            if n.running:
                assert n.proc is not None
                n.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for n in nodes:
            if n.proc is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                n.proc.wait(max(0.1, deadline - time.monotonic()))
            self._kill(n)

    def log_tails(self, lines: int = 30) -> str:
        parts = []
        for n in self.nodes:
            parts.append(f"----- {n.log.name} (running={n.running}) -----\n{tail(n.log, lines)}")
        return "\n".join(parts)

    @contextlib.contextmanager
    def running(self) -> Iterator[KafkaCluster]:
        """Start the cluster for the block and always close it; a failure (start-up's or the block's) prints the
        JVMs' log tails to stderr first (a module-scoped fixture's teardown has no test report to attach them to)."""
        try:
            self.start()
            yield self
        except Exception:
            print(self.log_tails(60), file=sys.stderr)
            raise
        finally:
            self.close()

    def replayed_image(self, until: Callable[[Any], bool] = lambda _: True, timeout: float = 90.0) -> Any:
        """The controller's metadata log replayed by the project (a ``MetadataImage``), once complete and showing
        ``until``.

        The controller answers admin calls from its in-memory state and appends the records to its log a moment
        later (``controller.quorum.append.linger.ms``), so a state the admin API already shows is waited for here.
        """
        from pipelines.metadata import load_metadata

        def replayed() -> Any:
            result = load_metadata(str(self.metadata_dir))
            ok = result.image.complete and not result.errors and until(result.image)
            return result.image if ok else None

        return wait_for("a complete replay of the controller's metadata log in the expected state", replayed,
                        timeout=timeout)

    # ---------------------------------------------------------------- clients
    def admin(self) -> Any:
        from kafka.admin import KafkaAdminClient

        return wait_for("an admin client", lambda: KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                                                    request_timeout_ms=30000), timeout=120)

    def produce(self, topic: str, values: Sequence[bytes], partition: int | None = None) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=0, retries=5,
                                 request_timeout_ms=30000)
        try:
            for v in values:
                producer.send(topic, v, partition=partition).get(timeout=90)
            producer.flush(90)
        finally:
            producer.close(5)

    def consume(self, topic: str, partitions: Sequence[int] = (0,), expected: int | None = None,
                timeout: float = 90.0) -> list[bytes]:
        """Every value in the given partitions, read from the start without a consumer group."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", consumer_timeout_ms=2000)
        try:
            tps = [TopicPartition(topic, p) for p in partitions]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            end = consumer.end_offsets(tps)
            values: list[bytes] = []
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for msg in consumer:
                    values.append(msg.value)
                done = all(consumer.position(tp) >= end[tp] for tp in tps)
                if done and (expected is None or len(values) >= expected):
                    break
            return values
        finally:
            consumer.close()
