"""``logdir-gc inventory`` end to end against ``find -printf`` on the same log dir, and the formats' ingest cost.

    .venv/bin/python bench/inventory.py [--partitions 20000] [--files 5] [--repeat 5] [--keep DIR]

Builds one log dir with ``bench/crawl.py``'s tree builder (``--kafka-like``: partition.metadata,
leader-epoch-checkpoint and segment sets by offset; 20,000 partition dirs x 5 files = 100k files by default), then
runs, as whole processes taking turns (A B A B ...):

- ``find DIR -printf '%p %s %T@\n' > FILE``: the peer (one line per file, written to a file);
- ``logdir-gc inventory DIR --out X.parquet`` (format 2, the default: the compiled writer where it is built),
  the same with ``KLGC_PURE_PYTHON=1`` (pure-Python listing, pyarrow writer: what a host without a C compiler runs)
  and ``--out X.jsonl`` (format 1).

It prints each one's median wall and CPU (user + sys) time, its peak RSS, and the median of the pair-by-pair ratios
to find (goal: format 2 <= 1.5x find, CPU and wall), with the load average before and after (the ratios are the
figures to quote on a shared machine). Then, in this process, what the crawl pays per inventory to ingest it: decode
the file to Python values, and decode + build the listing + scan to rows, per format, and the same decode for the
candidate that was not chosen (gzip'd JSON Lines with one object per partition dir, the same fields as the Parquet
rows), with the extrapolation to 2M partition dirs. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import base64
import decimal
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.crawl import build_tree  # noqa: E402

LOGDIR_GC = str(Path(sys.executable).with_name("logdir-gc"))


def run_process(argv: list[str], stdout_path: Path | None = None, env: dict[str, str] | None = None
                ) -> tuple[float, float, float]:  # fmt: skip
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MiB) of one whole process (its output to
    ``stdout_path`` or discarded)."""
    t0 = time.perf_counter()
    with open(stdout_path or os.devnull, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 3):
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def interleaved(commands: dict[str, Callable[[], tuple[float, float]]], repeat: int) -> dict[str, list]:
    """Each command once as warm-up, then ``repeat`` rounds of every command in turn."""
    for fn in commands.values():
        fn()
    out: dict[str, list] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, fn in commands.items():
            out[name].append(fn())
    return out


