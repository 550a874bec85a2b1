"""``MetadataLoader``: folds metadata-log entries into deltas and publishes images (Kafka's ``MetadataBatchLoader``).

The loader is separate from the model: it owns offsets, metadata transactions and flush points; the delta only
knows how records change the image.

Metadata transactions (KIP-868, MV 3.6-IV1+): records between BeginTransactionRecord and EndTransactionRecord are
applied as one unit (the pending delta is flushed at Begin so the transaction starts on a clean delta, and flushed
again at End); AbortTransactionRecord discards everything since Begin, events included. A Begin inside a
transaction, or an End/Abort outside one, is reported as a ``ReplayProblem`` and otherwise ignored. A transaction
still open at the end of the input is not applied (``open_transaction`` tells).

Outside transactions the delta is flushed every ``max_delta_records`` records and by ``finish()``; where deltas are
cut never changes the resulting image, only the cost: each delta pays once per partition it touches (its pending
state) and once per topic it changes (a new ``TopicImage``). Cut into five deltas, the bench's log took 17% more
replay instructions than in one (callgrind), hence a default of 1M records rather than 200k.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from pipelines.kafka.metadata_log import FieldsRecord, LogEntry, MetadataLog
from pipelines.metadata.events import MetadataEvent
from pipelines.metadata.fold import ADD_CONTEXT, FOLD_CONTEXT, adder, folder
from pipelines.metadata.image import EMPTY, MetadataImage, MetadataProvenance, ReplayProblem
from pipelines.metadata.image_delta import FaultHandler, MetadataDelta

Publisher = Callable[[MetadataDelta, MetadataImage], None]

_BEGIN = "BeginTransactionRecord"
_END = "EndTransactionRecord"
_ABORT = "AbortTransactionRecord"
_MARKERS = frozenset({_BEGIN, _END, _ABORT})
_PARTITION_CHANGE = "PartitionChangeRecord"
_PARTITION = "PartitionRecord"
SNAPSHOT_HEADER = "SNAPSHOT_HEADER"
SNAPSHOT_FOOTER = "SNAPSHOT_FOOTER"


@dataclass(frozen=True, slots=True)
class SnapshotLoad:
    """Outcome of ``load_snapshot``: the image is only replaced when ``ok``."""

    ok: bool
    records: int
    timestamp_ms: int
    problems: tuple[str, ...]


class MetadataLoader:
    """Replays entries (anything with ``offset``, ``batch_timestamp_ms``, ``epoch``, ``is_control``, ``record``)."""

    def __init__(self, image: MetadataImage = EMPTY, *, source: str = "", fault_handler: FaultHandler | None = None,
                 publisher: Publisher | None = None, max_delta_records: int = 1_000_000,
                 keep_partition_added: bool = True) -> None:
        """``keep_partition_added=False``: the ``partition_added`` events of the hot path of :meth:`replay_raw` and
        :meth:`load_snapshot_raw` (a PartitionRecord of a partition new to its delta, registered by
        :func:`pipelines.metadata.fold.adder`) are counted in ``events_not_kept`` instead of kept in ``events``, for a
        caller that only counts events (``metadata show``'s summary): on the bench's log 133k events, a third of the
        replay's instructions, are never made. The image, every other event and the errors are the same."""
        self.image = image
        self.source = source
        self.fault_handler = fault_handler
        self.publisher = publisher
        self.max_delta_records = max(1, max_delta_records)
        self.events: list[MetadataEvent] = []
        self.keep_partition_added = keep_partition_added
        self.events_not_kept = 0
        """``partition_added`` events counted, not kept (``keep_partition_added=False``)."""
        self.errors: list[ReplayProblem] = []
        self.open_transaction: int | None = None  # offset of the pending Begin
        self.records_seen = 0
        self._initial_errors = image.replay_errors
        self._delta = self._new_delta()
        self._last: tuple[int, int, int] | None = None  # offset, epoch, timestamp of the last entry seen
        self._committed: tuple[int, int, int] | None = None  # same, at the last flush outside a transaction

    def _new_delta(self, *, from_snapshot: bool = False) -> MetadataDelta:
        return MetadataDelta(self.image, fault_handler=self.fault_handler, from_snapshot=from_snapshot)

    # -- snapshots -------------------------------------------------------------------------------------
    def load_snapshot(self, entries: Iterable[Any], *, last_offset: int, epoch: int) -> SnapshotLoad:
        """Replay a FULL snapshot onto the current image, then ``finish_snapshot()``.

        The snapshot must start with a SnapshotHeader and end with a SnapshotFooter control record; if not (or if
        iterating raises nothing but stops early, which the caller detects), nothing changes and ``ok`` is False.
        A :class:`MetadataLog` is read through its ``iter_raw`` (see :meth:`replay`).
        """
        if isinstance(entries, MetadataLog):
            items: Iterable[tuple] = entries.iter_raw()
        else:
            items = ((e.offset, e.batch_timestamp_ms, None, e.is_control, e.record, None) for e in entries)
        return self.load_snapshot_raw(items, last_offset=last_offset, epoch=epoch)

    def load_snapshot_raw(self, items: Iterable[tuple], *, last_offset: int, epoch: int) -> SnapshotLoad:
        """``load_snapshot`` over what :meth:`MetadataLog.iter_raw` yields (``LogEntry``-ordered tuples)."""
        self.flush()
        delta = self._new_delta(from_snapshot=True)
        header_ts: int | None = None
        footer = False
        count = 0
        problems: list[str] = []
        replay = delta.replay
        add, add_context = (None, None) if self.keep_partition_added else (adder(), ADD_CONTEXT)
        fields_record = FieldsRecord
        not_kept = 0
        fast_last: tuple[int, int] | None = None  # (offset, time) of the last record, when add took it
        for offset, ts, _epoch, control, record, _base in items:
            if control:
                kind = record.type_name
                if kind == SNAPSHOT_HEADER and count == 0 and header_ts is None:
                    header_ts = record.fields.get("last_contained_log_timestamp", ts)
                elif kind == SNAPSHOT_FOOTER:
                    footer = True
                continue
            if header_ts is None:
                problems.append("snapshot does not start with a SnapshotHeader")
                header_ts = ts
            if footer:
                problems.append(f"record at offset {offset} after the SnapshotFooter")
            count += 1
            if (add is not None and type(record) is fields_record and record[0] == _PARTITION
                    and (changed := delta.changed_topics) is not None and add(add_context, changed, record[1])):
                delta.records += 1  # a new partition: registered, its one partition_added event counted
                not_kept += 1
                fast_last = (offset, header_ts)
            else:
                replay(record, offset, header_ts)
                fast_last = None
        if not footer:
            problems.append("snapshot has no SnapshotFooter (truncated or partial)")
        ts = -1 if header_ts is None else header_ts
        if problems:
            return SnapshotLoad(False, count, ts, tuple(problems))
        if fast_last is not None:  # where replay would have left the delta: the events finish_snapshot emits
            delta._offset, delta._timestamp_ms = fast_last
        self.events_not_kept += not_kept
        delta.finish_snapshot()
        self._publish(delta, MetadataProvenance(self.source, last_offset, epoch, ts))
        self._last = self._committed = (last_offset, epoch, ts)
        return SnapshotLoad(True, count, ts, ())

    # -- log -------------------------------------------------------------------------------------------
    def replay(self, entries: Iterable[Any]) -> None:
        """``feed`` every entry; the loop inlines ``feed`` for records outside transactions (the hot path).

        A :class:`MetadataLog` is read through its ``iter_raw`` (tuples, records over plain dicts): the same
        replay without building the public read-only objects that nobody else sees here.
        """
        if isinstance(entries, MetadataLog):
            self.replay_raw(entries.iter_raw())
            return
        feed = self.feed
        markers = _MARKERS
        for entry in entries:
            if entry.is_control or self.open_transaction is not None:
                feed(entry)
                continue
            record = entry.record
            if record.name in markers:
                feed(entry)
                continue
            self.records_seen += 1
            offset = entry.offset
            ts = entry.batch_timestamp_ms
            self._last = (offset, entry.epoch, ts)
            delta = self._delta
            delta.replay(record, offset, ts)
            if delta.records >= self.max_delta_records and self.open_transaction is None:
                self._flush(self._last)

    def replay_raw(self, items: Iterable[tuple]) -> None:
        """``replay`` over what :meth:`MetadataLog.iter_raw` yields (``LogEntry``-ordered tuples), or a filter
        of it; same outcome as replaying the ``LogEntry`` objects.

        The hot loop keeps ``records_seen`` and the last entry in locals and writes them back before anything
        that reads them (``feed``, a flush, the end of the loop, an exception from a strict fault handler).
        """
        feed = self.feed
        markers = _MARKERS
        limit = self.max_delta_records
        fields_record = FieldsRecord
        fold, context = folder(), FOLD_CONTEXT
        add, add_context = (None, None) if self.keep_partition_added else (adder(), ADD_CONTEXT)
        delta = self._delta
        replay = delta.replay_fields
        changed = None  # the delta's TopicsDelta.changed once it exists: where fold finds pending partition states
        not_kept = 0
        seen = 0
        last = None  # the last item replayed here and not yet written back to self._last
        try:
            for item in items:
                record = item[4]
                if item[3] or self.open_transaction is not None:
                    name = fields = None
                elif type(record) is fields_record:
                    name, fields = record
                else:
                    name = record.name
                    fields = record.fields
                if name is None or name in markers:
                    if last is not None:
                        self._last = (last[0], last[2], last[1])
                        last = None
                    self.records_seen += seen
                    seen = 0
                    feed(LogEntry(*item))
                    delta = self._delta
                    replay = delta.replay_fields
                    changed = None
                    continue
                seen += 1
                last = item
                if name == _PARTITION_CHANGE and changed is not None and fold(context, changed, fields):
                    delta.records += 1  # what replay_fields counts; a folded record reports nothing
                elif (name == _PARTITION and add is not None and changed is not None
                      and add(add_context, changed, fields)):
                    delta.records += 1  # a new partition: registered, its one partition_added event counted
                    not_kept += 1
                else:
                    replay(name, fields, item[0], item[1])
                    if changed is None:
                        changed = delta.changed_topics
                if delta.records >= limit:  # outside a transaction here (checked above)
                    self._last = (item[0], item[2], item[1])
                    last = None
                    self._flush(self._last)
                    delta = self._delta
                    replay = delta.replay_fields
                    changed = None
        finally:
            self.records_seen += seen
            self.events_not_kept += not_kept
            if last is not None:
                self._last = (last[0], last[2], last[1])

    def feed(self, entry: Any) -> None:
        """Replay one log entry (control records only move the offset)."""
        self.records_seen += 1
        previous, self._last = self._last, (entry.offset, entry.epoch, entry.batch_timestamp_ms)
        if entry.is_control:
            return
        record = entry.record
        name = record.name
        if name == _BEGIN:
            if self.open_transaction is not None:
                self._problem(entry.offset, name,
                              f"BeginTransactionRecord inside the transaction begun at offset {self.open_transaction}")
                return
            self._flush(previous)
            self.open_transaction = entry.offset
        elif name == _END:
            if self.open_transaction is None:
                self._problem(entry.offset, name, "EndTransactionRecord without BeginTransactionRecord")
                return
            self.open_transaction = None
            self._flush(self._last)
        elif name == _ABORT:
            if self.open_transaction is None:
                self._problem(entry.offset, name, "AbortTransactionRecord without BeginTransactionRecord")
                return
            self.open_transaction = None
            self.errors.extend(self._delta.errors)
            self._delta = self._new_delta()
            self._flush(self._last)
        else:
            delta = self._delta
            delta.replay(record, entry.offset, entry.batch_timestamp_ms)
            if self.open_transaction is None and delta.records >= self.max_delta_records:
                self._flush(self._last)

    def flush(self) -> None:
        """Apply what is pending outside a transaction (a pending transaction stays pending)."""
        if self.open_transaction is None:
            self._flush(self._last)

    def finish(self) -> MetadataImage:
        """Flush and return the final image; a transaction still open is left unapplied.

        ``image.replay_errors`` then lists every problem: of applied deltas, of an aborted or unfinished
        transaction, and misplaced transaction markers.
        """
        self.flush()
        pending = self._delta.errors if self.open_transaction is not None else []
        self.image = replace(self.image, replay_errors=self._initial_errors + tuple(self.errors) + tuple(pending))
        return self.image

    # -- internals -------------------------------------------------------------------------------------
    def _problem(self, offset: int, record: str, message: str) -> None:
        problem = ReplayProblem(offset, record, message)
        self.errors.append(problem)
        if self.fault_handler is not None:
            self.fault_handler(problem)

    def _flush(self, last: tuple[int, int, int] | None) -> None:
        delta = self._delta
        if last is None or (delta.records == 0 and last == self._committed):
            return
        offset, epoch, ts = last
        self._publish(delta, MetadataProvenance(self.source, offset, epoch, ts))
        self._committed = last

    def _publish(self, delta: MetadataDelta, provenance: MetadataProvenance) -> None:
        self.image = delta.apply(provenance)
        self.events.extend(delta.events)
        self.errors.extend(delta.errors)
        if self.publisher is not None:
            self.publisher(delta, self.image)
        self._delta = self._new_delta()
