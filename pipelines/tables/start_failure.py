"""Why a driver JVM exited before its gateway came up, as one line read from the output it wrote.

pyspark only says ``JAVA_GATEWAY_EXITED``; the cause is in the JVM's own output: Ivy's problems when
``spark.jars.packages`` could not be resolved (``[download failed: ...]``, ``[unresolved dependency: ...]``), a
Java exception of spark-submit, or the ``java`` launcher's complaint (an unknown option, no ``JAVA_HOME``).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["cause_in_log", "log_size"]

_MAIN_EXCEPTION = re.compile(r'Exception in thread "main" (?:[\w.$]+\.)?([\w$]+(?:Exception|Error)): ?(.*)')
_IVY_PROBLEMS = re.compile(r"^\[(.*)\]$")
_IVY_PROBLEM_START = re.compile(r", (?=[a-z][a-z ]*: )")  # "download failed: a, unresolved dependency: b: not found"
_SERVER_ERROR = re.compile(r"Server access error at url (\S+) \((?:[\w.$]+\.)?([^()]*)\)")  # Ivy: why a file failed
_LAUNCHER_ERROR = re.compile(r"error|invalid|unrecognized|could not|not set|no such file|cannot", re.IGNORECASE)
_LIMIT = 400


def log_size(path: Path | None) -> int:
    """The size of ``path`` now (0 when missing): where the output of a JVM started next begins."""
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def cause_in_log(path: Path, start: int = 0) -> str | None:
    """The cause the JVM's output from byte ``start`` of ``path`` names, as one short line; None when it names none."""
    try:
        with open(path, "rb") as log:
            log.seek(start)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return None
    return cause_in_text(text)


def cause_in_text(text: str) -> str | None:
    """See :func:`cause_in_log`."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith(("at ", "..."))]
    for line in lines:
        found = _MAIN_EXCEPTION.search(line)
        if found is None:
            continue
        problems = _ivy_problems(found.group(2).strip())
        if problems is None:
            return _short(f"{found.group(1)}: {found.group(2).strip()}")
        server = next(filter(None, map(_SERVER_ERROR.search, lines)), None)
        return _short(problems + (f"; {server.group(2)} at {server.group(1)}" if server else ""))
    for line in lines:
        if _LAUNCHER_ERROR.search(line) and " WARN " not in line and " INFO " not in line:
            return _short(line)
    return _short(lines[-1]) if lines else None


def _ivy_problems(message: str) -> str | None:
    """Ivy's problem list (``[download failed: X, ...]``) as "download failed for X (and 2 more)"."""
    listed = _IVY_PROBLEMS.match(message)
    if listed is None:
        return None
    problems = [p.strip() for p in _IVY_PROBLEM_START.split(listed.group(1)) if p.strip()]
    if not problems:
        return None
    kind, _, subject = problems[0].partition(": ")
    first = f"{kind}{' for' if kind == 'download failed' else ''} {subject}".strip()
    more = len(problems) - 1
    return first + (f" (and {more} more)" if more else "")


def _short(line: str) -> str:
    return line if len(line) <= _LIMIT else line[: _LIMIT - 1] + "…"
