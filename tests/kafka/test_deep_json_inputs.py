"""JSON nested past the interpreter's recursion limit, planted where the product parses JSON, is a damaged input
named in one line, never a RecursionError traceback (issue 27 point 4)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pipelines.errors import DecodeError

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deep_journal_line_is_skipped_as_damaged(tmp_path: Path) -> None:
    from pipelines.execute.journal import Journal

    journal = Journal(tmp_path, "c1", 1)
    journal.path.write_text(DEEP + "\n")
    assert list(journal.records()) == []
    assert len(journal.problems) == 1 and "line 1: damaged record skipped" in journal.problems[0]


def test_a_deep_absence_log_is_treated_as_empty(tmp_path: Path) -> None:
    from pipelines.execute.absence_log import AbsenceLog

    log = AbsenceLog(tmp_path, 1)
    log.path.write_text(DEEP)
    assert log.read() == {} and "unreadable, treated as empty" in log.problems[0]


def test_a_deep_zookeeper_dump_is_a_decode_error(tmp_path: Path) -> None:
    from pipelines.metadata.zookeeper_znodes import load_dump

    path = tmp_path / "dump.json"
    path.write_text(DEEP)
    with pytest.raises(DecodeError, match="not JSON"):
        load_dump(str(path))


def test_a_zookeeper_dump_above_its_limit_is_refused_unread(tmp_path: Path, monkeypatch) -> None:
    from pipelines.kafka import bounded_read
    from pipelines.kafka.bounded_read import FileTooLarge
    from pipelines.metadata.zookeeper_znodes import load_dump

    monkeypatch.setitem(bounded_read.LIMITS, "metadata_dump", 1000)
    path = tmp_path / "dump.json"
    path.write_text('{"format": "x", "pad": "' + "p" * 5000 + '"}')
    with pytest.raises(FileTooLarge, match="1000-byte limit"):
        load_dump(str(path))


def test_a_deep_inventory_line_is_a_decode_error() -> None:
    from pipelines.crawl.inventory_file import parse_inventory

    header = ('{"format": "logdir-gc-inventory", "version": 1, "written_at": "2026-01-01T00:00:00Z", "host": "h", '
              '"log_dirs": ["/l"]}')
    with pytest.raises(DecodeError, match="inventory line 2"):
        parse_inventory(io.StringIO(header + "\n" + DEEP + "\n"))


def test_deep_evidence_in_a_findings_row_is_no_evidence() -> None:
    from pipelines.plan.recheck import _evidence

    assert _evidence({"evidence": DEEP}) == {}


def test_an_inventory_line_longer_than_its_bound_is_refused_unread(monkeypatch) -> None:
    from pipelines.crawl import inventory_file

    monkeypatch.setattr(inventory_file, "MAX_LINE_CHARS", 1000)
    header = ('{"format": "logdir-gc-inventory", "version": 1, "written_at": "2026-01-01T00:00:00Z", "host": "h", '
              '"log_dirs": ["/l"]}')
    stream = io.StringIO(header + "\n" + "x" * 100_000 + "\n")
    with pytest.raises(DecodeError, match="inventory line 2 is longer than 1000 characters"):
        inventory_file.parse_inventory(stream)
    assert stream.tell() <= len(header) + 1 + 1001
