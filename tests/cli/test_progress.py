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


class _Recorder(LineReporter):
    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.advances: list[tuple[str, int, int | None, str, int | None]] = []

    def step_advanced(self, step: str, done: int, total: int | None, unit: str, size: int | None) -> None:
        self.advances.append((step, done, total, unit, size))


def test_the_executor_reports_items_applied_and_purged_with_bytes(tmp_path) -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
    from exec_world import backdate_journal, build_world

    from pipelines.execute.apply import apply_plan
    from pipelines.execute.purge import purge

    w = build_world(tmp_path)
    recorder = _Recorder()
    with progress.installed(recorder):
        with progress.step("apply") as done:
            report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
            done("")
        backdate_journal(w.state_dir, hours=2)
        with progress.step("purge") as done:
            purged = purge(w.config, 1, older_than_ms=3_600_000, execute=True, store=w.store)
            done("")
    applied = [a for a in recorder.advances if a[0] == "apply" and a[3] == "items applied"]  # (it re-reads
    # the controller metadata too: "records replayed")
    assert [a[1:4] for a in applied] == [(1, 3, "items applied"), (2, 3, "items applied"), (3, 3, "items applied")]
    assert applied[-1][4] == report.bytes_quarantined == w.plan.total_bytes
    removed = [a for a in recorder.advances if a[0] == "purge"]
    assert removed[-1][1:] == (3, 3, "items purged", purged.expected_bytes)


def test_threads_do_not_share_a_reporter() -> None:
    """Concurrent applies (the safety tests run two at once) each install a reporter; none is left behind when
    the first to start is the first to finish (what a single global got wrong)."""
    import threading

    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with progress.installed(LineReporter(io.StringIO())):
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with progress.installed(LineReporter(io.StringIO())):
            second_in.set()
            first_out.wait(5)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines: list[str] = []
    with progress.step("plan", 4, 4, lines.append) as done:
        done("")
    assert len(lines) == 2  # no reporter left behind: the plain lines
