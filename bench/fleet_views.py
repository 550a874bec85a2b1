"""Fleet views at scale: ``python bench/fleet_views.py [--clusters 50] [--dirs 2000000] [--runs 2] [--work DIR]``.

Builds one warehouse of ``--clusters`` clusters holding ``--dirs`` partition dirs in each cluster's newest run,
with the fleet bench's shape (``bench/fleet.py``: two log dirs per broker, 100,000 topics, replication 3, 95% live
dirs and 5% leftovers of deleted topics, ``-stray`` and old ``-delete`` dirs in its 3:1:1 mix, the same partition
count and topic ids), spread over the clusters: cluster k has brokers 1..N/clusters and every topic t with
t % clusters == k. ``--runs`` crawl runs per cluster a day apart (the older ones 2% smaller), each with its
``log_dirs``, ``partition_dirs``, ``findings`` and ``crawl_runs`` rows and a GC plan of its plannable leftovers
(``gc_plans``, ``gc_plan_items``, a ``register`` audit row; older plans superseded).

The tables are written directly with delta-rs (one commit per cluster and run, as the nightly pipelines would,
then a checkpoint): running the Spark pipeline 50 times over 2M dirs would take hours on 2 cores. The controller
and ``metadata_events`` tables are not written: no fleet view reads them.

Then, each in a fresh process: the imports alone (the floor the machine's load sets), ``logdir-gc report`` for
the fleet, the capacity notebook's fleet view executed headless with nbclient (kernel included), and ``logdir-gc
plans list``: wall time and peak RSS (the largest process: for the notebook, its kernel), and the load average
around each. Goals: report and notebook <= 30 s and <= 1 GiB, plans list <= 2 s. The last line is JSON.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import fleet as fb  # noqa: E402  (bench/fleet.py: the fleet's shape, names and ids)

GOALS = {"report_wall_s": 30.0, "report_rss_mib": 1024, "notebook_wall_s": 30.0, "notebook_rss_mib": 1024,
         "plans_list_wall_s": 2.0}
MIB = 1 << 20


def _cluster_dirs(k: int, clusters: int, dirs: int, brokers: int) -> dict[str, np.ndarray]:
    """Cluster ``k``'s partition dirs as numpy columns: broker, log dir index, topic index, partition, kind (0 live,
    1 deleted topic, 2 stray, 3 delete). Live: the replicas of a ``dirs / 2M`` share of its topics' partitions (all
    of them at 2M dirs), spread over its brokers; leftovers: 5% of the dirs, as in ``bench/fleet.py``."""
    share = min(dirs / fb.FULL_FLEET, 1.0)
    total = fb._partitions()
    topics = np.arange(k, fb.TOPICS, clusters)
    parts = np.array([fb._topic_parts(int(t), total) for t in topics])
    topic_of = np.repeat(topics, parts)
    partition = np.concatenate([np.arange(p) for p in parts])
    i = np.arange(len(topic_of), dtype=np.int64)
    sel = (i * 0x9E3779B1) % 2**32 < int(share * 2**32)
    topic_of, partition, i = topic_of[sel], partition[sel], i[sel]
    step = max(1, brokers // fb.REPLICATION)
    rep = np.stack([(i + r * step) % brokers + 1 for r in range(fb.REPLICATION)], 1)
    live = {"broker": rep.ravel(), "log_dir": np.repeat(i % fb.LOG_DIRS, fb.REPLICATION),
            "topic": np.repeat(topic_of, fb.REPLICATION), "partition": np.repeat(partition, fb.REPLICATION),
            "kind": np.zeros(rep.size, np.int8)}
    j = np.arange(round(rep.size * fb.LEFTOVER_SHARE / (1 - fb.LEFTOVER_SHARE)))
    left = {"broker": j % brokers + 1, "log_dir": (j // brokers) % fb.LOG_DIRS,
            "topic": (j * clusters + k) % fb.DELETED_TOPICS, "partition": j // fb.DELETED_TOPICS,
            "kind": np.array([1, 1, 1, 2, 3], np.int8)[j % 5]}
    return {c: np.concatenate([live[c], left[c]]) for c in live}


_KINDS = np.array(["live", "live", "stray", "delete"])
_CLASSES = np.array(["ok", "deleted_topic", "stray", "stuck_delete"])


def _tables(cluster: str, k: int, run_id: str, at: datetime, d: dict[str, np.ndarray], brokers: int,
            scale: float) -> dict[str, pa.Table]:
    """One run's rows of every table the fleet views read."""
    n = len(d["broker"])
    topic_name = np.where(d["kind"] == 0, np.char.add("t-", np.char.zfill(d["topic"].astype(str), 6)),
                          np.char.add("gone-", np.char.zfill(d["topic"].astype(str), 5)))
    base = np.char.add(np.char.add(topic_name, "-"), d["partition"].astype(str))
    uid = np.char.zfill(np.arange(n).astype(str), 32)
    suffix = np.where(d["kind"] == 2, "-stray", np.where(d["kind"] == 3, "-delete", ""))
    dir_name = np.where(d["kind"] >= 2, np.char.add(np.char.add(np.char.add(base, "."), uid), suffix), base)
    log_bytes = ((1 + d["topic"] % 97) * MIB * scale).astype(np.int64)
    size = log_bytes + 20 * MIB + 64
    roots = np.array(fb.ROOTS)
    log_dir = roots[d["log_dir"]]
    garbage = d["kind"] > 0
    common = {"run_id": pa.array([run_id] * n), "cluster": pa.array([cluster] * n),
              "broker_id": pa.array(d["broker"].astype(np.int32)), "log_dir": pa.array(log_dir),
              "dir_name": pa.array(dir_name), "topic": pa.array(topic_name), "partition": pa.array(
                  d["partition"].astype(np.int32)), "bytes": pa.array(size)}
    fp = pa.array(np.char.add("sha256-", np.char.zfill(np.arange(n).astype(str), 57)))
    crawled = pa.array([at] * n, pa.timestamp("us", tz="UTC"))
    dirs = pa.table({**common, "kind": pa.array(_KINDS[d["kind"]]), "files": pa.array(np.full(n, 5, np.int32)),
                     "log_bytes": pa.array(log_bytes), "index_bytes": pa.array(np.full(n, 20 * MIB, np.int64)),
                     "segment_count": pa.array(np.ones(n, np.int32)), "partition_metadata_status": pa.array(
                         ["ok"] * n), "fingerprint": fp, "crawled_at": crawled})
    since = pa.array([at - timedelta(days=30)] * n, pa.timestamp("us", tz="UTC"))
    evidence = pa.array(np.char.add('{"disk": {"partition_metadata_status": "ok", "topic_id": "',
                                    np.char.add(uid, '"}, "image": {"complete": true}}')))
    findings = pa.table({**common, "class": pa.array(_CLASSES[d["kind"]]), "protected": pa.array(np.zeros(n, bool)),
                         "reason": pa.array(np.where(garbage, "the controller has no such topic id", "")),
                         "kind": dirs["kind"], "plannable": pa.array(garbage), "evidence": evidence,
                         "garbage_since": since, "fingerprint": fp, "detected_at": crawled})
    b, ld = np.repeat(np.arange(1, brokers + 1), fb.LOG_DIRS), np.tile(np.arange(fb.LOG_DIRS), brokers)
    attributed = np.zeros(len(b), np.int64)
    np.add.at(attributed, (d["broker"] - 1) * fb.LOG_DIRS + d["log_dir"], size)
    log_dirs = pa.table({"run_id": pa.array([run_id] * len(b)), "cluster": pa.array([cluster] * len(b)),
                         "broker_id": pa.array(b.astype(np.int32)), "log_dir": pa.array(roots[ld]),
                         "fs_total_bytes": pa.array(np.full(len(b), 16 << 40, np.int64)),
                         "fs_used_bytes": pa.array(attributed + (k + 1) * (1 << 30)),
                         "fs_free_bytes": pa.array((16 << 40) - attributed - (k + 1) * (1 << 30)),
                         "attributed_bytes": pa.array(attributed), "crawled_at": pa.array(
                             [at] * len(b), pa.timestamp("us", tz="UTC"))})
    runs = pa.table({"run_id": [run_id], "cluster": [cluster], "started_at": pa.array([at], pa.timestamp(
        "us", tz="UTC")), "status": ["succeeded"], "source": ["inventory"], "brokers": pa.array([brokers], pa.int32()),
        "log_dirs": pa.array([len(b)], pa.int32()), "partition_dirs": pa.array([n], pa.int64()),
        "bytes": pa.array([int(size.sum())], pa.int64())})
    return {"partition_dirs": dirs, "findings": findings, "log_dirs": log_dirs, "crawl_runs": runs}


