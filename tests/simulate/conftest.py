from __future__ import annotations

import pytest
from sim_specs import ALL_SPEC

from pipelines.simulate import GenerationResult, generate


@pytest.fixture(scope="session")
def all_cluster(tmp_path_factory: pytest.TempPathFactory) -> GenerationResult:
    """One generated cluster with every anomaly, shared by the read-only tests."""
    return generate(ALL_SPEC, tmp_path_factory.mktemp("sim") / "cluster")
