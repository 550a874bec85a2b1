"""Real-Kafka integration tests: the cluster JVMs' log tails are attached to any failing test's report."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import KafkaCluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        funcargs = getattr(item, "funcargs", {})
        for value in funcargs.values():
            if isinstance(value, KafkaCluster):
                report.sections.append(("kafka cluster logs", value.log_tails(40)))
