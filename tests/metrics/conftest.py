"""A demo warehouse (no Spark) and a real Pushgateway on loopback for the metrics tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analytics.demo_warehouse import DemoWarehouse, build_demo_warehouse


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoWarehouse:
    return build_demo_warehouse(Path(tmp_path_factory.mktemp("metrics-demo")))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pushgateway(tmp_path: Path) -> Iterator[str]:
    """The real Prometheus Pushgateway (Debian's prometheus-pushgateway, installed by
    scripts/install-system-deps.sh) on 127.0.0.1; its URL."""
    binary = shutil.which("prometheus-pushgateway") or shutil.which("pushgateway")
    if binary is None:
        pytest.skip("prometheus-pushgateway is not installed (scripts/install-system-deps.sh installs it as root)")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=(tmp_path / "pushgateway.log").open("w"))
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(f"pushgateway did not start: {(tmp_path / 'pushgateway.log').read_text()[-2000:]}")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
