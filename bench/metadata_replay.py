"""Benchmark: decode + replay of a generated 1M-record KRaft metadata log, vs kafka-python's raw iteration.

Usage: ``python bench/metadata_replay.py [--records N] [--keep DIR] [--no-gc-pause] [--profile]``. Writes the
log into a temp dir (or DIR, reused when it already holds a log of N records) with the project's own writer
(``encode_batch`` + ``encode_metadata_record``), then measures on one core (CPU time of this process):

- decode only (``iter_metadata_log``), decode + replay (``MetadataLoader``, cyclic GC paused as ``load_metadata``
  does unless ``--no-gc-pause``), and ``load_metadata`` of the log as a lone segment (what the product runs),
  records/s;
- kafka-python ``MemoryRecords`` batch/record iteration over the same bytes (framing only, no value decoding);
- peak RSS (``resource.getrusage``) after each phase.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.kafka.gc_pause import gc_paused
from pipelines.kafka.metadata_codec import encode_metadata_record, iter_metadata_log, make_record
from pipelines.kafka.record_batch import encode_batch
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.load import load_metadata
from pipelines.metadata.loader import MetadataLoader

BROKERS = 30


def generate(path: Path, total: int, seed: int = 7) -> int:
    """Write a realistic mix; returns the record count actually written."""
    rng = random.Random(seed)
    dirs = {b: [Uuid(0x100 + b, d + 200) for d in range(2)] for b in range(BROKERS)}
    enc = encode_metadata_record
    out = open(path, "wb")  # noqa: SIM115 - closed at the end; a with-block would indent the whole generator
    offset = 0
    ts = 1_700_000_000_000

    def batch(values: list[bytes]) -> None:
        nonlocal offset, ts
        out.write(encode_batch(values, offset, epoch=3, timestamp_ms=ts))
        offset += len(values)
        ts += 7

    batch([enc(make_record("FeatureLevelRecord", name="metadata.version", feature_level=21))])
    for b in range(BROKERS):
        batch([enc(make_record("RegisterBrokerRecord", broker_id=b, broker_epoch=b + 1, log_dirs=tuple(dirs[b]),
                               fenced=False, rack=None, incarnation_id=Uuid(9, b)))])
    topics: list[tuple[Uuid, int]] = []
    noop = enc(make_record("NoOpRecord"))
    n_topics = max(1, total // 200)
    while offset < total:
        r = rng.random()
        if len(topics) < n_topics and r < 0.05:
            t = Uuid(rng.getrandbits(63) | 1 << 62, rng.getrandbits(64))
            parts = rng.choice([1, 3, 6, 12])
            values = [enc(make_record("TopicRecord", name=f"topic-{len(topics)}", topic_id=t))]
            for p in range(parts):
                reps = rng.sample(range(BROKERS), 3)
                values.append(enc(make_record("PartitionRecord", partition_id=p, topic_id=t, replicas=tuple(reps),
                                              isr=tuple(reps), leader=reps[0], leader_epoch=0, partition_epoch=0,
                                              directories=tuple(rng.choice(dirs[x]) for x in reps))))
            values.append(enc(make_record("ConfigRecord", resource_type=2, resource_name=f"topic-{len(topics)}",
                                          name="retention.ms", value="86400000")))
            topics.append((t, parts))
            batch(values)
        elif topics and r < 0.65:
            values = []
            for _ in range(rng.randint(1, 8)):
                t, parts = rng.choice(topics)
                fields = rng.choice([{"isr": (1, 2)}, {"leader": rng.randrange(BROKERS)}, {"leader": -1}, {}])
                values.append(enc(make_record("PartitionChangeRecord", partition_id=rng.randrange(parts), topic_id=t,
                                              **fields)))
            batch(values)
        elif r < 0.67:
            b = rng.randrange(BROKERS)
            batch([enc(make_record("BrokerRegistrationChangeRecord", broker_id=b, broker_epoch=b + 1,
                                   fenced=rng.choice([-1, 1]), log_dirs=()))])
        else:
            batch([noop])
    out.close()
    return offset


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def decode_only(path: Path) -> int:
    n = 0
    for _ in iter_metadata_log(path):
        n += 1
    return n


def decode_replay(path: Path, pause_gc: bool = True) -> tuple[int, MetadataLoader]:
    with gc_paused() if pause_gc else contextlib.nullcontext():
        loader = MetadataLoader(source=str(path))
        loader.replay(iter_metadata_log(path))
        loader.finish()
    return loader.records_seen, loader


def load(path: Path) -> int:
    result = load_metadata(str(path))
    assert result.complete, result.image.incomplete_reasons
    return sum(f.records for f in result.files)


def kafka_python(data: bytes) -> int:
    from kafka.record.memory_records import MemoryRecords

    records = MemoryRecords(data)
    n = 0
    while records.has_next():
        batch = records.next_batch()
        for record in batch:
            _ = record.value
            n += 1
    return n


def timed(fn, *args):
    """CPU seconds of this process (the machine is shared: wall time would measure the neighbours)."""
    start = time.process_time()
    result = fn(*args)
    return result, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the log into this dir and reuse it on the next run")
    parser.add_argument("--no-gc-pause", action="store_true", help="decode + replay with the cyclic GC on")
    parser.add_argument("--profile", action="store_true", help="cProfile decode+replay of the first 200k records")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"{0:020d}.log"
        count_file = where / "records.txt"
        if path.exists() and count_file.exists() and count_file.read_text() == str(args.records):
            print(f"reusing {path}")
        else:
            (written, gen_s) = timed(generate, path, args.records)
            count_file.write_text(str(args.records))
            print(f"generated {written:,} records in {gen_s:.1f}s CPU")
        size = path.stat().st_size
        print(f"log: {size / 2**20:.1f} MiB; RSS {peak_rss_mib():.0f} MiB")
        rows = []
        n, secs = timed(kafka_python, path.read_bytes())
        rows.append(("kafka-python raw iteration", n, secs, peak_rss_mib()))
        n, secs = timed(decode_only, path)
        rows.append(("decode (iter_metadata_log)", n, secs, peak_rss_mib()))
        (n, loader), secs = timed(decode_replay, path, not args.no_gc_pause)
        gc_note = "GC on" if args.no_gc_pause else "GC paused"
        rows.append((f"decode + replay ({gc_note})", n, secs, peak_rss_mib()))
        n, secs = timed(load, path)
        rows.append(("load_metadata (lone .log)", n, secs, peak_rss_mib()))
        image = loader.image
        print(f"image: {len(image.topics)} topics, "
              f"{sum(len(t.partitions) for t in image.topics.by_id.values())} partitions, "
              f"{len(image.brokers)} brokers, {len(loader.events)} events, {len(image.replay_errors)} replay errors")
        ref = rows[0][1] / rows[0][2]
        print(f"\n{'phase':<36}{'records':>11}{'seconds':>9}{'records/s':>12}{'vs kafka-py':>12}{'peak RSS MiB':>14}")
        for name, n, secs, rss in rows:
            rate = n / secs
            print(f"{name:<36}{n:>11,}{secs:>9.2f}{rate:>12,.0f}{rate / ref:>11.2f}x{rss:>14.0f}")
        decode_s, replay_s = rows[1][2], rows[2][2]
        print(f"\nreplay share of decode+replay: {max(0.0, replay_s - decode_s) / replay_s:.0%}")
        if args.profile:
            small = Path(tmp) / "small.log"
            small.write_bytes(path.read_bytes()[: size // 5])
            prof = cProfile.Profile()
            prof.runcall(decode_replay, small)
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
            print(buf.getvalue())


if __name__ == "__main__":
    main()
