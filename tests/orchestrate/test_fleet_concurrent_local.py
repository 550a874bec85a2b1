"""Three clusters' pipelines started at the same moment into one NEW warehouse on local disk, each its own process
(its own Spark driver): no run dies creating a table another one creates, and every table holds each cluster's rows
exactly once. Local disk commits through ``LocalLinkLogStore`` (``link(2)``, never a replacing rename)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pipelines.tables import open_store
from tests.fleet_concurrency import assert_each_cluster_once, make_cluster, run_at_once

CLUSTERS = {"fleet-a": 31, "fleet-b": 32, "fleet-c": 33}


@pytest.mark.spark
@pytest.mark.second_tier  # three Spark drivers: minutes on two cores (the rules' own proofs are in make test)
def test_three_pipelines_at_once_into_one_new_local_warehouse_lose_nothing(tmp_path: Path) -> None:
    warehouse = tmp_path / "fleet-warehouse"  # new: every table is created by the three runs at once
    configs = {name: make_cluster(tmp_path, name, seed, str(warehouse)) for name, seed in CLUSTERS.items()}
    outcomes = run_at_once(configs, dict(os.environ))
    log_dirs = {name: sum(len(b["log_dirs"]) for b in yaml.safe_load(path.read_text())["brokers"])
                for name, path in configs.items()}
    assert_each_cluster_once(open_store("rust", str(warehouse)), outcomes, log_dirs)
