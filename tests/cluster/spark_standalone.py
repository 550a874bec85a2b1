"""A Spark standalone cluster on 127.0.0.1 for tests: one master and N workers, each its own JVM, started with the
``spark-class`` that the pyspark wheel ships (no Spark download).

Each JVM runs in a process group of its own, so killing a worker takes its executors with it, as a lost host
would. Workers put ``worker_python_bin`` first on their PATH: an executor's ``python3`` is then that interpreter
unless the driver names another (``spark.pyspark.python``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
_MASTER_URL = re.compile(r"Starting Spark master at (spark://[\d.]+:\d+)")


def loopback_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for cluster JVMs and spark-submit: loopback only, no PYSPARK_* of the test process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "localhost"})
    env.update(extra or {})
    return env


class StandaloneCluster:
    def __init__(self, root: Path, *, workers: int = 2, worker_python_bin: Path | None = None,
                 worker_memory: str = "1g") -> None:
        self.root = root
        self.worker_count = workers
        self.worker_python_bin = worker_python_bin
        self.worker_memory = worker_memory
        self.master_url = ""
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- processes ------------------------------------------------------------------------------------------------

    def _log(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        self._log(name).parent.mkdir(parents=True, exist_ok=True)
        with open(self._log(name), "ab") as log:
            self._procs[name] = subprocess.Popen([str(SPARK_CLASS), *args], env=env, stdout=log,
                                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                 start_new_session=True)

    def _wait_for(self, name: str, pattern: str, timeout: float, count: int = 1) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._log(name).read_text(errors="replace") if self._log(name).exists() else ""
            found = list(re.finditer(pattern, text))
            if len(found) >= count:
                return found[count - 1]
            if self._procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited ({self._procs[name].returncode}):\n{text[-3000:]}")
            time.sleep(0.2)
        raise TimeoutError(f"{name}: no {pattern!r} within {timeout:.0f}s")

    def start(self, timeout: float = 240) -> StandaloneCluster:
        master_opts = "-Dspark.master.rest.enabled=false -Dspark.deploy.recoveryMode=NONE"
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                               "--webui-port", "0"], loopback_env({"SPARK_MASTER_OPTS": master_opts}))
        self.master_url = self._wait_for("master", _MASTER_URL.pattern, timeout).group(1)
        for i in range(self.worker_count):
            self.start_worker(i)
        for i in range(self.worker_count):
            self.wait_registered(i, timeout)
        return self

    def start_worker(self, i: int) -> None:
        work = self.root / f"worker-{i}"
        work.mkdir(parents=True, exist_ok=True)
        env = loopback_env()
        if self.worker_python_bin is not None:
            env["PATH"] = f"{self.worker_python_bin}{os.pathsep}{env.get('PATH', '')}"
        self._spawn(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                                    "--memory", self.worker_memory, "--webui-port", "0", "--work-dir", str(work),
                                    self.master_url], env)

    def wait_registered(self, i: int, timeout: float = 240) -> None:
        name = f"worker-{i}"
        starts = self._log(name).read_text(errors="replace").count("Starting Spark worker")
        self._wait_for(name, "Successfully registered with master", timeout, count=max(starts, 1))

    def kill_worker(self, i: int) -> None:
        """SIGKILL the worker JVM and everything in its process group (its executors): a host lost mid-job."""
        proc = self._procs[f"worker-{i}"]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in self._procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def log_tails(self, lines: int = 30) -> str:
        out = []
        for path in sorted((self.root / "logs").glob("*.log")):
            out.append(f"--- {path.name}")
            out.extend(path.read_text(errors="replace").splitlines()[-lines:])
        return "\n".join(out)