def _plan_tables(cluster: str, run_id: str, at: datetime, findings: pa.Table, newest: bool) -> dict[str, pa.Table]:
    from pipelines.config.models import PolicyConfig
    from pipelines.plan.approval import plan_item_table, plan_table
    from pipelines.plan.model import GcPlan, PlanItem

    rows = findings.filter(findings["plannable"]).select(
        ["broker_id", "log_dir", "dir_name", "topic", "partition", "class", "bytes", "fingerprint", "reason"])
    items = tuple(PlanItem.model_validate({**r, "item_id": f"{r['broker_id']}:{r['log_dir']}:{r['dir_name']}"})
                  for r in rows.to_pylist())
    plan = GcPlan(plan_id=f"plan-{run_id}", cluster=cluster, created_at=at, created_by="bench", run_id=run_id,
                  items=items).with_hash()
    gc_plans = plan_table(plan, PolicyConfig(), at=at)
    if not newest:
        gc_plans = gc_plans.set_column(gc_plans.schema.get_field_index("status"), "status",
                                       pa.array(["superseded"]))
    audit = pa.table({"plan_id": [plan.plan_id], "at": pa.array([at], pa.timestamp("us", tz="UTC")),
                      "actor": ["bench"], "action": ["register"], "from_status": pa.array([None], pa.string()),
                      "to_status": ["proposed"], "comment": [""], "content_hash": [plan.content_hash]})
    return {"gc_plan_items": plan_item_table(plan), "gc_plan_audit": audit, "gc_plans": gc_plans}


