"""The executor probe: shipped by value, so an interpreter without this package runs it and names what is missing.

The Spark round trip is in tests/cluster; here the pickled probe runs in a Python that has pyspark's cloudpickle on
its path but not this package (site-packages added without its .pth files, which is where the editable install of
this checkout lives)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pyspark
from pyspark import cloudpickle

from pipelines.deploy.executor_check import CRAWL_MODULES, _probe, as_missing_module, crawl_modules

SITE = str(Path(pyspark.__file__).resolve().parents[1])
RUN_PICKLED = ("import pickle, sys; sys.path.append(sys.argv[1]); "
               "print(repr(pickle.loads(sys.stdin.buffer.read())(0)))")


def _run_without_the_package(payload: bytes) -> tuple:
    done = subprocess.run([sys.executable, "-S", "-c", RUN_PICKLED, SITE], input=payload, capture_output=True,
                          check=True, cwd="/")
    return ast.literal_eval(done.stdout.decode())


def test_the_probe_runs_where_the_package_is_absent_and_names_it() -> None:
    missing, detail, where = _run_without_the_package(cloudpickle.dumps(_probe(CRAWL_MODULES)))
    assert missing == "pipelines" and "No module named 'pipelines'" in detail and "python" in where


def test_where_everything_imports_the_probe_reports_the_code_path() -> None:
    missing, code_path, _ = pickle.loads(cloudpickle.dumps(_probe(CRAWL_MODULES)))(0)
    assert missing is None and code_path in ("compiled", "pure_python")


def test_the_ssh_library_is_probed_only_for_sftp_log_dirs() -> None:
    assert crawl_modules(["/data/kafka", "file:///d"]) == CRAWL_MODULES
    assert crawl_modules(["/data/kafka", "sftp://kafka-1/d"]) == (*CRAWL_MODULES, "paramiko")


def test_a_spark_failure_caused_by_a_missing_module_becomes_one_line() -> None:
    java = ("py4j.protocol.Py4JJavaError: An error occurred while calling z:org.apache.spark.api.python.PythonRDD."
            "collectAndServe.\n: org.apache.spark.SparkException: Job aborted ... Traceback (most recent call last):\n"
            '  File "serializers.py", line 454, in loads\nModuleNotFoundError: No module named \'fsspec\'\n\tat ...')
    error = as_missing_module(RuntimeError(java))
    assert error is not None and "\n" not in str(error)
    assert str(error).startswith("Spark executors cannot import fsspec:") and 'docs/deploying.md' in str(error)
    assert as_missing_module(RuntimeError("Job aborted: disk full")) is None


def test_an_executor_with_the_package_but_no_pyarrow_is_named() -> None:
    """The crawl tasks hand their rows to Spark as Arrow: an executor without pyarrow fails them all."""
    repo = str(Path(__file__).resolve().parents[2])
    script = ("import pickle, sys; sys.modules['pyarrow'] = None; sys.path[:0] = sys.argv[1:3]; "
              "print(repr(pickle.loads(sys.stdin.buffer.read())(0)))")
    done = subprocess.run([sys.executable, "-c", script, repo, SITE], capture_output=True, check=True, cwd="/",
                          input=cloudpickle.dumps(_probe(CRAWL_MODULES)))
    missing, detail, _ = ast.literal_eval(done.stdout.decode())
    assert missing == "pyarrow", detail
