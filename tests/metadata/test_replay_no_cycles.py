"""Replay builds no reference cycles: ``load_metadata`` pauses the cyclic GC (``gc_paused``) and counts on reference
counting alone to free each applied delta, so a cycle (say a delta keeping a bound method of itself) would keep
every delta, its topic changes and their partition images alive until the next collection."""

from __future__ import annotations

import gc

from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.metadata.image_delta import MetadataDelta
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.metadata_log_source import load_metadata
from tests.metadata.mdrecords import broker, change, did, encode_log, partition, tid, topic


def _log() -> bytes:
    records = [broker(b, b + 1, log_dirs=(did(b),), fenced=False) for b in range(3)]
    for t in range(5):
        records.append(topic(f"t{t}", tid(t)))
        records += [partition(tid(t), p, [0, 1, 2], dirs=[did(0), did(1), did(2)]) for p in range(4)]
    for i in range(300):
        records.append(change(tid(i % 5), i % 4, isr=[0, 1, 2][: 1 + i % 3], leader=i % 3))
        if i % 50 == 0:
            records.append(change(tid(i % 5), i % 4, replicas=[2, 1, 0], directories=[did(2), did(1), did(0)]))
    return encode_log(records, batch_size=4)


def _garbage_cycles_after(run) -> int:
    gc.collect()
    gc.disable()
    try:
        kept = run()
        found = gc.collect()
    finally:
        gc.enable()
    assert kept is not None
    return found


def test_loader_replay_with_many_flushes_leaves_no_cycles() -> None:
    data = _log()

    def run() -> MetadataLoader:
        loader = MetadataLoader(max_delta_records=7)  # dozens of deltas, each dropped after its flush
        loader.replay(iter_metadata_log(data))
        loader.finish()
        assert sum(1 for o in gc.get_objects() if type(o) is MetadataDelta) == 1  # only the pending one
        return loader

    assert _garbage_cycles_after(run) == 0


def test_load_metadata_leaves_no_cycles(tmp_path) -> None:
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(_log())
    assert _garbage_cycles_after(lambda: load_metadata(str(path))) == 0
