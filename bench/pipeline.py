"""Crawl → plan wall time and peak memory at several sizes: ``python bench/pipeline.py [--sizes 10000,100000]``.

For each size (files) it generates a cluster (10 files per partition dir, 2 JBOD dirs per broker, every anomaly),
then runs the whole pipeline (``run_pipeline``: crawl, ingest, detect, plan) in a fresh process on local Spark and
prints wall seconds, seconds per 1,000 partition dirs, and the peak RSS of the Python driver and of the driver
JVM. Not a test: nothing is asserted. Generated data goes under a temp dir (``--out``) and is removed unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHILD = """
import json, resource, sys, time
from datetime import datetime, timezone
from pipelines.config import load_config
from pipelines.orchestrate import run_pipeline
config = load_config(sys.argv[1])
t = time.perf_counter()
report = run_pipeline(config, "bench", created_by="bench", progress=lambda line: print(line, file=sys.stderr))
wall = time.perf_counter() - t
from pyspark import SparkContext
jvm_hwm_kib = 0
with open(f"/proc/{SparkContext._gateway.proc.pid}/status") as status:  # the driver JVM's peak RSS
    for line in status:
        if line.startswith("VmHWM:"):
            jvm_hwm_kib = int(line.split()[1])
steps = {s.step: s.counts for s in report.steps}
print(json.dumps({"wall": wall, "dirs": steps["detect"]["dirs"], "files": steps["crawl"]["files"],
                  "driver_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "jvm_rss_kib": jvm_hwm_kib}))
"""


def run_size(files: int, out: Path) -> dict:
    from pipelines.simulate import PRESETS, ClusterSpec, generate

    brokers, replication, jbod, per_dir = 3, 3, 2, 10
    partitions = max(1, files // (per_dir * replication * 10))
    spec = ClusterSpec(brokers=brokers, topics=10, partitions_per_topic=partitions, replication=replication,
                       jbod_dirs=jbod, anomalies=PRESETS["all"], files_per_partition=per_dir,
                       now_ms=int(time.time() * 1000))
    target = out / f"size-{files}"
    t = time.perf_counter()
    result = generate(spec, target, warehouse=str(target / "warehouse"), force=True)
    generated = time.perf_counter() - t
    proc = subprocess.run([sys.executable, "-c", CHILD, str(result.config_path)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"pipeline failed at {files} files:\n{proc.stderr[-3000:]}")
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    figures["generated_s"] = generated
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="file counts, e.g. 10000,100000,1000000")
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="klgc-bench-"))
    rows = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            f = run_size(size, out)
            rows.append((size, f))
            print(f"{f['files']:>10,} files {f['dirs']:>8,} dirs  wall {f['wall']:7.1f}s"
                  f"  {1000 * f['wall'] / max(f['dirs'], 1):6.2f}s/1k dirs"
                  f"  Python driver {f['driver_rss_kib'] / 1024:5.0f} MiB"
                  f"  JVM driver {f['jvm_rss_kib'] / 1024:5.0f} MiB"
                  f"  (generate {f['generated_s']:.0f}s)", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    if len(rows) > 1:
        (s0, f0), (s1, f1) = rows[0], rows[-1]
        per0, per1 = f0["wall"] / max(f0["dirs"], 1), f1["wall"] / max(f1["dirs"], 1)
        print(f"ratio {s1:,} vs {s0:,} files: per-dir cost x{per1 / per0:.2f}, "
              f"Python driver RSS x{f1['driver_rss_kib'] / f0['driver_rss_kib']:.2f}, "
              f"JVM driver RSS x{f1['jvm_rss_kib'] / max(f0['jvm_rss_kib'], 1):.2f}")


if __name__ == "__main__":
    main()
