"""``logdir-gc run`` end to end beside the floor of any Spark-native tool: ``python bench/pipeline.py [--sizes ...]``.

For each size (files) it generates a cluster (10 files per partition dir, 2 JBOD dirs per broker, every anomaly),
runs ``logdir-gc run`` once to create the tables, then ``--repeat`` times in turn: the floor job (a fresh process
that starts local Spark with the Delta jars through ``build_spark``, writes one row to a Delta table and stops), the
same without the driver's class archive (``KLGC_CLASS_ARCHIVE=off``: the floor of a Spark tool that has none) and
the whole ``logdir-gc run`` command in a fresh process. Printed per size: wall seconds (median), the ratios
run / floor of wall and of CPU time (the process and every descendant it leaves, the JVM included) pair by pair,
medians and ranges, first to the floor without the archive (issue 30's goal: wall <= 2x), the load average,
seconds per 1,000 partition dirs, the peak RSS of the Python driver and of the driver JVM, the time of each step,
every Spark job of the last run (from the session's own event log, each job tagged with the step that ran it), and
the Delta log versions the run wrote per table. Not a test: nothing is asserted. Generated data goes under a temp
dir (``--out``) and is removed unless ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FLOOR = """
import sys
from pathlib import Path
from pipelines.tables.spark_session import build_spark
out, events = Path(sys.argv[1]), sys.argv[2]
spark = build_spark("klgc-bench-floor", conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": events,
                                              "spark.eventLog.compress": "false",
                                              "spark.eventLog.rolling.enabled": "false"},
                    log_file=out / "floor-spark.log")
spark.createDataFrame([(1, "x")], "id int, value string").write.format("delta").mode("append").save(str(out / "floor"))
spark.stop()
"""

STEP_LINE = re.compile(r"(?:\[\d+/\d+\] )?(\w[\w ]*?) done in ([0-9.]+)s")
STEP_PROPERTY = "logdir_gc.step"  # the local property the pipeline tags each step's Spark jobs with


@dataclass
class Figures:
    """One whole process: wall seconds, peak RSS of the process and of the JVM it started."""

    wall: float
    driver_rss_kib: int
    jvm_rss_kib: int
    cpu: float = 0.0
    """User + system seconds of the process and of every descendant reaped after it (the JVM, Python workers)."""
    load: float = 0.0
    """The 1-minute load average when the process ended."""
    steps: dict[str, float] = field(default_factory=dict)
    stderr: str = ""


def _become_subreaper() -> None:
    """Orphans (the driver JVM outlives the Python process that started it) are reparented to us to be reaped."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def timed_process(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Figures:
    """Run ``argv`` to its end; the wall time is the process's own, the JVM's RSS from reaping it afterwards."""
    with open(log, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=log.parent,
                                env={**os.environ, **env} if env else None)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    jvm = 0
    cpu = usage.ru_utime + usage.ru_stime  # with the children it reaped itself
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # descendants left behind (the JVM, Python workers): reap them
        try:
            pid, _, child_usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.05)
            continue
        jvm = max(jvm, child_usage.ru_maxrss)
        cpu += child_usage.ru_utime + child_usage.ru_stime
    text = log.read_text()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {proc.returncode}:\n{text[-3000:]}")
    steps = {m.group(1).strip(): float(m.group(2)) for m in STEP_LINE.finditer(text)}
    return Figures(wall, usage.ru_maxrss, jvm, cpu, os.getloadavg()[0], steps, text)


def spark_jobs(events_dir: Path, app_prefix: str) -> list[dict[str, Any]]:
    """The jobs of the newest event log whose app name starts with ``app_prefix``: step, name, seconds."""
    logs = sorted((p for p in events_dir.glob("*") if p.is_file() and not p.name.startswith(".")),
                  key=lambda p: p.stat().st_mtime)
    for path in reversed(logs):
        jobs: dict[int, dict[str, Any]] = {}
        app = None
        stage_names: dict[int, str] = {}
        with open(path) as events:
            for line in events:
                e = json.loads(line)
                kind = e.get("Event")
                if kind == "SparkListenerApplicationStart":
                    app = e.get("App Name", "")
                elif kind == "SparkListenerJobStart":
                    props = e.get("Properties") or {}
                    for s in e.get("Stage Infos", []):
                        stage_names[s["Stage ID"]] = s.get("Stage Name", "")
                    first = min(e.get("Stage IDs") or [0])
                    jobs[e["Job ID"]] = {
                        "step": props.get(STEP_PROPERTY, "-"),
                        "name": props.get("spark.job.description") or stage_names.get(first, "?"),
                        "start": e["Submission Time"], "stages": len(e.get("Stage IDs") or []),
                    }
                elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
                    jobs[e["Job ID"]]["seconds"] = (e["Completion Time"] - jobs[e["Job ID"]]["start"]) / 1000
        if app is not None and app.startswith(app_prefix):
            return [{"id": k, **v} for k, v in sorted(jobs.items())]
    return []