def build(warehouse: Path, clusters: int, dirs: int, runs: int) -> dict[str, int]:
    """Write the fleet warehouse; returns row counts per table."""
    from pipelines.tables.rust_engine import RustTableStore
    from pipelines.tables.schemas import ALL_TABLES

    store = RustTableStore(str(warehouse), allow_foreign_tables=True)
    for name in ("crawl_runs", "log_dirs", "partition_dirs", "findings", "gc_plans", "gc_plan_items",
                 "gc_plan_audit", "gc_plan_signatures"):
        store.create_if_missing(ALL_TABLES[name])
    counts: dict[str, int] = {}
    brokers = fb.BROKERS // clusters
    t0 = time.perf_counter()
    for k in range(clusters):
        cluster = f"fleet-{k:03d}"
        d = _cluster_dirs(k, clusters, dirs, brokers)
        for r in range(runs):
            at = fb.NOW - timedelta(days=runs - 1 - r)
            run_id = f"{at:%Y%m%dT%H%M%SZ}-{k:08x}"
            newest = r == runs - 1
            tables = _tables(cluster, k, run_id, at, d, brokers, 1.0 if newest else 0.98)
            tables |= _plan_tables(cluster, run_id, at, tables["findings"], newest)
            for name, rows in tables.items():
                store.append(name, rows)
                counts[name] = counts.get(name, 0) + rows.num_rows
        print(f"  cluster {k + 1}/{clusters}: {len(d['broker']):,} dirs per run, {time.perf_counter() - t0:.0f}s",
              file=sys.stderr, flush=True)
    from deltalake import DeltaTable

    for name in counts:  # as the Spark writers would have: a checkpoint, so that readers skip the commit JSONs
        DeltaTable(store.table_uri(name)).create_checkpoint()
    return counts


