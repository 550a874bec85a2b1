"""One real ZooKeeper server on 127.0.0.1 (``org.apache.zookeeper:zookeeper`` from Maven Central, see ``jars.py``).

``ZooKeeperServer(root, jars).running()`` writes ``zoo.cfg`` (standalone, a free client port, no admin server) and a
JAAS file that lets SASL DIGEST-MD5 clients log in as ``SASL_USER``/``SASL_PASSWORD`` (plain sessions and the
digest ACL scheme work as usual), starts ``ZooKeeperServerMain`` in its own process group, waits for the port and
``ruok``, and kills it on exit. The server logs (slf4j-simple) to ``<root>/zookeeper.out``. Nothing here asserts:
tests do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from cluster import ClusterError, free_port, port_open, tail
from jars import KafkaJars

SASL_USER = "reader"
SASL_PASSWORD = "sasl-secret"

def four_letter(port: int, command: str) -> str:
    """A ZooKeeper four-letter-word command's answer (``ruok``, ``srvr``, ...)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(command.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode()


class ZooKeeperServer:
    def __init__(self, root: Path, jars: KafkaJars) -> None:
        self.root = root
        self.jars = jars
        self.port = free_port()
        self.log = root / "zookeeper.out"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 90.0) -> None:
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.root / "zoo.cfg"
        config.write_text("\n".join([
            "tickTime=500", "initLimit=10", "syncLimit=5", f"dataDir={data}", f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1", "admin.enableServer=false", "4lw.commands.whitelist=*",
            "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider", "",
        ]))
        jaas = self.root / "jaas.conf"
        jaas.write_text("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                        f'  user_{SASL_USER}="{SASL_PASSWORD}";\n}};\n')
        out = self.log.open("ab")
        try:
            self.proc = subprocess.Popen(
                ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 f"-Djava.security.auth.login.config={jaas}",
                 "-Dzookeeper.admin.enableServer=false", "-cp", self.jars.classpath,
                 "org.apache.zookeeper.server.ZooKeeperServerMain", str(config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            out.close()

        deadline = time.monotonic() + timeout
        while not (port_open(self.port) and four_letter(self.port, "ruok") == "imok"):
            if not self.running:
                raise ClusterError(f"ZooKeeper exited with {self.proc and self.proc.returncode}:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise ClusterError(f"ZooKeeper not up after {timeout}s:\n{tail(self.log)}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None

    @contextlib.contextmanager
    def running_server(self) -> Iterator[ZooKeeperServer]:
        try:
            self.start()
            yield self
        except Exception:
            print(tail(self.log, 60), file=sys.stderr)
            raise
        finally:
            self.stop()
