"""A run's metrics file against the warehouse rows it summarises, and the push to a real Pushgateway."""

from __future__ import annotations

import urllib.request
from collections import defaultdict
from pathlib import Path

from metrics_files import parse, select, value

from pipelines.config import config_from_dict
from pipelines.config.models import AppConfig
from pipelines.detect.classes import GARBAGE_CLASSES
from pipelines.metrics import catalog
from pipelines.metrics.run_metrics import record_failed_run, record_run, run_file
from tests.analytics.demo_warehouse import DemoWarehouse

DURATIONS = {"crawl": 3.5, "ingest_metadata": 0.5, "detect": 2.0, "plan": 1.25}


def _config(demo: DemoWarehouse, **metrics: object) -> AppConfig:
    return config_from_dict({"cluster": demo.cluster, "warehouse": str(demo.warehouse), "metrics": metrics},
                            origin="test")


def test_run_file_matches_the_warehouse_rows(demo: DemoWarehouse, tmp_path: Path) -> None:
    config = _config(demo, dir=str(tmp_path / "m"))
    outcome = record_run(config, "run-2", DURATIONS, plan_id=demo.plans[1], now=1_700_000_000.0)
    assert outcome.notes == [] and outcome.file == run_file(config, "run-2")
    assert Path(outcome.file).name == f"logdir_gc_run_{demo.cluster}_run-2.prom"
    types, samples = parse(Path(outcome.file).read_text())
    assert set(types) <= {s.name for s in catalog.RUN}  # nothing outside the documented catalog

    store = demo.store()
    reclaim: dict[tuple[str, str], int] = defaultdict(int)
    dirs: dict[tuple[str, str], int] = defaultdict(int)
    plannable: dict[tuple[str, str], int] = defaultdict(int)
    for f in store.read_rows("findings", {"run_id": "run-2"}):
        if f["class"] in GARBAGE_CLASSES and not f["protected"]:
            key = (str(f["broker_id"]), f["class"])
            reclaim[key] += f["bytes"] or 0
            dirs[key] += 1
            plannable[key] += (f["bytes"] or 0) if f["plannable"] else 0
    assert reclaim, "the demo warehouse has garbage"
    got = {(dict(k)["broker"], dict(k)["class"]): v for k, v in select(samples, "logdir_gc_reclaimable_bytes").items()}
    assert got == {k: float(v) for k, v in reclaim.items()}
    for (broker, cls), n in dirs.items():
        labels = {"cluster": demo.cluster, "broker": broker, "class": cls}
        assert value(samples, "logdir_gc_reclaimable_dirs", **labels) == n
        assert value(samples, "logdir_gc_plannable_bytes", **labels) == plannable[(broker, cls)]

    items = store.read_rows("gc_plan_items", {"plan_id": demo.plans[1]})
    for cls in {i["class"] for i in items}:
        labels = {"cluster": demo.cluster, "class": cls}
        assert value(samples, "logdir_gc_plan_items", **labels) == sum(1 for i in items if i["class"] == cls)
        assert value(samples, "logdir_gc_plan_bytes", **labels) == sum(i["bytes"] for i in items if i["class"] == cls)

    errors = store.read_rows("crawl_errors", {"run_id": "run-2"})
    for stage in catalog.CRAWL_STAGES:
        assert value(samples, "logdir_gc_crawl_errors", cluster=demo.cluster, stage=stage) == sum(
            1 for e in errors if e["stage"] == stage)
    unexplained = select(samples, "logdir_gc_unexplained_bytes")
    assert {dict(k)["broker"] for k in unexplained} == {"1", "2", "3"}
    for step, seconds in DURATIONS.items():
        assert value(samples, "logdir_gc_step_duration_seconds", cluster=demo.cluster, step=step) == seconds
    assert value(samples, "logdir_gc_run_success", cluster=demo.cluster) == 1
    assert value(samples, "logdir_gc_last_success_timestamp_seconds", cluster=demo.cluster) == 1_700_000_000.0
    crawl = store.read_rows("crawl_runs", {"run_id": "run-2"})[0]
    assert value(samples, "logdir_gc_crawled_partition_dirs", cluster=demo.cluster) == crawl["partition_dirs"] > 0


def test_a_failed_run_or_crawl_is_not_a_success(demo: DemoWarehouse, tmp_path: Path) -> None:
    config = _config(demo, dir=str(tmp_path))
    _, samples = parse(Path(record_failed_run(config, "run-x", now=5.0).file).read_text())
    assert value(samples, "logdir_gc_run_success", cluster=demo.cluster) == 0
    assert not select(samples, "logdir_gc_last_success_timestamp_seconds")
    missing = record_run(config, "run-9", {}, plan_id=None)  # no crawl_runs row: not a success, said why
    assert len(missing.notes) == 1 and "no crawl_runs row for run run-9" in missing.notes[0]
    _, samples = parse(Path(missing.file).read_text())
    assert value(samples, "logdir_gc_run_success", cluster=demo.cluster) == 0
    assert not select(samples, "logdir_gc_last_success_timestamp_seconds")
    _, samples = parse(Path(record_run(config, "run-1", {}, plan_id=None).file).read_text())
    assert value(samples, "logdir_gc_plan_items", cluster=demo.cluster, **{"class": "none"}) == 0
    assert value(samples, "logdir_gc_run_success", cluster=demo.cluster) == 1

    store = demo.store()  # a run whose crawl failed: every step ran, but it is no success
    failed = {**store.read_rows("crawl_runs", {"run_id": "run-2"})[0], "run_id": "run-failed", "status": "failed"}
    store.overwrite_partition("crawl_runs", {"run_id": "run-failed"}, [failed])
    _, samples = parse(Path(record_run(config, "run-failed", {}, plan_id=None).file).read_text())
    assert value(samples, "logdir_gc_run_success", cluster=demo.cluster) == 0
    assert not select(samples, "logdir_gc_last_success_timestamp_seconds")


