"""What the executors' environment holds, and what spark-submit is told (the full build runs in tests/cluster)."""

from __future__ import annotations

import importlib.metadata

from pipelines.deploy.package import (
    DIST,
    ENV_DIR,
    runtime_requirements,
    spark_submit_args,
)


def test_runtime_requirements_keep_base_spark_and_sftp_but_not_pyspark_or_dev_tools() -> None:
    requires = [
        "click>=8.1", "pyarrow>=15",
        'pyspark==4.2.0; extra == "spark"', 'delta-spark==4.4.0; extra == "spark"', 'pandas<3; extra == "spark"',
        'paramiko>=3.4; extra == "sftp"', 'pytest>=8; extra == "dev"', 'kafka-logdir-gc[spark]; extra == "dev"',
    ]
    with_deps, without = runtime_requirements(requires)
    assert with_deps == ["click>=8.1", "pyarrow>=15", "pandas<3", "paramiko>=3.4"]
    assert without == ["delta-spark==4.4.0"]


def test_the_installed_distribution_needs_no_pyspark_on_executors() -> None:
    with_deps, without = runtime_requirements(importlib.metadata.requires(DIST) or [])
    names = {r.split("=")[0].split(">")[0].split("<")[0].strip().lower() for r in with_deps + without}
    assert "pyspark" not in names and "pytest" not in names
    assert {"pyarrow", "fsspec", "paramiko", "delta-spark", "pydantic"} <= names


def test_spark_submit_args_ship_the_archive_and_point_the_python_workers_into_it() -> None:
    args = spark_submit_args("/dist/env.tar.gz", driver_python="/opt/venv/bin/python")  # type: ignore[arg-type]
    assert args == [
        "--archives", f"/dist/env.tar.gz#{ENV_DIR}",
        "--conf", "spark.pyspark.python=./environment/bin/python",
        "--conf", "spark.pyspark.driver.python=/opt/venv/bin/python",
    ]
