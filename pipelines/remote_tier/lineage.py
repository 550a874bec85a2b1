"""Is a remote segment inside its leader-epoch lineage? (``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs``)

After a failover or an unclean election, a segment copied by an old leader can hold offsets the new lineage
rewrote. Kafka skips such segments when serving and removes them only through retention, so a segment outside the
lineage is *reported* (``remote_outside_lineage``), never planned. The lineage is the partition leader's epoch
cache (``leader-epoch-checkpoint``: epoch -> start offset) and its log end offset, read from the leader's log dir.

The checks, in Kafka's order, on the segment's epochs with empty epochs filtered out (an epoch whose start offset
equals the next one's holds no record):

1. its last epoch lies within the lineage's first and last epoch;
2. some epoch of it is at least the lineage's first epoch; from that one on, every epoch is in the lineage;
3. that first epoch does not start before the lineage's start for it (unless it is the lineage's first epoch);
4. every epoch but its last is followed by the same next (epoch, offset) in both;
5. its end offset is below the next lineage epoch's start (for its last epoch) and below the log end offset.

The crawl never reads records, so a run knows no log end offset: ``log_end_offset`` ``None`` leaves out the last
bound of check 5. That can only judge fewer segments outside, never more: a leader never truncates below a segment
of its own current epoch, and a segment of an earlier epoch that the lineage rewrote fails the next-epoch bound.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

__all__ = ["filtered_epochs", "within_lineage"]


def filtered_epochs(epochs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``buildFilteredLeaderEpochMap``: drop each epoch whose start offset equals the next epoch's."""
    ordered = sorted(epochs)
    return [e for i, e in enumerate(ordered) if i + 1 == len(ordered) or ordered[i + 1][1] != e[1]]


def within_lineage(segment_epochs: Sequence[tuple[int, int]], end_offset: int, lineage: Mapping[int, int],
                   log_end_offset: int | None) -> bool:
    """Whether a segment with these ``(epoch, start offset)`` pairs and ``end_offset`` is inside ``lineage``
    (``log_end_offset`` None: not known, that bound is not applied)."""
    seg = filtered_epochs(segment_epochs)
    if not seg or not lineage:
        return False
    lin_epochs = sorted(lineage)
    seg_map = dict(seg)
    last_epoch = seg[-1][0]
    if last_epoch < lin_epochs[0] or last_epoch > lin_epochs[-1]:
        return False
    firsts = [e for e, _ in seg if e >= lin_epochs[0]]
    if not firsts:
        return False
    first_epoch = firsts[0]

    def higher(epochs: list[int], mapping: Mapping[int, int], epoch: int) -> tuple[int, int] | None:
        i = bisect_right(epochs, epoch)
        return None if i == len(epochs) else (epochs[i], mapping[epochs[i]])

    seg_epochs = [e for e, _ in seg]
    for epoch, offset in seg:
        if epoch < first_epoch:
            continue
        if epoch not in lineage:
            return False
        if epoch == first_epoch and epoch != lin_epochs[0] and offset < lineage[epoch]:
            return False
        if epoch == last_epoch:
            nxt = higher(lin_epochs, lineage, epoch)
            if nxt is not None and end_offset > nxt[1] - 1:
                return False
        elif higher(lin_epochs, lineage, epoch) != higher(seg_epochs, seg_map, epoch):
            return False
    return log_end_offset is None or end_offset < log_end_offset
