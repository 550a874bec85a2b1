"""``S3ConditionalPutLogStore`` on moto's S3 server: a commit never replaces one another writer made.

The worst interleaving, made on purpose: the fault proxy holds the Spark commit's PUT until another client (another
driver, or delta-rs) has written the same version. Delta's ``S3SingleDriverLogStore`` checked before and PUTs
unconditionally, replacing that commit (run with ``KLGC_TEST_WITHOUT_COORDINATION=1``); the conditional PUT gets
412 and the writer is told the version exists, so Delta retries at the next one.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest

from pipelines.tables.commit_log_store import LOCAL_LOG_STORE, S3_LOG_STORE
from pipelines.tables.object_store import warehouse_storage
from tests.fleet_concurrency import WITHOUT_COORDINATION
from tests.log_store_driver import LogStoreDriver, assert_a_retried_commit_is_ours, java_error
from tests.objectstore.conftest import Bucket
from tests.objectstore.s3_servers import ACCESS_KEY, REGION, SECRET_KEY, fault_proxy

STORE = "io.delta.storage.S3SingleDriverLogStore" if WITHOUT_COORDINATION else S3_LOG_STORE
pytestmark = pytest.mark.spark


def _driver(spark: Any, endpoint: str, url: str) -> LogStoreDriver:
    storage = warehouse_storage(url, {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                                      "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION})
    conf = spark._jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
    for key, value in {**storage.hadoop, **storage.hadoop_secrets, "fs.s3.impl.disable.cache": "true",
                       "fs.s3a.impl.disable.cache": "true"}.items():
        conf.set(key, value)
    return LogStoreDriver(spark, STORE, conf)


def test_a_commit_held_until_another_writer_made_the_version_does_not_replace_it(spark: Any,
                                                                                 bucket: Bucket) -> None:
    key = f"wh/t/_delta_log/{0:020d}.json"
    theirs = b'{"commitInfo":{"writer":"delta-rs"}}\n'
    with fault_proxy(bucket.server.port) as proxy:
        held = proxy.hold_until_written_by_another(rf"^PUT /{bucket.name}/{key}", 60, agent="aws-sdk-java|Hadoop")
        driver = _driver(spark, proxy.endpoint, f"s3://{bucket.name}/wh")
        outcome: list[str] = []

        def spark_commit() -> None:
            try:
                driver.write(f"s3://{bucket.name}/{key}", ['{"commitInfo":{"writer":"spark"}}'])
                outcome.append("committed")
            except Exception as exc:
                outcome.append(java_error(exc) or repr(exc))

        writer = threading.Thread(target=spark_commit)
        writer.start()
        while proxy.hits(held) == 0 and writer.is_alive():  # the Spark PUT reached the store's door
            threading.Event().wait(0.05)
        other = boto3.client("s3", endpoint_url=proxy.endpoint, aws_access_key_id=ACCESS_KEY,
                             aws_secret_access_key=SECRET_KEY, region_name=REGION)
        other.put_object(Bucket=bucket.name, Key=key, Body=theirs, IfNoneMatch="*")
        writer.join()
    assert outcome == ["java.nio.file.FileAlreadyExistsException"], outcome
    assert bucket.read(key) == theirs  # the other writer's commit is still there


def test_a_retried_put_of_the_same_commit_succeeds_and_another_commit_is_refused(spark: Any,
                                                                                 bucket: Bucket) -> None:
    """A PUT whose reply was lost and is retried meets 412 over its own bytes: that is our commit."""
    driver = _driver(spark, bucket.server.endpoint, f"s3://{bucket.name}/wh")
    path = f"s3://{bucket.name}/wh/t/_delta_log/{0:020d}.json"
    assert_a_retried_commit_is_ours(driver, path)


def test_every_session_build_spark_starts_commits_with_the_multi_driver_stores(spark: Any) -> None:
    conf = dict(spark.sparkContext.getConf().getAll())
    assert [conf.get(f"spark.delta.logStore.{scheme}.impl") for scheme in ("s3", "s3a", "file")] == [
        S3_LOG_STORE, S3_LOG_STORE, LOCAL_LOG_STORE]
