"""The remote tier's step through Spark with its second witnesses: a bucket whose manifest contradicts its key (a
lying witness) never plans that segment; the run's controller and crawl tables give the partition leader's lineage,
so a segment outside it is ``remote_outside_lineage`` (never planned) and one inside stays ``remote_ok``; a
follower's checkpoint, under which the outside segment would look inside, is never the one used."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from remote_builders import NOW, uid
from witness_scenario import (
    DELETED_AT,
    FOLLOWER_LINEAGE,
    GONE,
    LEADER_EPOCH,
    LEADER_LINEAGE,
    LIVE,
    PREFIX,
    SEG,
    epochs_json,
    events,
    write_bucket,
)

from pipelines.config.load import config_from_dict
from pipelines.metadata.image import ConfigsImage, MetadataImage, PartitionImage, TopicImage, TopicsImage
from pipelines.metadata.source import ControllerView
from pipelines.orchestrate.remote_tier_step import remote_tier_step
from pipelines.orchestrate.steps import of_run
from pipelines.remote_tier.metadata_writer import write_metadata_replica
from pipelines.tables.warehouse_store import warehouse_store

# The Spark step with the witnesses, as test_remote_tables.py (second tier): ~200 s of step runs; the rules
# themselves are proved without Spark in test_remote_witnesses.py (make test).
pytestmark = [pytest.mark.spark, pytest.mark.second_tier]

META = uid(9)
RUN = "20261128T000000Z-0000w1tn"
WHEN = datetime.fromtimestamp(NOW / 1000, tz=timezone.utc)


def _view() -> ControllerView:
    """A complete image: ``orders`` (leader 1 in epoch ``LEADER_EPOCH``) and a 1-partition metadata topic."""
    orders = TopicImage(LIVE, "orders", {0: PartitionImage(0, (1, 2), (1, 2), (), (), 1, LEADER_EPOCH, 3, ())})
    meta = TopicImage(META, "__remote_log_metadata", {0: PartitionImage(0, (1,), (1,), (), (), 1, 0, 0, ())})
    image = MetadataImage(topics=TopicsImage({LIVE: orders, META: meta}, {"orders": orders,
                                                                         "__remote_log_metadata": meta}),
                          configs=ConfigsImage({(2, "__remote_log_metadata"): {"retention.ms": "-1"}}),
                          complete=True, incomplete_reasons=())
    return ControllerView(image, (), "test")


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory) -> dict:
    from pipelines.tables.schemas import ALL_TABLES

    tmp = tmp_path_factory.mktemp("witnesses")
    write_bucket(tmp / "bucket")
    write_metadata_replica(tmp / "metadata", 0, events())
    config = config_from_dict({"cluster": "c1", "warehouse": str(tmp / "warehouse"), "detect": {"grace_ms": 86_400_000},
                               "remote_tier": {"layout": "aiven", "location": f"file://{tmp / 'bucket'}",
                                               "prefix": PREFIX, "owned_prefix": PREFIX,
                                               "metadata": {"source": str(tmp / "metadata")}}})
    store = warehouse_store(config.warehouse, engine="spark", spark=spark)
    for name in ("metadata_events", "partition_dirs", "controller_partitions", "remote_objects",
                 "remote_log_segments", "remote_findings"):
        store.create_if_missing(ALL_TABLES[name])
    base = {"cluster": "c1", "run_id": RUN}
    store.append("metadata_events", [{"cluster": "c1", "offset": 5, "event": "topic_removed", "run_id": RUN,
                                      "timestamp": datetime.fromtimestamp(DELETED_AT / 1000, tz=timezone.utc),
                                      "topic_id": str(GONE), "topic": "gone", "source": "test"}])
    store.append("controller_partitions", [{**base, "topic_id": str(LIVE), "topic": "orders", "partition": 0,
                                            "replicas": [1, 2], "isr": [1, 2], "leader": 1,
                                            "leader_epoch": LEADER_EPOCH}])
    store.append("partition_dirs", [
        {**base, "broker_id": broker, "log_dir": f"/data/b{broker}", "dir_name": "orders-0", "kind": "live",
         "topic": "orders", "partition": 0, "topic_id": str(LIVE), "crawled_at": WHEN,
         "leader_epochs": epochs_json(lineage)}
        for broker, lineage in ((1, LEADER_LINEAGE), (2, FOLLOWER_LINEAGE))])
    report = remote_tier_step(spark, store, config, RUN, _view(), now=WHEN)
    names = {str(v): k for k, v in SEG.items()}
    rows = [r.asDict() for r in of_run(store, "remote_findings", "c1", RUN).collect()]
    return {"report": report, "findings": {names[r["segment_id"]]: r for r in rows}}


def test_a_lying_manifest_in_the_bucket_is_never_planned(run) -> None:
    got = run["findings"]
    assert (got["lying"]["class"], got["lying"]["plannable"]) == ("remote_deleted_topic", False)
    assert "manifest names another segment" in got["lying"]["reason"]
    assert not got["garbled"]["plannable"] and "its manifest is unreadable" in got["garbled"]["reason"]
    assert (got["honest"]["class"], got["honest"]["plannable"]) == ("remote_deleted_topic", True)
    assert run["report"].counts["plannable"] == 1


def test_the_leaders_lineage_from_the_runs_tables_makes_remote_outside_lineage(run) -> None:
    got = run["findings"]
    assert (got["outside"]["class"], got["outside"]["plannable"]) == ("remote_outside_lineage", False)
    assert (got["inside"]["class"], got["inside"]["plannable"]) == ("remote_ok", False)
    assert "lineage was not checked" not in got["inside"]["reason"]


def test_a_crawl_table_older_than_leader_epochs_gives_no_lineage_not_an_error(spark, tmp_path) -> None:
    """A warehouse whose ``partition_dirs`` no crawl of this version wrote yet (the remote job run on its own)."""
    from pipelines.orchestrate.remote_tier_step import lineage_frame
    from pipelines.tables.schemas import ALL_TABLES, PARTITION_DIRS

    config = config_from_dict({"cluster": "c1", "warehouse": str(tmp_path / "warehouse")})
    store = warehouse_store(config.warehouse, engine="spark", spark=spark)
    store.create_if_missing(ALL_TABLES["controller_partitions"])
    old = ", ".join(f"CAST(NULL AS {c.type}) AS {c.name}" for c in PARTITION_DIRS.columns if c.name != "leader_epochs")
    spark.sql(f"SELECT {old}").where("false").write.format("delta").save(store.table_uri("partition_dirs"))
    partitions = spark.createDataFrame([(str(LIVE), 0)], "topic_id string, partition int")
    assert lineage_frame(store, config, RUN, partitions).count() == 0
