"""How ``logdir-gc`` shows the progress of long steps on stderr (the hooks are in ``pipelines.progress``).

- On a terminal: one live line per step, redrawn twice a second with the elapsed time, what the step reported
  (records replayed, items applied with bytes...) and, while Spark runs a job, its tasks done (the crawl's first
  stage has one task per log dir); the line is replaced by the step's result when it ends.
- Not on a terminal (a log file, cron, CI): exactly one line per step, when it ends.

Either way the reporter keeps each step's wall time (``durations``) for the run's metrics. What a step or a note
says is escaped (``terminal_text.shown``, URL passwords masked): only the reporter's own codes redraw the line.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

from pipelines.plan.render import human_bytes
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

_REDRAW_S = 0.5


def spark_tasks() -> str:
    """``Spark tasks 37/122`` for the stages running now, or '' (no Spark in this process, or no job)."""
    pyspark = sys.modules.get("pyspark")
    sc = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    if sc is None:
        return ""
    try:
        tracker = sc.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
    except Exception:  # the JVM may be starting or stopping: progress is best effort, never an error
        return ""
    return f"Spark tasks {done}/{total}" if total else ""


def _safe(text: str) -> str:
    return shown(redact_text(text), 2000)


class LineReporter:
    """One line per finished step (not a terminal)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.durations: dict[str, float] = {}

    def note(self, line: str) -> None:
        self._write(_safe(line) + "\n")

    def step_started(self, step: str, index: int, total: int) -> None:
        pass

    def step_advanced(self, step: str, done: int, total: int | None, unit: str, size: int | None) -> None:
        pass

    def step_abandoned(self, step: str) -> None:
        pass

    def step_finished(self, step: str, index: int, total: int, seconds: float, summary: str) -> None:
        self.durations[step] = seconds
        prefix = f"[{index}/{total}] " if total > 1 else ""
        self._write(f"{prefix}{_safe(step)} done in {seconds:.1f}s" + (f": {_safe(summary)}" if summary else "")
                    + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class TerminalReporter(LineReporter):
    """A live line per step, redrawn by a background thread while the step runs."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._label = ""
        self._detail = ""
        self._started = 0.0

    def note(self, line: str) -> None:
        with self._lock:
            self._write("\r\x1b[K" + _safe(line) + "\n")

    def step_started(self, step: str, index: int, total: int) -> None:
        self._label = f"[{index}/{total}] {_safe(step)}" if total > 1 else _safe(step)
        self._detail = ""
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._redraw()
        threading.Thread(target=self._ticker, args=(self._stop,), daemon=True, name="progress").start()

    def step_advanced(self, step: str, done: int, total: int | None, unit: str, size: int | None) -> None:
        count = f"{done:,}/{total:,}" if total is not None else f"{done:,}"
        self._detail = f"{count} {_safe(unit)}".rstrip() + (f", {human_bytes(size)}" if size is not None else "")
        self._redraw()

    def step_finished(self, step: str, index: int, total: int, seconds: float, summary: str) -> None:
        self.step_abandoned(step)
        super().step_finished(step, index, total, seconds, summary)

    def step_abandoned(self, step: str) -> None:
        if self._stop is not None:
            self._stop.set()
        with self._lock:
            self._write("\r\x1b[K")

    def _ticker(self, stop: threading.Event) -> None:
        while not stop.wait(_REDRAW_S):
            self._redraw()

    def _redraw(self) -> None:
        parts = [f"{time.monotonic() - self._started:.0f}s", self._detail, spark_tasks()]
        with self._lock:
            if self._stop is not None and not self._stop.is_set():
                self._write("\r\x1b[K" + self._label + " ... " + ", ".join(p for p in parts if p))


def reporter_for(stream: IO[str] | None = None) -> LineReporter:
    """A live reporter when ``stream`` (default stderr) is a terminal, else one line per step."""
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    return TerminalReporter(stream) if isatty is not None and isatty() else LineReporter(stream)