def _gateway(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        return parse(r.read().decode())[1]


def test_pushes_reach_a_real_pushgateway(demo: DemoWarehouse, tmp_path: Path, pushgateway: str) -> None:
    config = _config(demo, dir=str(tmp_path), pushgateway_url=pushgateway + "/", pushgateway_job="klgc_test")
    group = {"job": "klgc_test", "cluster": demo.cluster, "instance": ""}
    ok = record_run(config, "run-2", DURATIONS, plan_id=demo.plans[1], now=1000.0)
    assert ok.notes == [] and ok.pushed_to == f"{pushgateway}/metrics/job/klgc_test/cluster/{demo.cluster}"
    pushed = _gateway(pushgateway)
    _, written = parse(Path(ok.file).read_text())
    for (name, labels), v in written.items():  # the gateway serves exactly what the run file says
        assert pushed.get((name, labels | frozenset(group.items()))) == v, name
    assert value(pushed, "logdir_gc_last_success_timestamp_seconds", **group) == 1000.0

    failed = record_failed_run(config, "run-3", now=2000.0)  # POST: the last success time stays
    assert failed.notes == []
    pushed = _gateway(pushgateway)
    assert value(pushed, "logdir_gc_run_success", **group) == 0
    assert value(pushed, "logdir_gc_run_timestamp_seconds", **group) == 2000.0
    assert value(pushed, "logdir_gc_last_success_timestamp_seconds", **group) == 1000.0

    record_run(config, "run-1", {}, plan_id=None, now=3000.0)  # PUT: series of the previous run go
    pushed = _gateway(pushgateway)
    assert not select(pushed, "logdir_gc_step_duration_seconds")
    assert {dict(k)["class"] for k in select(pushed, "logdir_gc_plan_items")} == {"none"}


def test_an_unreachable_pushgateway_is_a_note_not_a_failure(demo: DemoWarehouse, tmp_path: Path) -> None:
    config = _config(demo, dir=str(tmp_path), pushgateway_url="http://127.0.0.1:9", push_timeout_s=2)
    outcome = record_run(config, "run-2", DURATIONS, plan_id=demo.plans[1])
    assert outcome.pushed_to is None and Path(outcome.file).exists()
    assert len(outcome.notes) == 1 and "push to http://127.0.0.1:9 failed" in outcome.notes[0]


def test_remote_tier_bytes_per_class_come_from_the_runs_remote_findings(demo: DemoWarehouse, tmp_path: Path) -> None:
    """Remote bytes beside local bytes (issue 28 point 8): per class, all and plannable, this run's rows only."""
    import shutil

    from pipelines.tables.rust_engine import RustTableStore

    warehouse = tmp_path / "warehouse"
    shutil.copytree(demo.warehouse, warehouse)

    def finding(run_id: str, cls: str, size: int | None, plannable: bool | None, n: int) -> dict[str, object]:
        return {"run_id": run_id, "cluster": demo.cluster, "topic": "t", "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
                "partition": 0, "segment_id": f"seg{n:019d}", "start_offset": n, "class": cls, "reason": "r",
                "bytes": size, "objects": 3, "plannable": plannable, "garbage_since": None}

    rows = [finding("run-2", "remote_deleted_topic", 100, True, 1),
            finding("run-2", "remote_deleted_topic", 40, False, 2), finding("run-2", "remote_ok", 7, False, 3),
            finding("run-2", "remote_copy_incomplete", None, None, 4),
            finding("run-1", "remote_deleted_topic", 1000, True, 5)]  # another run: not this run's bytes
    RustTableStore(str(warehouse), allow_foreign_tables=True).append("remote_findings", rows)
    config = config_from_dict({"cluster": demo.cluster, "warehouse": str(warehouse),
                               "metrics": {"dir": str(tmp_path / "m")}}, origin="test")
    outcome = record_run(config, "run-2", DURATIONS, plan_id=demo.plans[1], now=1_700_000_000.0)
    assert outcome.notes == []
    _, samples = parse(Path(outcome.file).read_text())
    got = {dict(k)["class"]: v for k, v in select(samples, "logdir_gc_remote_bytes").items()}
    assert got == {"remote_deleted_topic": 140.0, "remote_ok": 7.0, "remote_copy_incomplete": 0.0}
    plannable = {dict(k)["class"]: v for k, v in select(samples, "logdir_gc_remote_plannable_bytes").items()}
    assert plannable == {"remote_deleted_topic": 100.0, "remote_ok": 0.0, "remote_copy_incomplete": 0.0}