def best_of(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _jsonl_candidate(parquet: Path, out: Path) -> None:
    """The same rows as gzip'd JSON Lines (bytes as base64): the format-2 candidate that was not chosen."""
    import pyarrow.parquet as pq

    def plain(v: object) -> object:
        if isinstance(v, bytes):
            return base64.b64encode(v).decode()
        if isinstance(v, decimal.Decimal):
            return int(v)
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    with gzip.open(out, "wt", compresslevel=6) as fh:
        for row in pq.read_table(parquet).to_pylist():
            fh.write(json.dumps({k: plain(v) for k, v in row.items() if v is not None}, separators=(",", ":")))
            fh.write("\n")


def ingest_figures(parquet: Path, jsonl: Path, candidate: Path, dirs: int, repeat: int) -> None:
    import pyarrow.parquet as pq

    from pipelines.crawl.inventory_file import read_inventory
    from pipelines.crawl.rows import RowContext, rows_for_listing
    from pipelines.crawl.rows import utc_now as now

    def decode_parquet() -> None:
        table = pq.read_table(parquet)
        for name in table.column_names:
            table.column(name).to_pylist()

    def decode_candidate() -> None:
        with gzip.open(candidate, "rt") as fh:
            for line in fh:
                json.loads(line)

    def decode_v1() -> None:
        with open(jsonl) as fh:
            for line in fh:
                json.loads(line)

    def rows(path: Path) -> Callable[[], None]:
        def run() -> None:
            inv = read_inventory(str(path))
            ctx = RowContext("r", "c", 1, inv.sections[0].root, now())
            listing = inv.sections[0].listing
            assert listing is not None
            assert len(rows_for_listing(ctx, listing).partition_dirs) == dirs

        return run

    scale = 2_000_000 / dirs
    print(f"ingest of one inventory ({dirs:,} partition dirs; best of {repeat}; x{scale:.0f} = 2M dirs):")
    for label, path, fn in (
        ("format 2, Parquet: decode", parquet, decode_parquet),
        ("candidate JSONL.gz per dir: decode", candidate, decode_candidate),
        ("format 1, JSONL per file: decode", jsonl, decode_v1),
        ("format 2: read_inventory + rows", parquet, rows(parquet)),
        ("format 1: read_inventory + rows", jsonl, rows(jsonl)),
    ):
        t = best_of(repeat, fn)
        print(f"  {label:38s} {t:6.3f}s  ({path.stat().st_size / 1e6:5.1f} MB)  2M dirs: {t * scale:6.0f} s CPU")


def _load(avg: tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in avg)


def _writer(path: Path) -> str:
    """Which writer made a format-2 file: the compiled one (``kafka-logdir-gc``) or pyarrow (``parquet-cpp``)."""
    import pyarrow.parquet as pq

    created_by = pq.ParquetFile(path).metadata.created_by
    return "compiled writer" if created_by.startswith("kafka-logdir-gc") else f"pyarrow ({created_by})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--files", type=int, default=5, help="files per partition dir, partition.metadata included")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="build the tree here and keep it (or reuse the tree already there)")
    args = ap.parse_args()

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="inventory-bench-"))
    try:
        if (base / "tree").is_dir():
            logdir = sorted((base / "tree").iterdir())[0]
            print(f"tree: reusing {logdir}")
        else:
            t = time.perf_counter()
            logdir = build_tree(base / "tree", 1, args.partitions, args.files, kafka_like=True)[0]
            print(f"tree: 1 log dir x {args.partitions:,} partition dirs x {args.files} files, built in"
                  f" {time.perf_counter() - t:.1f}s")  # fmt: skip
        out = base / "out"
        out.mkdir(exist_ok=True)
        parquet, jsonl = out / "inv.parquet", out / "inv.jsonl"
        pure = {**os.environ, "KLGC_PURE_PYTHON": "1"}
        inventory = [LOGDIR_GC, "inventory", str(logdir), "--out"]
        commands = {
            "find -printf > file": lambda: run_process(["find", str(logdir), "-printf", r"%p %s %T@\n"],
                                                       out / "find.txt"),
            "inventory (format 2)": lambda: run_process([*inventory, str(parquet)]),
            "format 2, pure Python": lambda: run_process([*inventory, str(out / "pure.parquet")], env=pure),
            "inventory (format 1)": lambda: run_process([*inventory, str(jsonl)]),
        }  # fmt: skip
        load_before = os.getloadavg()
        got = interleaved(commands, args.repeat)
        load_after = os.getloadavg()
        find = got["find -printf > file"]
        print(f"end to end, whole processes, {args.repeat} rounds taking turns (medians; ratio: median of"
              " pair-by-pair ratios to find; goal format 2 <= 1.5x, CPU and wall)")  # fmt: skip
        print(f"  load average (1, 5, 15 min): {_load(load_before)} before, {_load(load_after)} after;"
              f" {os.cpu_count()} CPUs")  # fmt: skip
        for name, runs in got.items():
            wall = statistics.median(w for w, _, _ in runs)
            cpu = statistics.median(c for _, c, _ in runs)
            rss = max(m for _, _, m in runs)
            r_wall = statistics.median(w / f[0] for (w, _, _), f in zip(runs, find, strict=True))
            r_cpu = statistics.median(c / max(f[1], 1e-9) for (_, c, _), f in zip(runs, find, strict=True))
            print(f"  {name:24s} wall {wall:6.3f}s ({r_wall:4.2f}x)  CPU {cpu:6.3f}s ({r_cpu:4.2f}x)"
                  f"  peak RSS {rss:5.0f} MiB")  # fmt: skip
        floor = run_process(["true"])[2]
        print(f"  peak RSS floor: {floor:.0f} MiB (a child counts this process's pages until its exec)")
        print(f"  format 2 written by: {_writer(parquet)} (pure Python: {_writer(out / 'pure.parquet')})")
        candidate = out / "inv-per-dir.jsonl.gz"
        _jsonl_candidate(parquet, candidate)
        ingest_figures(parquet, jsonl, candidate, args.partitions, max(1, args.repeat // 2))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
