"""The four jobs on a real Spark standalone cluster (one master, two workers, each its own JVM on 127.0.0.1) whose
workers' Python lacks this package, submitted with spark-submit as docs/deploying.md shows.

One cluster for the module; the tests run in order and build on each other's warehouse:
1. without the package shipped, the crawl fails with one line naming the missing module; detect then refuses the
   run whose crawl never happened;
2. with `logdir-gc package`'s archive the four jobs succeed, the compiled speed-ups ran on the executors, and the
   findings and plan equal local mode's on the same input (chispa);
3. the same run id again, with a worker killed during the crawl: the crawl completes through task retry (or fails
   with crawl_runs.status = failed, and detect refuses it), and once rerun every table's rows are unchanged;
4. `logdir-gc run --master spark://…` with the archive in `spark.conf` gives local mode's findings too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from spark_standalone import StandaloneCluster, loopback_env

from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.tables import open_store
from pipelines.tables.schemas import ALL_TABLES
from pipelines.tables.spark_session import cached_jars

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.second_tier]

REPO = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = str(Path(sys.executable).parent / "spark-submit")
NOW_MS = 1_780_000_000_000
NOW = "2026-05-28T20:26:40+00:00"  # NOW_MS as ISO 8601: the clock of detect and plan in every mode
RUN = "r1"
#: Dependencies the workers' venv (pyspark, pyarrow, pandas) lacks: the wheel alone leaves one of them missing.
THIRD_PARTY = frozenset({"fsspec", "pydantic", "yaml", "crc32c", "cramjam", "click", "deltalake", "paramiko"})
#: Columns that record when a step ran, or the filesystem's used/free bytes at that moment (other processes write
#: to the same disk), not what it found: the only ones a rerun may change.
WALL_CLOCK = frozenset({"started_at", "finished_at", "crawled_at", "at", "detected_at", "updated_at",
                        "fs_used_bytes", "fs_free_bytes"})


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A generated cluster with every kind of leftover, and one config per warehouse (cluster, local, run)."""
    root = tmp_path_factory.mktemp("standalone-world")
    spec = ClusterSpec(brokers=3, jbod_dirs=2, anomalies=PRESETS["all"], now_ms=NOW_MS, seed=11)
    result = generate(spec, root / "sim", force=True)
    base = yaml.safe_load(Path(result.config_path).read_text())
    configs = {"root": root}
    for name in ("cluster", "local", "run"):
        data = {**base, "warehouse": str(root / f"warehouse-{name}")}
        configs[name] = root / f"{name}.yaml"
        configs[name].write_text(yaml.safe_dump(data))
    configs["cwd"] = root / "cwd"  # where spark-submit runs: nothing may be left in it
    configs["cwd"].mkdir()
    return configs


def _jars() -> str:
    jars = cached_jars()
    assert jars is not None, "the Delta jars are resolved into the cache by scripts/setup.sh"
    return ",".join(str(j) for j in jars)


def _submit_command(cluster: StandaloneCluster, job: str, args: list[str], shipped: list[str]) -> list[str]:
    """spark-submit as docs/deploying.md shows, with --jars (the cached Delta jars) in place of --packages."""
    defaults = str(REPO / "conf" / "spark-defaults.conf")
    return [SPARK_SUBMIT, "--master", cluster.master_url, "--properties-file", defaults, "--jars", _jars(), *shipped,
            str(REPO / "jobs" / f"{job}.py"), *args]


def _submit(cluster: StandaloneCluster, world: dict[str, Path], job: str, args: list[str], shipped: list[str]
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_submit_command(cluster, job, args, shipped), cwd=world["cwd"], env=loopback_env(),
                          capture_output=True, text=True, timeout=900, check=False)


def _job_args(world: dict[str, Path], job: str, run_id: str = RUN, config: str = "cluster") -> list[str]:
    args = ["--config", str(world[config]), "--run-id", run_id]
    if job in ("detect", "plan"):
        args += ["--now", NOW]
    return args + (["--created-by", "ci"] if job == "plan" else [])


