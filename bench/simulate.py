"""Benchmark the cluster simulator at scale: ``python bench/simulate.py [--partitions N] [--files F] [--out DIR]``.

Writes about partitions * replication * files files (1M by default) and prints the rate for each phase. Not a test:
no assertion on time. The output dir is removed afterwards unless --keep is given.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.simulate import PRESETS, ClusterSpec, generate, summarize
from pipelines.simulate.scenario import build_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=10_000, help="per topic")
    parser.add_argument("--replication", type=int, default=1)
    parser.add_argument("--jbod", type=int, default=2)
    parser.add_argument("--files", type=int, default=10, help="files per partition dir")
    parser.add_argument("--out", default=None, help="default: a temp dir under $TMPDIR")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    spec = ClusterSpec(brokers=args.brokers, topics=args.topics, partitions_per_topic=args.partitions,
                       replication=args.replication, jbod_dirs=args.jbod, anomalies=PRESETS["all"],
                       files_per_partition=args.files, segment_bytes=1 << 30, now_ms=int(time.time() * 1000))
    t = time.perf_counter()
    scenario = build_scenario(spec)
    plan_s = time.perf_counter() - t
    print(f"plan: {len(scenario.dirs):,} dirs, {len(scenario.log.batches):,} metadata batches in {plan_s:.1f}s")
    out = Path(args.out or tempfile.mkdtemp(prefix="logdir-gc-sim-")) / "cluster"
    result = generate(spec, out)
    print(summarize(result))
    print(f"RESULT files={result.files} seconds={result.seconds:.1f} files_per_s={result.files_per_second:,.0f} "
          f"cpus={os.cpu_count()}")
    if not args.keep:
        t = time.perf_counter()
        shutil.rmtree(out.parent if args.out is None else out)
        print(f"cleanup {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":
    main()
