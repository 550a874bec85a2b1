"""One demo warehouse per test session (simulate → crawl → metadata → findings → plans, no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analytics.demo_warehouse import DemoWarehouse, build_demo_warehouse


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoWarehouse:
    return build_demo_warehouse(Path(tmp_path_factory.mktemp("analytics-demo")))
