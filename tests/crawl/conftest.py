"""Fixtures for the crawl tests: synthetic log dirs (built with the project's factory) and a real sshd."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kafka.logdir_factory import PartitionSpec, make_log_dir, uuid_for


@dataclass(frozen=True)
class Broker:
    """A BrokerConfig look-alike (the crawl only needs these four attributes)."""

    broker_id: int
    log_dirs: tuple[str, ...]
    storage_options: dict
    inventory: str | None = None


VOLATILE_COLUMNS = ("fs_used_bytes", "fs_free_bytes", "crawled_at", "at")


def assert_same_rows(spark, actual, rows, schema) -> None:  # type: ignore[no-untyped-def]
    """``actual`` (a DataFrame) holds ``rows`` (dicts of ``schema``'s table), in any order, volatile columns aside."""
    from chispa import assert_df_equality

    cols = list(schema.column_names)
    expected = spark.createDataFrame([tuple(r[c] for c in cols) for r in rows], schema.to_spark())
    drop = [c for c in VOLATILE_COLUMNS if c in cols]
    assert_df_equality(actual.drop(*drop), expected.drop(*drop), ignore_row_order=True, ignore_nullable=True)


def build_cluster(root: Path) -> dict[str, Path]:
    """Two brokers, three log dirs, a mix of live, -delete, -stray and metadata dirs."""
    a = make_log_dir(
        root / "b1-d0", node_id=1, cluster_metadata=True,
        partitions=[
            PartitionSpec("orders", 0, segments=(0, 100), log_content=b"x" * 300),
            PartitionSpec("orders", 1, log_content=b"y" * 50),
            PartitionSpec("gone", 3, kind="delete"),
        ],
    )  # fmt: skip
    b = make_log_dir(
        root / "b1-d1", node_id=1,
        partitions=[PartitionSpec("payments", 2, segments=(0, 7, 9)), PartitionSpec("old", 0, kind="stray")],
    )  # fmt: skip
    c = make_log_dir(root / "b2-d0", node_id=2, partitions=[PartitionSpec("orders", 0, log_content=b"z" * 10)])
    return {"b1-d0": Path(a), "b1-d1": Path(b), "b2-d0": Path(c)}


@pytest.fixture
def cluster(tmp_path: Path) -> dict[str, Path]:
    return build_cluster(tmp_path / "cluster")


@pytest.fixture
def brokers(cluster: dict[str, Path]) -> list[Broker]:
    return [
        Broker(1, (str(cluster["b1-d0"]), str(cluster["b1-d1"])), {}),
        Broker(2, (str(cluster["b2-d0"]),), {}),
    ]


def expected_topic_id(topic: str) -> str:
    return str(uuid_for(topic))


# -- a real OpenSSH server on 127.0.0.1 ----------------------------------------------------------------


@dataclass(frozen=True)
class Sshd:
    port: int
    username: str
    key_file: Path
    known_hosts: Path

    @property
    def storage_options(self) -> dict[str, object]:
        return {"username": self.username, "key_filename": str(self.key_file), "known_hosts": str(self.known_hosts),
                "port": self.port}  # fmt: skip

    def url(self, path: Path | str) -> str:
        return f"sftp://127.0.0.1{path}"

    def ssh_argv(self) -> list[str]:
        return ["ssh", "-p", str(self.port), "-i", str(self.key_file), "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", f"{self.username}@127.0.0.1"]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_sshd(workdir: Path) -> tuple[subprocess.Popen[bytes], Sshd] | str:
    """Start sshd -D -e on a free loopback port; returns (process, Sshd) or the reason it cannot run."""
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
    if sshd is None or shutil.which("ssh-keygen") is None:
        return "OpenSSH server not installed (apt-get install -y openssh-server)"
    workdir.mkdir(parents=True, exist_ok=True)
    host_key, client_key = workdir / "host_ed25519", workdir / "client_ed25519"
    for key in (host_key, client_key):
        if not key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    authorized = workdir / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    os.makedirs("/run/sshd", exist_ok=True)  # privilege-separation dir sshd insists on
    last_error = ""
    for _attempt in range(3):
        port = _free_port()
        pid_file = workdir / f"sshd-{port}.pid"
        config = workdir / f"sshd_config-{port}"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nAuthorizedKeysFile {authorized}\n"
            f"PidFile {pid_file}\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nSubsystem sftp internal-sftp\n"
            "LogLevel ERROR\nMaxSessions 50\nMaxStartups 50\n"
        )
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if pid_file.exists() and _port_open(port):
                known = workdir / f"known_hosts-{port}"
                known.write_text(f"[127.0.0.1]:{port} {host_key.with_suffix('.pub').read_text()}")
                return proc, Sshd(port, getpass.getuser(), client_key, known)
            time.sleep(0.05)
        proc.kill()
        _out, err = proc.communicate()
        last_error = (err or b"").decode(errors="replace").strip()[-300:]
    return f"sshd did not start: {last_error}"


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    started = start_sshd(tmp_path_factory.mktemp("sshd"))
    if isinstance(started, str):
        pytest.skip(started)
    proc, server = started
    yield server
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
