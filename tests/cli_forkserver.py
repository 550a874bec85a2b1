"""Run ``logdir-gc`` commands as fresh processes forked from one interpreter that has already imported the CLI.

The crash-injection tests run the executor a few dozen times, and each ``python -m pipelines.cli.main`` spends
most of its second importing pandas, pyarrow and delta-rs. The server below imports them once and forks a child
per command. Each child is still its own process: it sets its environment, working directory and output files,
runs ``main`` and exits; a fault point's SIGKILL kills the child exactly as it kills a standalone command. The
server itself never opens a table, so no child inherits delta-rs' runtime threads or any open file of a command.

Use :class:`ForkServer` as a context manager; :meth:`ForkServer.run` returns a ``CompletedProcess`` whose
``returncode`` follows ``subprocess`` (``-SIGKILL`` for a killed child).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]


class ForkServer:
    def __init__(self, scratch: Path) -> None:
        self._scratch = scratch
        self._count = 0
        self._server: subprocess.Popen[str] | None = None

    def __enter__(self) -> ForkServer:
        self._scratch.mkdir(parents=True, exist_ok=True)
        self._server = subprocess.Popen([sys.executable, __file__], cwd=ROOT, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._server is not None and self._server.stdin is not None
        self._server.stdin.close()
        self._server.wait(timeout=60)

    def run(self, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``logdir-gc *args`` with exactly ``env`` as its environment, its output captured."""
        assert self._server is not None and self._server.stdin is not None and self._server.stdout is not None
        self._count += 1
        out, err = self._scratch / f"{self._count}.out", self._scratch / f"{self._count}.err"
        request = {"args": args, "env": env, "cwd": str(ROOT), "stdout": str(out), "stderr": str(err)}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        reply = self._server.stdout.readline()
        if not reply:
            raise RuntimeError(f"the fork server died (exit {self._server.wait(timeout=60)})")
        code = json.loads(reply)["returncode"]
        return subprocess.CompletedProcess(args, code, out.read_text(), err.read_text())


def _child(request: dict) -> None:
    """In the forked child: become the command, then leave without running the server's exit handlers."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.argv = ["logdir-gc", *request["args"]]
        from pipelines.cli.main import main

        try:
            main(request["args"])
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve() -> None:
    import deltalake  # noqa: F401 - imported once here so the children do not
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    import pipelines.cli.execute_cmd
    import pipelines.cli.main  # noqa: F401

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        sys.stdout.write(json.dumps({"returncode": code}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    _serve()