def _measure(argv: list[str], cwd: Path | None = None) -> dict[str, float]:
    """Wall seconds and peak RSS (MiB, the largest process of the tree that was waited for) of one command."""
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    # the peak of the largest process of the tree: the kernel keeps, for a reaped child, the larger of its own
    # peak and its reaped descendants' (this probe process runs nothing else)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed ({proc.returncode}): {err.strip()[-2000:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "rss_mib": round(rss),
            "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2), "stdout": out.strip().splitlines()[-1] if out.strip() else ""}


_NOTEBOOK = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.analytics.notebook_runner import run_notebook
run_notebook(Path({repo!r}) / "notebooks" / "capacity_analysis.ipynb",
             {{"warehouse": {warehouse!r}, "cluster": None, "run_id": None, "figures_out": {out!r}}}, timeout=600)
"""


def measure(warehouse: Path, work: Path) -> dict[str, dict[str, float]]:
    """Each view in a fresh child, one after another (RUSAGE_CHILDREN only grows: each child is measured by a
    child of its own)."""
    cli = [sys.executable, "-m", "pipelines.cli.main"]
    probes = {
        "startup": [sys.executable, "-c", "import pandas, pyarrow, deltalake, pipelines.cli.main"],  # the floor
        "report": [*cli, "report", "--warehouse", str(warehouse), "--out", str(work / "fleet.html")],
        "notebook": [sys.executable, "-c", _NOTEBOOK.format(repo=str(REPO), warehouse=str(warehouse),
                                                            out=str(work / "fleet.json"))],
        "plans_list": [*cli, "plans", "list", "--warehouse", str(warehouse)],
    }
    out = {}
    for name, argv in probes.items():
        child = subprocess.run([sys.executable, __file__, "--probe", json.dumps(argv)], capture_output=True,
                               text=True, check=False, cwd=REPO)
        if child.returncode != 0:
            raise SystemExit(f"{name} failed: {child.stderr.strip()[-2000:]}")
        out[name] = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"  {name}: {out[name]['wall_s']}s ({out[name]['cpu_s']} s CPU), peak RSS {out[name]['rss_mib']} MiB "
              f"(load "
              f"{out[name]['load_before']} -> {out[name]['load_after']}): {out[name]['stdout'][:150]}",
              file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=50)
    ap.add_argument("--dirs", type=int, default=fb.FULL_FLEET, help="partition dirs in the newest runs, all clusters")
    ap.add_argument("--runs", type=int, default=2, help="crawl runs per cluster")
    ap.add_argument("--work", help="keep the warehouse here (reused when it exists); default a temp dir, removed")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        print(json.dumps(_measure(json.loads(args.probe), cwd=REPO)))
        return 0
    work = Path(args.work or tempfile.mkdtemp(prefix="fleet-views-"))
    warehouse = work / f"warehouse-{args.clusters}x{args.dirs}x{args.runs}"
    try:
        t = time.perf_counter()
        if not (warehouse / "gc_plans").is_dir():
            shutil.rmtree(warehouse, ignore_errors=True)
            counts = build(warehouse, args.clusters, args.dirs, args.runs)
            print(f"warehouse: {counts} in {time.perf_counter() - t:.0f}s", file=sys.stderr, flush=True)
        size = sum(f.stat().st_size for f in warehouse.rglob("*") if f.is_file())
        figures = measure(warehouse, work)
        result = {"clusters": args.clusters, "dirs": args.dirs, "runs": args.runs, "warehouse_mib": round(size / MIB),
                  "cores": os.cpu_count(),
                  **{f"{name}_{k}": v[k] for name, v in figures.items() for k in ("wall_s", "cpu_s", "rss_mib")},
                  "load": max(v["load_after"] for v in figures.values())}
        result["goals_met"] = all(result[k] <= g for k, g in GOALS.items())
        print(json.dumps(result))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
