"""Three clusters' pipelines started at the same moment against one NEW warehouse in a bucket on moto's S3 server,
each its own process (its own Spark driver), their Spark jobs committing to the same Delta tables at once: every
table then holds each cluster's rows exactly once. delta-spark commits through ``S3ConditionalPutLogStore``
(``If-None-Match: *``), delta-rs (the plan tables) with its own conditional PUT.

``KLGC_TEST_WITHOUT_COORDINATION=1`` runs the same pipelines with Delta's ``S3SingleDriverLogStore``.
"""

from __future__ import annotations

import pytest
import yaml

from pipelines.tables.warehouse_store import warehouse_store
from tests.fleet_concurrency import assert_each_cluster_once, make_cluster, run_at_once
from tests.objectstore.conftest import Bucket
from tests.objectstore.s3_servers import aws_env

CLUSTERS = {"fleet-a": 41, "fleet-b": 42, "fleet-c": 43}


@pytest.mark.spark
@pytest.mark.second_tier
def test_three_pipelines_at_once_into_one_new_bucket_warehouse_lose_nothing(bucket: Bucket, tmp_path) -> None:
    configs = {name: make_cluster(tmp_path, name, seed, bucket.warehouse) for name, seed in CLUSTERS.items()}
    outcomes = run_at_once(configs, bucket.env())
    log_dirs = {name: sum(len(b["log_dirs"]) for b in yaml.safe_load(path.read_text())["brokers"])
                for name, path in configs.items()}
    store = warehouse_store(bucket.warehouse, aws_env(bucket.server.endpoint))
    assert_each_cluster_once(store, outcomes, log_dirs)