def delta_versions(warehouse: Path) -> dict[str, int]:
    """Commits in each table's ``_delta_log`` (to diff before and after a run)."""
    return {t.name: len(list((t / "_delta_log").glob("*.json"))) for t in warehouse.iterdir()
            if (t / "_delta_log").is_dir()}


def generate_cluster(files: int, target: Path) -> tuple[Path, float, int]:
    from pipelines.simulate import PRESETS, ClusterSpec, generate

    replication, per_dir = 3, 10
    partitions = max(1, files // (per_dir * replication * 10))
    spec = ClusterSpec(brokers=3, topics=10, partitions_per_topic=partitions, replication=replication, jbod_dirs=2,
                       anomalies=PRESETS["all"], files_per_partition=per_dir, now_ms=int(time.time() * 1000))
    t = time.perf_counter()
    result = generate(spec, target, warehouse=str(target / "warehouse"), force=True)
    return Path(result.config_path), time.perf_counter() - t, result.files


def with_event_log(config_path: Path, events: Path) -> None:
    import yaml

    data = yaml.safe_load(config_path.read_text())
    spark = data.setdefault("spark", {}) or {}
    spark.setdefault("conf", {}).update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events),
                                         "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"})
    data["spark"] = spark
    config_path.write_text(yaml.safe_dump(data, sort_keys=False))


def cli_argv(config: Path, run_id: str) -> list[str]:
    return [sys.executable, "-m", "pipelines.cli.main", "run", "--config", str(config), "--run-id", run_id]


def floor_argv(out: Path, events: Path) -> list[str]:
    return [sys.executable, "-c", FLOOR, str(out), str(events)]


def archive_state() -> str:
    """Whether the runs and the first floor had the driver's class archive (``pipelines.tables.class_archive``)."""
    from pipelines.tables.class_archive import driver_java_options

    return "used" if driver_java_options() else "none built: both floors start alike"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def bench_size(files: int, out: Path, repeat: int) -> dict[str, Any]:
    target = out / f"size-{files}"
    events = target / "events"
    config, generated, n_files = generate_cluster(files, target)
    events.mkdir(parents=True, exist_ok=True)
    with_event_log(config, events)
    floor_dir = target / "floor-work"
    floor_dir.mkdir(exist_ok=True)
    timed_process(cli_argv(config, "warmup"), target / "run-warmup.log")  # creates the tables: not counted
    runs: list[Figures] = []
    floors: list[Figures] = []
    plain_floors: list[Figures] = []
    before = after = {}
    for i in range(repeat):
        shutil.rmtree(floor_dir / "floor", ignore_errors=True)
        plain_floors.append(timed_process(floor_argv(floor_dir, events), floor_dir / f"plain-floor-{i}.log",
                                          env={"KLGC_CLASS_ARCHIVE": "off"}))
        shutil.rmtree(floor_dir / "floor", ignore_errors=True)
        floors.append(timed_process(floor_argv(floor_dir, events), floor_dir / f"floor-{i}.log"))
        before = delta_versions(target / "warehouse")
        runs.append(timed_process(cli_argv(config, f"bench{i}"), target / f"run-{i}.log"))
        after = delta_versions(target / "warehouse")
    dirs = int(re.search(r"crawl done in [0-9.]+s: .*?partition_dirs=(\d+)", runs[-1].stderr).group(1))
    commits = {t: after[t] - before.get(t, 0) for t in sorted(after) if after[t] - before.get(t, 0)}
    return {"files": n_files, "dirs": dirs, "generated_s": generated, "runs": runs, "floors": floors,
            "plain_floors": plain_floors,
            "jobs": spark_jobs(events, "kafka-logdir-gc"), "floor_jobs": spark_jobs(events, "klgc-bench-floor"),
            "commits": commits}


