"""Signs that a replayed metadata directory is missing part of its log (facts sheet "Errata").

An image is complete only when the replayed offsets are contiguous from the snapshot's end offset (or 0) to the
last batch, and nothing in the directory points beyond what was replayed:

- ``.index`` / ``.timeindex`` files whose ``.log`` is absent, when the missing segment's range reaches the replay
  start (a missing segment entirely below the snapshot is harmless: it is reported as a note);
- a producer-state ``.snapshot`` named by an offset beyond the log end (last replayed offset + 1);
- a ``leader-epoch-checkpoint`` entry whose start offset is beyond the last replayed offset;
- no ``.log`` segment at all (Kafka always keeps an active segment, even right after a snapshot).

Gaps, trailing invalid bytes, decode errors, an open transaction and replay errors are found while reading and
added by the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def missing_segment_reasons(index_bases: Iterable[int], log_bases: Sequence[int], replay_start: int,
                            ) -> tuple[list[str], list[str]]:
    """(reasons, notes) for index files whose ``.log`` is absent."""
    reasons: list[str] = []
    notes: list[str] = []
    logs = sorted(log_bases)
    indexes = set(index_bases)
    boundaries = sorted(indexes | set(logs))
    for base in sorted(indexes - set(logs)):
        next_base = next((b for b in boundaries if b > base), None)
        name = f"{base:020d}"
        if next_base is not None and next_base <= replay_start:
            notes.append(f"segment {name}.log is missing, but its offsets [{base}, {next_base}) lie below the replay "
                         f"start {replay_start}")
        else:
            end = "the log end" if next_base is None else str(next_base)
            reasons.append(f"segment {name}.log is missing (its .index/.timeindex are present): offsets {base} to "
                           f"{end} were not replayed")
    return reasons, notes


def producer_snapshot_reasons(snapshot_offsets: Iterable[int], last_offset: int) -> list[str]:
    end = last_offset + 1
    return [
        f"producer snapshot {offset:020d}.snapshot names offset {offset}, beyond the replayed log end {end}"
        for offset in sorted(snapshot_offsets) if offset > end
    ]


def leader_epoch_reasons(entries: Iterable[tuple[int, int]], last_offset: int) -> list[str]:
    beyond = [(epoch, start) for epoch, start in entries if start > last_offset]
    if not beyond:
        return []
    epoch, start = beyond[-1]
    return [f"leader-epoch-checkpoint: {len(beyond)} epoch(s) start beyond the last replayed offset {last_offset} "
            f"(latest: epoch {epoch} at offset {start})"]
