"""The executor's on-host journal: append-only JSON lines, each fsynced before the step it announces runs.

Every step writes ``intent`` before it acts and ``done`` (or ``skipped``/``failed``) after; a rerun reads the
journal back to find items whose last record is an unfinished intent and completes or rolls them forward (see
``pipelines.execute.apply``). After every fsynced record the fault point ``<step>.<state>`` is passed.

A torn last line (crash during write) is ignored on read: its step never started, because the step only runs
after the write returned. The journal is mirrored into the Delta ``gc_journal`` table when a store is reachable;
the mirror is a copy, the file on the broker host is the authority.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.errors import HostIOError
from pipelines.execute.faults import fault_point
from pipelines.kafka.listing import read_regular_file

INTENT, DONE, SKIPPED, FAILED = "intent", "done", "skipped", "failed"


@dataclass(frozen=True, slots=True)
class JournalRecord:
    seq: int
    at: str
    cluster: str
    broker_id: int
    plan_id: str
    item_id: str
    step: str
    state: str
    detail: dict[str, Any]

    def row(self) -> dict[str, Any]:
        """The ``gc_journal`` row."""
        return {
            "cluster": self.cluster, "broker_id": self.broker_id, "plan_id": self.plan_id, "item_id": self.item_id,
            "seq": self.seq, "step": self.step, "state": self.state, "at": datetime.fromisoformat(self.at),
            "detail": json.dumps(self.detail, sort_keys=True),
        }


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """``<state_dir>/journal-broker-<id>.jsonl``; one writer at a time (the executor lock guarantees it)."""

    def __init__(self, state_dir: str | os.PathLike[str], cluster: str, broker_id: int) -> None:
        self.problems: list[str] = []
        self.dir = Path(state_dir)
        self.path = self.dir / f"journal-broker-{broker_id}.jsonl"
        self.cluster = cluster
        self.broker_id = broker_id
        self._next_seq: int | None = None

    def records(self) -> Iterator[JournalRecord]:
        """Every complete record, in order. A torn final line is skipped; a damaged line elsewhere is skipped and
        listed in :attr:`problems` (only the item it belonged to can be affected: its history looks shorter, and
        every command re-verifies such an item on disk or refuses it)."""
        self.problems: list[str] = []
        try:
            data = read_regular_file(str(self.path))  # a FIFO planted as the journal never blocks a read
        except FileNotFoundError:
            return
        except OSError as exc:
            raise HostIOError(f"cannot read the journal {self.path}: {exc.strerror or exc}") from None
        for number, raw in enumerate(data.split(b"\n")[:-1], 1):  # the text after the last newline is a torn tail
            try:
                yield JournalRecord(**json.loads(raw))
            except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: a line nested too deep
                self.problems.append(f"{self.path} line {number}: damaged record skipped ({exc})")

    def last_by_item(self, plan_id: str) -> dict[str, list[JournalRecord]]:
        """Records of ``plan_id`` grouped per item, in order."""
        out: dict[str, list[JournalRecord]] = {}
        for rec in self.records():
            if rec.plan_id == plan_id and rec.item_id:
                out.setdefault(rec.item_id, []).append(rec)
        return out

    def write(self, plan_id: str, item_id: str, step: str, state: str, **detail: Any) -> JournalRecord:
        """Append one record and fsync it (and, the first time, the directory entry of the file)."""
        if self._next_seq is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._next_seq = 1 + max((r.seq for r in self.records()), default=0)
            self._truncate_torn_tail()
        rec = JournalRecord(self._next_seq, datetime.now(timezone.utc).isoformat(), self.cluster, self.broker_id,
                            plan_id, item_id, step, state, detail)
        line = json.dumps(_asdict(rec), sort_keys=True) + "\n"
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            view = memoryview(line.encode("utf-8"))
            while view:  # a short write (disk full) continues until write() itself fails with ENOSPC
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.dir)
        self._next_seq += 1
        fault_point(f"{step}.{state}")
        return rec

    def _truncate_torn_tail(self) -> None:
        try:
            data = read_regular_file(str(self.path))
        except FileNotFoundError:
            return
        good = data[: data.rfind(b"\n") + 1]
        if len(good) != len(data):
            with open(self.path, "r+b") as f:
                f.truncate(len(good))
                os.fsync(f.fileno())


def _asdict(rec: JournalRecord) -> dict[str, Any]:
    return {name: getattr(rec, name) for name in JournalRecord.__slots__}


def mirror_to_store(journal: Journal, store: Any) -> int:
    """Append journal records not yet mirrored to ``gc_journal``; returns how many.

    The high-water mark is kept in ``<journal>.mirrored``. A crash between the append and the mark can mirror
    records twice (rows carry ``seq``, so duplicates are recognisable); nothing is ever lost from the file.
    """
    from pipelines.tables.schemas import GC_JOURNAL

    mark = journal.path.with_suffix(".mirrored")
    try:
        done = int(read_regular_file(str(mark)).strip() or 0)
    except FileNotFoundError:
        done = 0
    rows = [r.row() for r in journal.records() if r.seq > done]
    if not rows:
        return 0
    store.create_if_missing(GC_JOURNAL)
    store.append(GC_JOURNAL, rows)
    tmp = mark.with_suffix(".tmp")
    tmp.write_text(str(max(r["seq"] for r in rows)))
    os.replace(tmp, mark)
    return len(rows)


QUARANTINED, RESTORED, PURGED = "quarantined", "restored", "purged"


def item_state(history: list[JournalRecord]) -> tuple[str | None, JournalRecord | None]:
    """Where one item stands by its journal: ``quarantined``, ``restored``, ``purged`` or None (never moved), with
    the ``rename.done`` record that moved it (its ``dst`` and ``fingerprint`` are what the executor put there)."""
    moved: JournalRecord | None = None
    state: str | None = None
    for rec in history:
        if rec.step == "rename" and rec.state == DONE:
            moved, state = rec, QUARANTINED
        elif moved is not None and rec.state == DONE and rec.step in ("restore", "purge"):
            state = RESTORED if rec.step == "restore" else PURGED
    return state, moved
