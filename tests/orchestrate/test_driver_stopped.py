"""A Spark driver JVM that dies in the middle of a run is reported as such, not as an unreachable object store.

The JVM is a real one, killed in a child process (the suite's shared session must live on).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

CHILD = textwrap.dedent("""
    from pathlib import Path
    from pyspark.sql import SparkSession

    from pipelines.orchestrate.driver_stopped import as_driver_stopped, jvm_alive
    from pipelines.tables.spark_session import build_spark

    spark = build_spark("driver-stopped-test", master="local[1]", conf={"spark.ui.enabled": "false"})
    before = as_driver_stopped(RuntimeError("a failing step"), spark, Path("spark.log"))
    print("alive before:", jvm_alive(spark), before)
    proc = spark.sparkContext._gateway.proc
    proc.kill()
    proc.wait()
    try:
        spark.range(3).count()
        failure = None
    except Exception as exc:
        failure = exc
    print("call failed:", type(failure).__name__)
    print("after:", as_driver_stopped(failure, spark, Path("spark.log")))
""")


def test_a_killed_driver_jvm_is_named_with_its_log_and_the_memory_setting() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, check=True)
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert lines["alive before"] == "True None"  # a live JVM: the step's own error is left as it is
    assert lines["call failed"] != "NoneType"
    after = lines["after"]
    assert after.startswith("the Spark driver JVM stopped during the run")
    assert "spark.log" in after and "spark.driver.memory" in after
