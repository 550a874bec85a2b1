"""Benchmark: decode + replay of a generated 1M-record KRaft metadata log, vs kafka-python's raw iteration.

Usage: ``python bench/metadata_replay.py [--records N] [--keep DIR] [--no-gc-pause] [--profile] [--no-kafka]
[--no-pure]``.
Writes the log into a temp dir (or DIR, reused when it already holds a log of N records) with the project's own writer
(``encode_batch`` + ``encode_metadata_record``), then measures on one core (CPU time of this process):

- decode only (``iter_metadata_log``), decode + replay (``MetadataLoader``, cyclic GC paused as ``load_metadata``
  does unless ``--no-gc-pause``), and ``load_metadata`` of the log as a lone segment (what the product runs),
  records/s;
- the same three phases in pure Python: a child process with ``KLGC_PURE_PYTHON=1`` (no compiled module is
  loaded, the fast constructors included), so the compiled/pure ratio of each phase is printed;
- kafka-python ``MemoryRecords`` batch/record iteration over the same bytes (framing only, no value decoding);
- peak RSS (``resource.getrusage``) after each phase;
- Apache Kafka's own decoder as a peer: ``DumpLogSegments --cluster-metadata-decoder`` from the cached 4.3.1 jars
  (``tests/kafka_cluster/jars.py``), stdout to /dev/null, timed as a whole JVM process (wall, and the child's CPU
  from ``RUSAGE_CHILDREN`` deltas, so JIT and GC threads count). It decodes and prints every record as JSON but
  replays nothing. JVM start-up is measured on a tiny log and subtracted in a second row. Skipped with a printed
  reason when Java or the cached jars are missing (``python tests/kafka_cluster/jars.py 4.3.1`` resolves them).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines import native
from pipelines.kafka.fast_init import NATIVE as FASTINIT_NATIVE
from pipelines.kafka.gc_pause import gc_paused
from pipelines.kafka.metadata_codec import encode_metadata_record, make_record
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.metadata_native import MODULE as METADATA_NATIVE
from pipelines.kafka.record_batch import encode_batch
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.loader import MetadataLoader
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.native import PURE_PYTHON_ENV

BROKERS = 30
KAFKA_VERSION = "4.3.1"
JVM_OPTS = ("-Xmx1g", "-XX:+UseSerialGC")
TINY_RECORDS = 100


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
    """This process's peak RSS: VmHWM (per address space, so a child started by exec does not inherit its parent's
    high-water mark, as ``ru_maxrss`` does on Linux), else ``getrusage``."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
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


def kafka_dump_log_cmd() -> tuple[list[str] | None, str]:
    """The ``java ... DumpLogSegments --cluster-metadata-decoder --files`` prefix, or None and why not."""
    if shutil.which("java") is None:
        return None, "java not on PATH"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kafka_cluster"))
    from jars import CACHE, JarsUnavailable, resolve

    if not (CACHE / KAFKA_VERSION / ".complete").exists():
        return None, f"Kafka {KAFKA_VERSION} jars not cached in {CACHE} (python tests/kafka_cluster/jars.py)"
    try:
        jars = resolve(KAFKA_VERSION)
        main_class = jars.dump_log
    except JarsUnavailable as exc:
        return None, str(exc)
    # log4j2 finds no configuration on this classpath and says so on stderr; the status logger is silenced
    return ["java", *JVM_OPTS, "-Dlog4j2.StatusLogger.level=OFF", "-cp", jars.classpath, main_class,
            "--cluster-metadata-decoder", "--files"], f"Kafka {KAFKA_VERSION} {main_class}"


def time_process(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, child CPU s, child peak RSS MiB) of one process, stdout discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[-1]}: exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def timed(fn, *args):
    """CPU seconds of this process (the machine is shared: wall time would measure the neighbours)."""
    start = time.process_time()
    result = fn(*args)
    return result, time.process_time() - start


def kafka_peer(where: Path, records: int, path: Path, disabled: bool, rows: list) -> str:
    """Append Kafka's DumpLogSegments rows (whole JVM, then start-up subtracted) to ``rows``; returns a note."""
    if disabled:
        return "Kafka's decoder: skipped (--no-kafka)"
    cmd, why = kafka_dump_log_cmd()
    if cmd is None:
        return f"Kafka's decoder: skipped ({why})"
    tiny = where / "tiny" / f"{0:020d}.log"
    tiny.parent.mkdir(exist_ok=True)
    tiny_n = generate(tiny, TINY_RECORDS)
    time_process([*cmd, str(tiny)])  # warm the page cache for the jars
    t_wall, t_cpu, _ = time_process([*cmd, str(tiny)])
    wall, cpu, rss = time_process([*cmd, str(path)])
    rows.append((f"Kafka {KAFKA_VERSION} dump-log (whole JVM)", records, cpu, cpu, rss))
    net_n, net_cpu, net_wall = records - tiny_n, cpu - t_cpu, wall - t_wall
    rows.append((f"Kafka {KAFKA_VERSION} dump-log (start-up subtracted)", net_n, net_cpu, net_cpu, rss))
    return (f"{why} {' '.join(JVM_OPTS)}: wall {wall:.2f}s ({records / wall:,.0f} records/s), "
            f"child CPU {cpu:.2f}s; JVM start-up on a {tiny_n}-record log: wall {t_wall:.2f}s, CPU {t_cpu:.2f}s; "
            f"start-up subtracted: wall {net_wall:.2f}s ({net_n / net_wall:,.0f} records/s). "
            "It decodes and prints JSON; it replays nothing.")


