"""Benchmark: ``logdir-gc metadata show`` end to end against its peers, on one generated log, in one run.

Usage: ``python bench/cli.py [--records 321000] [--topics 19250] [--repeat 3] [--keep DIR] [--no-kafka]``.

Builds a KRaft metadata log with the project's simulator and encoder (``bench/cli_log.py``: by default about
321k records and 19k live topics, the shape issue 17 measured), then times whole processes, interleaved round by
round so a drifting machine hits every command alike:

- kafka-python's raw batch iteration of the file (a fresh interpreter: import, read, iterate every record);
- ``logdir-gc metadata show`` (the summary), ``--json`` and ``--records``, output written to a file;
- Apache Kafka's ``DumpLogSegments --cluster-metadata-decoder`` on the same file, a whole JVM (start-up included),
  when Java and the cached jars are there (``python tests/kafka_cluster/jars.py 4.3.1``).

Each process's wall time, its own CPU time and peak RSS come from ``os.wait4`` (Linux starts a child's peak RSS at
its parent's, so the log is generated in a separate process and this one stays small); the table shows medians and,
per command, the median of the per-round ratios to kafka-python's wall time (what a user waits for, output written to
the end) with the CPU-time ratio beside it, and for ``--records`` to Kafka's wall time, next to the goals of issue 30
(summary 1.5x, ``--json`` 3x, ``--records`` 0.8x Kafka's), with the load average seen between rounds. Absolute
figures drift with the shared machine; the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_log import write_log  # noqa: E402
from metadata_replay import kafka_dump_log_cmd  # noqa: E402

KAFKA_PYTHON = """
import sys
from kafka.record.memory_records import MemoryRecords
with open(sys.argv[1], "rb") as f:
    records = MemoryRecords(f.read())
n = 0
while records.has_next():
    for record in records.next_batch():
        _ = record.value
        n += 1
print(n)
"""


def run_once(cmd: list[str], out_path: Path) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MiB, output bytes) of one process, stdout to ``out_path``."""
    start = time.perf_counter()
    with open(out_path, "wb") as out:
        pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ])
        _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} ...: exit {code}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out_path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=321_000)
    parser.add_argument("--topics", type=int, default=19_250, help="topics created (a few are deleted again)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; every command runs once per round")
    parser.add_argument("--keep", type=Path, help="write the log here and reuse it when it is already there")
    parser.add_argument("--no-kafka", action="store_true", help="skip Kafka's DumpLogSegments (a JVM per round)")
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        records, topics = write_log(args.generate, args.records, args.topics)
        print(f"generated {records:,} records, {topics:,} live topics")
        return
    with tempfile.TemporaryDirectory(prefix="klgc-bench-cli-") as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        log = where / f"{0:020d}.log"
        stamp = where / "shape.txt"
        shape = f"{args.records} {args.topics}"
        if not (log.exists() and stamp.exists() and stamp.read_text() == shape):
            # in a child: a child's peak RSS (wait4) starts from its parent's, which must stay small
            subprocess.run([sys.executable, __file__, "--generate", str(log), "--records", str(args.records),
                            "--topics", str(args.topics)], check=True)
            stamp.write_text(shape)
        print(f"log: {log} ({log.stat().st_size / 2**20:.1f} MiB)")
        cli = str(Path(sys.executable).with_name("logdir-gc"))
        commands: dict[str, list[str]] = {
            "kafka-python raw iteration": [sys.executable, "-c", KAFKA_PYTHON, str(log)],
            "metadata show (summary)": [cli, "metadata", "show", str(log)],
            "metadata show --json": [cli, "metadata", "show", str(log), "--json"],
            "metadata show --records": [cli, "metadata", "show", str(log), "--records"],
        }
        kafka_note = "Kafka's DumpLogSegments: skipped (--no-kafka)"
        if not args.no_kafka:
            dump, why = kafka_dump_log_cmd()
            if dump is None:
                kafka_note = f"Kafka's DumpLogSegments: skipped ({why})"
            else:
                dump[0] = shutil.which("java") or dump[0]
                commands[f"{why} --cluster-metadata-decoder"] = [*dump, str(log)]
                kafka_note = f"Kafka: {' '.join(dump[:3])} ... (whole JVM, start-up included)"
        results: dict[str, list[tuple[float, float, float, int]]] = {name: [] for name in commands}
        for cmd in commands.values():  # warm-up: page cache, jars, .pyc
            run_once(cmd, Path(tmp) / "out")
        loads = [os.getloadavg()[0]]
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                results[name].append(run_once(cmd, Path(tmp) / "out"))
            loads.append(os.getloadavg()[0])
        report(results, kafka_note, loads)


def report(results: dict[str, list[tuple[float, float, float, int]]], kafka_note: str, loads: list[float]) -> None:
    """Medians, and per command the median of the per-round ratios: wall time first (what a user waits for), CPU
    time beside it; --records also against Kafka's DumpLogSegments (wall, JVM start-up included)."""
    names = list(results)
    peer = results[names[0]]
    kafka = next((results[n] for n in names if "DumpLogSegments" in n), None)
    goals = {"metadata show (summary)": 1.5, "metadata show --json": 3.0}
    print(f"\n{'command (medians)':<62}{'wall s':>8}{'CPU s':>7}{'RSS MiB':>9}{'output MB':>11}"
          f"{'vs kafka-python: wall':>23}{'CPU':>7}{'goal':>7}")
    for name in names:
        runs = results[name]
        wall, cpu, rss, size = (statistics.median(r[i] for r in runs) for i in range(4))
        wall_ratio = statistics.median(r[0] / p[0] for r, p in zip(runs, peer, strict=True))
        cpu_ratio = statistics.median(r[1] / p[1] for r, p in zip(runs, peer, strict=True))
        goal = goals.get(name)
        print(f"{name:<62}{wall:>8.2f}{cpu:>7.2f}{rss:>9.0f}{size / 1e6:>11.1f}{wall_ratio:>22.2f}x"
              f"{cpu_ratio:>6.2f}x{f'{goal:.1f}x' if goal else '':>7}")
    if kafka is not None:
        ours = results["metadata show --records"]
        ratios = sorted(r[0] / k[0] for r, k in zip(ours, kafka, strict=True))
        cpus = sorted(r[1] / k[1] for r, k in zip(ours, kafka, strict=True))
        print(f"--records vs Kafka's DumpLogSegments (JVM start-up included): wall {statistics.median(ratios):.2f}x "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f}; goal <= 0.8x), CPU {statistics.median(cpus):.2f}x")
    print(f"rounds: {len(peer)}, each command once per round in turn; load average {min(loads):.1f}-{max(loads):.1f}")
    print("--json peak RSS goal: <= 300 MiB")
    print(kafka_note)


if __name__ == "__main__":
    main()
