"""Progress hooks: long steps say where they are; whoever runs them decides how (or whether) it is shown.

A step runs inside :func:`step`; inside it, code that knows how far it got calls :func:`advance` (cheap, and a
no-op when nobody listens). The CLI installs a reporter (``pipelines.cli.progress``: a live line on a terminal,
one line per step otherwise); without one, :func:`step` writes the two plain lines it always wrote to ``log``.
No Spark, no terminal handling here: the pipeline, the loader and the executor can all call it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Reporter(Protocol):
    def step_started(self, step: str, index: int, total: int) -> None: ...

    def step_advanced(self, step: str, done: int, total: int | None, unit: str, size: int | None) -> None: ...

    def step_finished(self, step: str, index: int, total: int, seconds: float, summary: str) -> None: ...

    def step_abandoned(self, step: str) -> None:
        """The step raised: whatever it showed is taken down (the error is reported elsewhere)."""


# context variables, not globals: two threads (concurrent applies) each see only their own reporter and step
_reporter: ContextVar[Reporter | None] = ContextVar("progress_reporter", default=None)
_current: ContextVar[str | None] = ContextVar("progress_step", default=None)


@contextmanager
def installed(reporter: Reporter) -> Iterator[Reporter]:
    """Send the progress of the steps run inside the block (in this thread) to ``reporter``."""
    token = _reporter.set(reporter)
    try:
        yield reporter
    finally:
        _reporter.reset(token)


@contextmanager
def step(name: str, index: int = 1, total: int = 1,
         log: Callable[[str], None] = lambda _: None) -> Iterator[Callable[[str], None]]:
    """Run a step; the block calls the yielded ``done(summary)`` once it succeeded."""
    reporter = _reporter.get()
    started = time.monotonic()
    if reporter is None:
        log(f"[{index}/{total}] {name} ...")
    else:
        reporter.step_started(name, index, total)

    finished = False

    def done(summary: str) -> None:
        nonlocal finished
        finished = True
        seconds = time.monotonic() - started
        if reporter is None:
            log(f"[{index}/{total}] {name} done in {seconds:.1f}s: {summary}")
        else:
            reporter.step_finished(name, index, total, seconds, summary)

    token = _current.set(name)
    try:
        yield done
    finally:
        _current.reset(token)
        if reporter is not None and not finished:
            reporter.step_abandoned(name)


def advance(done: int, total: int | None = None, *, unit: str = "", size: int | None = None) -> None:
    """The current step got ``done`` units (of ``total``, when known) and ``size`` bytes so far."""
    reporter = _reporter.get()
    current = _current.get()
    if reporter is not None and current is not None:
        reporter.step_advanced(current, done, total, unit, size)
