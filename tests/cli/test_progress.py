"""Progress on stderr: a live line on a terminal, one line per step elsewhere, nothing left behind by a failure."""

from __future__ import annotations

import io
import time

import pytest

from pipelines import progress
from pipelines.cli.progress import LineReporter, TerminalReporter, reporter_for


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _steps(reporter: LineReporter) -> None:
    with progress.installed(reporter):
        for i, name in enumerate(("crawl", "ingest metadata"), 1):
            with progress.step(name, i, 2) as done:
                progress.advance(120, 300, unit="records replayed", size=5 * 1024 * 1024)
                time.sleep(0.6 if isinstance(reporter, TerminalReporter) else 0)
                done("ok")


def test_not_a_terminal_gets_one_line_per_step() -> None:
    out = io.StringIO()
    reporter = reporter_for(out)
    assert type(reporter) is LineReporter
    _steps(reporter)
    lines = out.getvalue().splitlines()
    assert [line.split(" done in ")[0] for line in lines] == ["[1/2] crawl", "[2/2] ingest metadata"]
    assert all(line.endswith(": ok") for line in lines) and "\r" not in out.getvalue()
    assert set(reporter.durations) == {"crawl", "ingest metadata"}


def test_a_terminal_gets_a_live_line_then_the_result() -> None:
    out = _Tty()
    reporter = reporter_for(out)
    assert isinstance(reporter, TerminalReporter)
    _steps(reporter)
    text = out.getvalue()
    assert "\r\x1b[K[1/2] crawl ... " in text and "120/300 records replayed, 5.0 MiB" in text
    assert text.count("\r\x1b[K[1/2] crawl ...") >= 2  # redrawn while the step runs
    assert text.endswith("\n") and text.rstrip("\n").split("\r\x1b[K")[-1].startswith(
        "[2/2] ingest metadata done in ")  # the live line replaced by the result


def test_a_failed_step_takes_its_live_line_down() -> None:
    out = _Tty()
    reporter = TerminalReporter(out)
    with progress.installed(reporter), pytest.raises(RuntimeError), progress.step("crawl", 1, 4):
        raise RuntimeError("boom")
    assert out.getvalue().endswith("\r\x1b[K") and not reporter.durations
    time.sleep(0.7)
    assert out.getvalue().endswith("\r\x1b[K")  # the redraw thread stopped


def test_without_a_reporter_the_two_plain_lines() -> None:
    lines: list[str] = []
    with progress.step("detect", 3, 4, lines.append) as done:
        progress.advance(1)  # nobody listens: a no-op
        done("dirs=5")
    assert lines[0] == "[3/4] detect ..." and lines[1].startswith("[3/4] detect done in ")
    assert lines[1].endswith("s: dirs=5")
