"""Tell a Spark driver JVM that stopped in the middle of a run from every other failure.

In local mode the tasks run inside the driver JVM, and an ``OutOfMemoryError`` in one of them makes Spark exit that
JVM. What reaches Python is then a refused connection to the py4j gateway, which reads like an unreachable object
store; the operator needs to hear that the JVM is gone and where its log is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.errors import PipelinesError


class SparkDriverStopped(PipelinesError):
    """The Spark driver JVM stopped during a run (out of memory, killed); nothing more can be written with it."""


def jvm_alive(spark: Any) -> bool:
    """True when the session's JVM still answers a call through the py4j gateway."""
    try:
        spark.sparkContext._jvm.java.lang.System.nanoTime()
    except Exception:  # any failure to reach it means it is gone for this process
        return False
    return True


def as_driver_stopped(exc: BaseException, spark: Any, log_file: Path | None) -> SparkDriverStopped | None:
    """``exc`` as one :class:`SparkDriverStopped` line when the session's JVM no longer answers, else None."""
    if jvm_alive(spark):
        return None
    where = f"; its output is in {log_file}" if log_file is not None else ""
    return SparkDriverStopped(
        f"the Spark driver JVM stopped during the run ({type(exc).__name__}){where}. An OutOfMemoryError there "
        "means spark.driver.memory is too small for this fleet: set it under spark.conf (local mode runs every "
        "task in the driver)")
