"""Shared fixtures: one Spark session for the whole run, and the optional ``../shared`` data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[1]

# Property tests judge behaviour, never speed: on a loaded CI machine hypothesis' generation-speed health check
# and per-example deadline failed runs whose every example passed (test_meta_properties at load 10).
settings.register_profile("klgc", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("klgc")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """``local[2]``, 2 shuffle partitions, UTC, UI off, Delta enabled; an already active session is reused.

    Stopped at the end of the run only if this fixture started it.
    """
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from pipelines.tables.spark_session import build_spark

    active = SparkSession.getActiveSession()
    session = active or build_spark(
        "kafka-logdir-gc-tests",
        master="local[2]",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    yield session
    if active is None:
        session.stop()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` next to the repo (facts and sample data); skips when absent."""
    path = REPO.parent / "shared"
    if not path.is_dir():
        pytest.skip("../shared absent")
    return path


@pytest.fixture(scope="session")
def real_logdirs() -> Path:
    """``../shared/real-logdirs``: real broker log dirs with ``MANIFEST.json`` (read only, never copied)."""
    path = REPO.parent / "shared" / "real-logdirs"
    if not path.is_dir():
        pytest.skip("../shared/real-logdirs absent")
    return path