def _driver_only(package: dict) -> list[str]:
    """The driver keeps the Python that has the package; executors get the workers' own python3."""
    args = package["spark_submit_args"]
    return [a for i, a in enumerate(args) if "spark.pyspark.driver.python" in a or (
        a == "--conf" and i + 1 < len(args) and "spark.pyspark.driver.python" in args[i + 1])]


def _rows(warehouse: Path) -> dict[str, list[str]]:
    """Every table's rows, wall-clock columns left out, as sorted JSON lines."""
    store = open_store("rust", str(warehouse))
    out = {}
    for name in ALL_TABLES:
        if store.exists(name):
            out[name] = sorted(json.dumps({k: v for k, v in r.items() if k not in WALL_CLOCK}, sort_keys=True,
                                          default=str) for r in store.read_rows(name))
    return out


def _error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The job's own message: exactly one ``error:`` line (Spark's log4j lines around it are the cluster's).

    spark-submit merges the Python driver's stderr into its own stdout (PythonRunner), so both streams are read.
    """
    both = done.stdout + done.stderr
    lines = [line for line in both.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, both[-3000:]
    assert "Traceback" not in both and "Py4JJavaError" not in both
    return lines[0]


def test_package_json_is_exactly_wheel_archive_and_spark_submit_args(package: dict) -> None:
    assert set(package) == {"wheel", "archive", "spark_submit_args"}
    assert Path(package["wheel"]).is_file() and package["wheel"].endswith(".whl")
    assert Path(package["archive"]).is_file() and package["archive"].endswith(".tar.gz")
    assert package["spark_submit_args"][:2] == ["--archives", f"{package['archive']}#environment"]


def test_executors_without_the_package_fail_in_one_line_and_detect_refuses_the_run(
        standalone: StandaloneCluster, world: dict[str, Path], package: dict) -> None:
    crawl = _submit(standalone, world, "crawl", _job_args(world, "crawl", "bare"), _driver_only(package))
    assert crawl.returncode == 1, crawl.stderr[-3000:]
    line = _error_line(crawl)
    assert line.startswith("error: Spark executors cannot import pipelines") and 'docs/deploying.md' in line

    wheel_as_zip = world["root"] / "kafka_logdir_gc.zip"  # --py-files puts .zip (not .whl) on the executors' path
    shutil.copy(package["wheel"], wheel_as_zip)
    crawl = _submit(standalone, world, "crawl", _job_args(world, "crawl", "bare"),
                    ["--py-files", str(wheel_as_zip), *_driver_only(package)])
    assert crawl.returncode == 1, crawl.stderr[-3000:]
    line = _error_line(crawl)
    missing = line.removeprefix("error: Spark executors cannot import ").split(" ")[0]
    assert missing not in ("pipelines", line) and missing.split(".")[0] in THIRD_PARTY, line

    detect = _submit(standalone, world, "detect", _job_args(world, "detect", "bare"), package["spark_submit_args"])
    assert detect.returncode == 1, detect.stderr[-3000:]
    assert _error_line(detect) == (
        "error: detect refused: the crawl of run bare never ran (no row); rerun the crawl for this run id first")


def test_four_jobs_with_the_archive_equal_local_mode(spark, standalone: StandaloneCluster, world: dict[str, Path],
                                                     package: dict) -> None:
    from chispa import assert_df_equality

    from jobs import crawl, detect, ingest_metadata, plan

    printed = {}
    for job in ("crawl", "ingest_metadata", "detect", "plan"):
        done = _submit(standalone, world, job, _job_args(world, job), package["spark_submit_args"])
        assert done.returncode == 0, f"{job}: {done.stderr[-3000:]}"
        printed[job] = done.stdout
    assert "'code_path': 'compiled'" in printed["crawl"], "the compiled speed-ups loaded on the executors"

    for module, job in ((crawl, "crawl"), (ingest_metadata, "ingest_metadata"), (detect, "detect"), (plan, "plan")):
        module.main(_job_args(world, job, config="local"))

    cluster_wh, local_wh = (yaml.safe_load(world[n].read_text())["warehouse"] for n in ("cluster", "local"))
    [crawl_row] = open_store("rust", cluster_wh).read_rows("crawl_runs", {"run_id": RUN})
    assert crawl_row["status"] in ("succeeded", "partial") and crawl_row["code_path"] == "compiled"

    def table(warehouse: str, name: str, drop: tuple[str, ...]) -> Any:
        df = spark.read.format("delta").load(f"{warehouse}/{name}")
        return df.drop(*drop).orderBy(*[c for c in df.columns if c not in drop][:6])

    for name, drop in (("findings", ("detected_at",)), ("gc_plan_items", ()), ("partition_dirs", ("crawled_at",))):
        assert_df_equality(table(cluster_wh, name, drop), table(local_wh, name, drop), ignore_row_order=True,
                           ignore_nullable=True)
    plans = [open_store("rust", wh).read_rows("gc_plans") for wh in (cluster_wh, local_wh)]
    assert [(p["plan_id"], p["content_hash"], p["item_count"]) for p in plans[0]] == [
        (p["plan_id"], p["content_hash"], p["item_count"]) for p in plans[1]]
    assert plans[0] and plans[0][0]["item_count"] > 0
    assert sorted(p.name for p in world["cwd"].iterdir()) == [], "spark-submit left nothing in the caller's directory"


def test_rerun_with_a_worker_killed_during_the_crawl_changes_no_row(
        standalone: StandaloneCluster, world: dict[str, Path], package: dict) -> None:
    warehouse = Path(yaml.safe_load(world["cluster"].read_text())["warehouse"])
    before = _rows(warehouse)
    assert before["findings"] and before["gc_plans"]

    log = world["root"] / "crawl-rerun.log"
    with open(log, "w") as out:
        crawl = subprocess.Popen(_submit_command(standalone, "crawl", _job_args(world, "crawl"),
                                                 package["spark_submit_args"]),
                                 cwd=world["cwd"], env=loopback_env(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 600
        while "spark_crawl.py" not in "".join(x for x in log.read_text().splitlines() if "Got job" in x):
            assert crawl.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        standalone.kill_worker(0)  # the crawl's first Spark job is submitted: its tasks are running or queued
        code = crawl.wait(timeout=900)
    store = open_store("rust", str(warehouse))
    [row] = store.read_rows("crawl_runs", {"run_id": RUN})
    print(f"crawl with worker 0 killed: exit {code}, crawl_runs.status {row['status']}")  # which path this run took
    if code != 0:  # the job may fail instead of recovering: then it must say so, and detect must refuse the run
        assert row["status"] == "failed", log.read_text()[-3000:]
        refused = _submit(standalone, world, "detect", _job_args(world, "detect"), package["spark_submit_args"])
        assert refused.returncode == 1 and _error_line(refused).startswith("error: detect refused")
    standalone.start_worker(0)
    standalone.wait_registered(0)
    jobs = ("crawl", "ingest_metadata", "detect", "plan") if code != 0 else ("ingest_metadata", "detect", "plan")
    for job in jobs:
        done = _submit(standalone, world, job, _job_args(world, job), package["spark_submit_args"])
        assert done.returncode == 0, f"{job}: {done.stderr[-3000:]}"
    assert _rows(warehouse) == before


def test_logdir_gc_run_on_the_cluster_with_the_archive(spark, standalone: StandaloneCluster, world: dict[str, Path],
                                                      package: dict) -> None:
    from chispa import assert_df_equality

    data = yaml.safe_load(world["run"].read_text())
    data["spark"] = {"master": standalone.master_url, "conf": {
        "spark.archives": f"{package['archive']}#environment", "spark.pyspark.python": "./environment/bin/python"}}
    world["run"].write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "run", "--config", str(world["run"]),
                           "--run-id", RUN, "--now", NOW, "--json"],  # the jobs' clock: the same findings
                          cwd=world["cwd"], env=loopback_env({"PYTHONPATH": str(REPO)}), capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["steps"]["crawl"]["counts"]["code_path"] == "compiled"
    local_wh = yaml.safe_load(world["local"].read_text())["warehouse"]

    def findings(warehouse: str) -> Any:
        df = spark.read.format("delta").load(f"{warehouse}/findings").where(f"run_id = '{RUN}'")
        return df.select("broker_id", "log_dir", "dir_name", "class", "protected", "bytes", "fingerprint")

    assert_df_equality(findings(data["warehouse"]), findings(local_wh), ignore_row_order=True, ignore_nullable=True)