def repeated(fn, repeat: int, *args):
    """(result of the last run, best CPU s, median CPU s) over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        result, secs = timed(fn, *args)
        times.append(secs)
    return result, min(times), statistics.median(times)


def our_phases(path: Path, pause_gc: bool, repeat: int) -> tuple[list[tuple], MetadataLoader]:
    """decode, decode + replay, load_metadata: (name, records, best CPU s, median CPU s, peak RSS MiB) rows."""
    rows = []
    n, best, median = repeated(decode_only, repeat, path)
    rows.append(("decode (iter_metadata_log)", n, best, median, peak_rss_mib()))
    (n, loader), best, median = repeated(decode_replay, repeat, path, pause_gc)
    gc_note = "GC paused" if pause_gc else "GC on"
    rows.append((f"decode + replay ({gc_note})", n, best, median, peak_rss_mib()))
    n, best, median = repeated(load, repeat, path)
    rows.append(("load_metadata (lone .log)", n, best, median, peak_rss_mib()))
    return rows, loader


def pure_python_rows(path: Path, pause_gc: bool, repeat: int) -> tuple[list[tuple], str]:
    """``our_phases`` in a child process with ``KLGC_PURE_PYTHON=1`` (the compiled code is then never loaded, the
    fast constructors included); the child's own CPU time and peak RSS."""
    env = dict(os.environ, **{PURE_PYTHON_ENV: "1"})
    cmd = [sys.executable, __file__, "--child-phases", str(path), "--repeat", str(repeat)]
    cmd += [] if pause_gc else ["--no-gc-pause"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return [], f"pure-Python child failed: {proc.stderr[-1500:]}"
    out = json.loads(proc.stdout.splitlines()[-1])
    return [(f"{row[0]} [pure Python]", *row[1:]) for row in out["rows"]], out["note"]


def child_phases(path: Path, pause_gc: bool, repeat: int) -> None:
    rows, _ = our_phases(path, pause_gc, repeat)
    note = "compiled code loaded: " + ", ".join(compiled_modules()) if compiled_modules() else "no compiled code"
    print(json.dumps({"rows": rows, "note": note}))


def compiled_modules() -> list[str]:
    return [name for name in (METADATA_NATIVE, FASTINIT_NATIVE) if native.load(name) is not None]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the log into this dir and reuse it on the next run")
    parser.add_argument("--no-gc-pause", action="store_true", help="decode + replay with the cyclic GC on")
    parser.add_argument("--profile", action="store_true", help="cProfile decode+replay of the first 200k records")
    parser.add_argument("--no-kafka", action="store_true", help="skip Kafka's own decoder (a JVM per run)")
    parser.add_argument("--no-pure", action="store_true", help="skip the pure-Python rows (KLGC_PURE_PYTHON=1)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each of our phases (best and median shown)")
    parser.add_argument("--child-phases", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_phases:
        child_phases(args.child_phases, not args.no_gc_pause, args.repeat)
        return
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
        print(f"log: {size / 2**20:.1f} MiB; RSS {peak_rss_mib():.0f} MiB; "
              f"compiled: {', '.join(compiled_modules()) or 'none (pure Python)'}")
        rows = []
        data = path.read_bytes()
        n, best, median = repeated(kafka_python, args.repeat, data)
        del data
        rows.append(("kafka-python raw iteration", n, best, median, peak_rss_mib()))
        ours, loader = our_phases(path, not args.no_gc_pause, args.repeat)
        rows += ours
        pure_note = "pure-Python rows: skipped (--no-pure)"
        if not args.no_pure:
            pure, pure_note = pure_python_rows(path, not args.no_gc_pause, args.repeat)
            rows += pure
            pure_note = f"pure-Python rows: a child process with {PURE_PYTHON_ENV}=1 ({pure_note})"
        image = loader.image
        print(f"image: {len(image.topics)} topics, "
              f"{sum(len(t.partitions) for t in image.topics.by_id.values())} partitions, "
              f"{len(image.brokers)} brokers, {len(loader.events)} events, {len(image.replay_errors)} replay errors")
        kafka_note = kafka_peer(where, n, path, args.no_kafka, rows)
        ref = rows[0][1] / rows[0][2]
        by_name = {row[0]: row[1] / row[2] for row in rows}
        ours_rate = rows[2][1] / rows[2][2]
        print(f"\n{'phase (records/s from the best of ' + str(args.repeat) + ' runs)':<58}{'records':>11}{'CPU s':>7}"
              f"{'median':>7}{'records/s':>11}{'vs kafka-py':>12}{'vs ours':>8}{'vs pure':>8}{'peak RSS MiB':>13}")
        for name, n, best, median, rss in rows:
            rate = n / best
            pure_rate = by_name.get(f"{name} [pure Python]")
            vs_pure = f"{rate / pure_rate:>7.2f}x" if pure_rate else f"{'':>8}"
            print(f"{name:<58}{n:>11,}{best:>7.2f}{median:>7.2f}{rate:>11,.0f}{rate / ref:>11.2f}x"
                  f"{rate / ours_rate:>7.2f}x{vs_pure}{rss:>13.0f}")
        print("('vs ours' = against decode + replay; 'vs pure' = compiled against the same phase in pure Python;\n"
              " CPU of this process, of the child for the pure-Python rows, of the JVM child for Kafka's rows;\n"
              " peak RSS is the process high-water mark so far, so it only grows down the table)")
        print(pure_note)
        print(kafka_note)
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
