"""Real S3 endpoints on 127.0.0.1 for the object-store tests, and a fault-injecting HTTP proxy in front of them.

* :class:`MotoServer`: moto's standalone server (``moto_server``, a separate process spoken to over HTTP, not the
  in-process patch). It enforces conditional writes: a ``PUT`` with ``If-None-Match: *`` over an existing key gets
  ``412 PreconditionFailed``, which is what delta-rs commits rely on. Every test that writes concurrently uses it.
* :class:`FaultProxy`: forwards every request to an upstream endpoint and, for requests matching a rule, answers
  ``503 SlowDown`` instead (a throttling store), or holds the request for a while before forwarding it (a slow
  network). The engines talk to the proxy as they would to the store.

The credentials are made up; :data:`SECRET_KEY` is unique so tests can grep output for it.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ACCESS_KEY = "AKIAKLGCTESTKEY00001"
SECRET_KEY = "klgc-test-secret-6f1d2c9e8b7a4d3c"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s}s")


def aws_env(endpoint: str) -> dict[str, str]:
    """The standard AWS variables pointing at ``endpoint``: all a user sets."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION}


class MotoServer:
    """``moto_server`` on a free loopback port, in its own process."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "1"})
        try:
            wait_for_port(self.port)
        except TimeoutError:
            self.stop()
            raise

    def client(self):  # boto3 comes with moto[server]
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()


@dataclass
class Rule:
    """Requests whose ``METHOD path?query`` matches ``pattern`` (and whose User-Agent matches ``agent``) get
    ``503 SlowDown`` (``fail``), or wait ``delay_s`` before being forwarded, or wait until another client has written
    the same key (at most ``hold_s``); the first ``limit`` of them only, when set."""

    pattern: str
    fail: bool = False
    delay_s: float = 0.0
    hold_s: float = 0.0
    agent: str | None = None
    limit: int | None = None
    hits: int = 0

    def matches(self, line: str, agent: str) -> bool:
        if self.limit is not None and self.hits >= self.limit:
            return False
        return bool(re.search(self.pattern, line)) and (self.agent is None or bool(re.search(self.agent, agent)))


class FaultProxy:
    """Client side of the proxy process: add rules, read how often each one fired, clear them.

    The proxy runs in its own process: delta-rs holds the GIL during some calls, so a proxy thread in the test's
    process could not answer them.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"

    def _control(self, body: dict) -> list[dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("POST", CONTROL_PATH, body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/json"})
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def throttle(self, pattern: str, limit: int | None = None) -> int:
        """Answer ``503 SlowDown`` to matching requests; returns the rule's index."""
        return len(self._control({"add": asdict(Rule(pattern, fail=True, limit=limit))})) - 1

    def delay(self, pattern: str, seconds: float, agent: str | None = None) -> int:
        return len(self._control({"add": asdict(Rule(pattern, delay_s=seconds, agent=agent))})) - 1

    def hold_until_written_by_another(self, pattern: str, seconds: float, agent: str | None = None) -> int:
        """Hold a matching PUT until another client's PUT of the same key succeeded (at most ``seconds``): the
        worst interleaving for a writer that checks for a key and then writes it unconditionally."""
        return len(self._control({"add": asdict(Rule(pattern, hold_s=seconds, agent=agent))})) - 1

    def hits(self, index: int) -> int:
        return self._control({})[index]["hits"]

    def clear(self) -> None:
        self._control({"clear": True})


CONTROL_PATH = "/__fault_proxy__"


def _handler(upstream_port: int, rules: list[Rule], lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    written: Counter[str] = Counter()  # successful PUTs per path
    hop_by_hop = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            pass

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes, *, length: str | None = None
                   ) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in hop_by_hop and name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", length if length is not None else str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _match(self) -> Rule | None:
            line, agent = f"{self.command} {self.path}", self.headers.get("User-Agent", "")
            with lock:
                for rule in rules:
                    if rule.matches(line, agent):
                        rule.hits += 1
                        return rule
            return None

        def _control(self, body: bytes) -> None:
            request = json.loads(body or b"{}")
            with lock:
                if request.get("clear"):
                    rules.clear()
                if request.get("add"):
                    rules.append(Rule(**request["add"]))
                state = json.dumps([asdict(r) for r in rules]).encode()
            self._reply(200, [("Content-Type", "application/json")], state)

        def _forward(self) -> None:
            body = self._body()
            if self.path == CONTROL_PATH:
                self._control(body)
                return
            rule = self._match()
            if rule is not None and rule.fail:
                xml = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
                       b"<Message>Please reduce your request rate.</Message></Error>")
                self._reply(503, [("Content-Type", "application/xml")], xml)
                return
            if rule is not None and rule.delay_s:
                time.sleep(rule.delay_s)
            key = self.path.split("?")[0]
            if rule is not None and rule.hold_s:
                before, deadline = written[key], time.monotonic() + rule.hold_s
                while written[key] == before and time.monotonic() < deadline:
                    time.sleep(0.02)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in hop_by_hop}
            headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                # a HEAD answer keeps the object's length: there is no body to count
                length = response.getheader("Content-Length") if self.command == "HEAD" else None
                if self.command == "PUT" and response.status == 200:
                    with lock:
                        written[key] += 1
                self._reply(response.status, response.getheaders(), data, length=length or None)
            finally:
                conn.close()

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    return Handler


def serve_proxy(upstream_port: int, port: int) -> None:
    """Run the proxy in this process until it is terminated."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(upstream_port, [], threading.Lock()))
    server.daemon_threads = True
    server.serve_forever()


@contextmanager
def fault_proxy(upstream_port: int) -> Iterator[FaultProxy]:
    """A :class:`FaultProxy` process listening on a free loopback port for the duration of the block."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, str(upstream_port), str(port)])
    try:
        wait_for_port(port)
        yield FaultProxy(port)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    serve_proxy(int(sys.argv[1]), int(sys.argv[2]))