def pair_ratios(runs: list[Figures], floors: list[Figures], what: str) -> list[float]:
    return sorted(getattr(r, what) / getattr(fl, what) for r, fl in zip(runs, floors, strict=True))


def report(size: int, f: dict[str, Any]) -> None:
    """The run against the floor of a Spark tool without a class archive (issue 30's goal: wall <= 2x), then
    against the floor with the archive; wall ratios pair by pair (taken in turn), CPU ratios beside them."""
    runs = f["runs"]
    wall = median([r.wall for r in runs])
    loads = [fig.load for fig in (*runs, *f["floors"], *f["plain_floors"])]
    print(f"{f['files']:>10,} files {f['dirs']:>8,} dirs  run wall {wall:6.1f}s (median of {len(runs)}; "
          f"{min(r.wall for r in runs):.1f}-{max(r.wall for r in runs):.1f}) CPU {median([r.cpu for r in runs]):.1f}s  "
          f"{1000 * wall / max(f['dirs'], 1):6.2f}s/1k dirs  load average {min(loads):.1f}-{max(loads):.1f}",
          flush=True)
    for label, floors in (("floor without the class archive", f["plain_floors"]),
                          (f"floor with the class archive ({archive_state()})", f["floors"])):
        walls, cpus = pair_ratios(runs, floors, "wall"), pair_ratios(runs, floors, "cpu")
        print(f"    {label}: wall {median([x.wall for x in floors]):5.1f}s CPU {median([x.cpu for x in floors]):5.1f}s"
              f"  run/floor wall x{median(walls):.2f} ({walls[0]:.2f}-{walls[-1]:.2f})"
              f"  CPU x{median(cpus):.2f} ({cpus[0]:.2f}-{cpus[-1]:.2f})")
    print(f"    Python driver {max(r.driver_rss_kib for r in runs) / 1024:5.0f} MiB, "
          f"JVM driver {max(r.jvm_rss_kib for r in runs) / 1024:5.0f} MiB (peak RSS); generate {f['generated_s']:.0f}s")
    steps = defaultdict(list)
    for r in runs:
        for name, seconds in r.steps.items():
            steps[name].append(seconds)
    in_steps = sum(median(v) for v in steps.values())
    print("    steps (median s): " + ", ".join(f"{k} {median(v):.1f}" for k, v in steps.items())
          + f"; outside the steps (JVM start, tables, metrics, exit) {wall - in_steps:.1f}")
    jobs = f["jobs"]
    per_step: dict[str, list[float]] = defaultdict(list)
    for j in jobs:
        per_step[j["step"]].append(j.get("seconds", 0.0))
    print(f"    Spark jobs of the last run: {len(jobs)} in {sum(sum(v) for v in per_step.values()):.1f}s; per step: "
          + ", ".join(f"{k} {len(v)} jobs {sum(v):.1f}s" for k, v in per_step.items()))
    for j in jobs:
        print(f"      job {j['id']:>3} {j['step']:<16} {j.get('seconds', 0):6.2f}s  {j['stages']} stage(s)  "
              f"{j['name'][:90]}")
    fj = f["floor_jobs"]
    print(f"    floor job: {len(fj)} Spark jobs in {sum(j.get('seconds', 0) for j in fj):.1f}s")
    total = sum(f["commits"].values())
    print(f"    Delta commits of the last run: {total} ("
          + ", ".join(f"{t} {n}" for t, n in f["commits"].items()) + ")", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="file counts, e.g. 10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3, help="floor/run pairs per size (after one warm-up run)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    _become_subreaper()
    out = Path(args.out or tempfile.mkdtemp(prefix="klgc-bench-")).resolve()
    rows = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            figures = bench_size(size, out, max(1, args.repeat))
            rows.append((size, figures))
            report(size, figures)
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    if len(rows) > 1:
        (s0, f0), (s1, f1) = rows[0], rows[-1]
        w0, w1 = (median([r.wall for r in f["runs"]]) for f in (f0, f1))
        per0, per1 = w0 / max(f0["dirs"], 1), w1 / max(f1["dirs"], 1)
        print(f"ratio {s1:,} vs {s0:,} files: per-dir cost x{per1 / per0:.2f}")


if __name__ == "__main__":
    main()
