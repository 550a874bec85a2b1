"""The remote tier's step through Spark: the three tables hold the right rows for a LocalTieredStorage tree and an
Aiven layout under ``file://``; two clusters' rows stay apart; an error key is an error row and never plannable; an
S3 Inventory report gives what the listing gives."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from remote_builders import DAY, NOW, OLD, copy_started, uid, update

from pipelines.config.load import config_from_dict
from pipelines.metadata.image import (
    ConfigsImage,
    MetadataImage,
    PartitionImage,
    TopicImage,
    TopicsImage,
)
from pipelines.metadata.source import ControllerView
from pipelines.orchestrate.remote_tier_step import remote_tier_step
from pipelines.orchestrate.steps import of_run
from pipelines.remote_tier.events import SegmentState
from pipelines.remote_tier.metadata_writer import write_metadata_replica
from pipelines.tables.warehouse_store import warehouse_store

pytestmark = [pytest.mark.spark, pytest.mark.second_tier]  # four Spark step runs: ~15 min at load ~30 here

S = SegmentState
LIVE, GONE, META = uid(1), uid(2), uid(9)
SEG = {name: uid(10 + i) for i, name in enumerate(("ok", "started", "leaked", "untracked", "gone", "blocked"))}
RUN = "20261128T000000Z-0000abcd"
WHEN = datetime.fromtimestamp(NOW / 1000, tz=timezone.utc)


def _view(live: dict) -> ControllerView:
    """A complete controller image with ``live`` topics (id -> name) and a 1-partition metadata topic kept forever."""
    def topic(tid, name):
        part = PartitionImage(0, (1,), (1,), (), (), 1, 0, 0, ())
        return TopicImage(tid, name, {0: part})

    topics = [topic(tid, name) for tid, name in {**live, META: "__remote_log_metadata"}.items()]
    image = MetadataImage(topics=TopicsImage({t.topic_id: t for t in topics}, {t.name: t for t in topics}),
                          configs=ConfigsImage({(2, "__remote_log_metadata"): {"retention.ms": "-1"}}),
                          complete=True, incomplete_reasons=())
    return ControllerView(image, (), "test")


def _events() -> list:
    evs = []
    for name, tid, topic in (("ok", LIVE, "orders"), ("started", LIVE, "orders"), ("leaked", LIVE, "orders"),
                             ("gone", GONE, "gone"), ("blocked", GONE, "gone")):
        sid = SEG[name]
        evs.append(copy_started(topic, tid, 0, sid, OLD, start=_start(name)))
        if name != "started":
            evs.append(update(topic, tid, 0, sid, S.COPY_SEGMENT_FINISHED, OLD + 1))
        if name == "leaked":
            evs += [update(topic, tid, 0, sid, S.DELETE_SEGMENT_STARTED, OLD + 2),
                    update(topic, tid, 0, sid, S.DELETE_SEGMENT_FINISHED, OLD + 3)]
    return evs


def _start(name: str) -> int:
    return 100 * list(SEG).index(name)


def _touch(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (OLD / 1000, OLD / 1000))


def _segments() -> list[tuple[str, object, str]]:
    return [("orders", LIVE, n) for n in ("ok", "started", "leaked", "untracked")] + \
        [("gone", GONE, n) for n in ("gone", "blocked")]


def local_tree(root: Path) -> list[str]:
    """A LocalTieredStorage ``rsm.config.dir``: the segments, a loose file and a key of no layout."""
    keys = []
    for topic, tid, name in _segments():
        for suffix, size in (("log", 1000), ("index", 10), ("timeindex", 10)):
            keys.append(f"kafka-tiered-storage/{topic}-0-{tid}/{_start(name):020d}-{SEG[name]}.{suffix}")
            _touch(root / keys[-1], size)
    keys.append("kafka-tiered-storage/stray-file.txt")
    _touch(root / keys[-1], 3)
    keys.append(f"kafka-tiered-storage/orders-0-{LIVE}/not-a-segment.log")
    _touch(root / keys[-1], 5)
    return keys


def aiven_tree(bucket: Path, prefix: str) -> list[str]:
    keys = []
    for topic, tid, name in _segments():
        for suffix, size in (("log", 1000), ("indexes", 20), ("rsm-manifest", 5)):
            keys.append(f"{prefix}{topic}-{tid}/0/{_start(name):020d}-{SEG[name]}.{suffix}")
            _touch(bucket / keys[-1], size)
    keys.append(f"{prefix}orders-{LIVE}/0/{_start('ok'):020d}-{SEG['ok']}.index")  # an old per-index suffix
    _touch(bucket / keys[-1], 7)
    return keys


def inventory_of(bucket: Path, keys: list[str], out: Path, source_bucket: str) -> Path:
    """An S3 Inventory report (Parquet, AWS's columns) of the files ``keys`` under ``bucket``, in two data files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("bucket", pa.string()), ("key", pa.string()), ("size", pa.int64()),
                        ("last_modified_date", pa.timestamp("ms", tz="UTC"))])
    files = []
    for i, part in enumerate((keys[::2], keys[1::2])):
        name = f"data/part-{i}.parquet"
        (out / "data").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"bucket": [source_bucket] * len(part), "key": part,
                                 "size": [(bucket / k).stat().st_size for k in part],
                                 "last_modified_date": [OLD] * len(part)}, schema=schema), out / name)
        files.append({"key": name, "size": (out / name).stat().st_size, "MD5checksum": "0" * 32})
    manifest = {"sourceBucket": source_bucket, "destinationBucket": "arn:aws:s3:::inventory",
                "version": "2016-11-30", "creationTimestamp": str(NOW), "fileFormat": "Parquet",
                "fileSchema": "message s3.inventory { required binary bucket (UTF8); }", "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out / "manifest.json"


def _config(tmp: Path, cluster: str, tier: dict) -> object:
    meta = tmp / "metadata"
    if not meta.exists():
        write_metadata_replica(meta, 0, _events())
    return config_from_dict({"cluster": cluster, "warehouse": str(tmp / "warehouse"),
                             "detect": {"grace_ms": DAY},
                             "remote_tier": {"metadata": {"source": str(meta)}, **tier}})


def _run(spark, tmp: Path, cluster: str, tier: dict):
    from pipelines.tables.schemas import ALL_TABLES

    config = _config(tmp, cluster, tier)
    store = warehouse_store(config.warehouse, engine="spark", spark=spark)
    for name in ("metadata_events", "remote_objects", "remote_log_segments", "remote_findings"):
        store.create_if_missing(ALL_TABLES[name])
    store.append("metadata_events", [{"cluster": cluster, "offset": 5, "event": "topic_removed",
                                      "timestamp": datetime.fromtimestamp(OLD / 1000, tz=timezone.utc),
                                      "topic_id": str(GONE), "topic": "gone", "source": "test", "run_id": RUN}])
    report = remote_tier_step(spark, store, config, RUN, _view({LIVE: "orders"}), now=WHEN)
    return store, report


def _rows(store, table: str, cluster: str) -> list[dict]:
    return [r.asDict() for r in of_run(store, table, cluster, RUN).collect()]


def _by_segment(rows: list[dict]) -> dict:
    names = {str(v): k for k, v in SEG.items()}
    return {names[r["segment_id"]]: r for r in rows if r["segment_id"] is not None}


EXPECTED = {"ok": ("remote_ok", False), "started": ("remote_copy_incomplete", True),
            "leaked": ("remote_delete_leaked", True), "untracked": ("remote_untracked", False),
            "gone": ("remote_deleted_topic", True), "blocked": ("remote_deleted_topic", True)}


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> dict:
    """One warehouse, one run id, three clusters: ``local`` (a LocalTieredStorage tree), ``aiven`` (Aiven's layout
    under file://, owned_prefix = the deleted topic's folder only) and ``inventory`` (the same Aiven keys read from an
    S3 Inventory report instead of listed)."""
    tmp = tmp_path_factory.mktemp("remote-tables")
    root, bucket = tmp / "rsm", tmp / "bucket"
    local_keys = local_tree(root)
    aiven_keys = aiven_tree(bucket, "tiered/")
    manifest = inventory_of(bucket, aiven_keys, tmp / "report", "tier-bucket")
    aiven = {"layout": "aiven", "prefix": "tiered/", "owned_prefix": f"tiered/gone-{GONE}/",
             "read_manifests": False}  # its s3:// bucket is not there to read them (test_remote_witnesses_spark.py)
    out = {"local_keys": local_keys, "aiven_keys": aiven_keys}
    _, out["local"] = _run(spark, tmp, "local", {"layout": "local_tiered_storage", "location": f"file://{root}",
                                                 "owned_prefix": "kafka-tiered-storage/"})
    _, out["aiven"] = _run(spark, tmp, "aiven", {**aiven, "location": f"file://{bucket}"})
    out["store"], out["inventory"] = _run(spark, tmp, "inventory", {
        **aiven, "location": "s3://tier-bucket", "inventory_manifest": str(manifest),
        "inventory_data_root": str(tmp / "report")})
    damaged = tmp / "damaged"
    shutil.copytree(tmp / "report", damaged)
    (damaged / "data" / "part-1.parquet").write_bytes(b"PAR1 not parquet")
    _, out["damaged"] = _run(spark, tmp, "damaged", {
        **aiven, "owned_prefix": "tiered/", "location": "s3://tier-bucket",
        "inventory_manifest": str(damaged / "manifest.json"), "inventory_data_root": str(damaged)})
    return out


def test_local_tiered_storage_tree_fills_the_three_tables(runs) -> None:
    store, keys = runs["store"], runs["local_keys"]
    objects = _rows(store, "remote_objects", "local")
    assert sorted(r["key"] for r in objects) == sorted(keys)
    errors = {r["key"]: r["error"] for r in objects if r["error"] is not None}
    assert set(errors) == {keys[-2], keys[-1]}  # the loose file and the key of no layout
    good = [r for r in objects if r["error"] is None]
    assert all(r["topic_id"] and r["segment_id"] and r["object_kind"] and r["size"] > 0 for r in good)

    segments = _by_segment(_rows(store, "remote_log_segments", "local"))
    assert {k: v["state"] for k, v in segments.items()} == {
        "ok": "COPY_SEGMENT_FINISHED", "started": "COPY_SEGMENT_STARTED", "leaked": "DELETE_SEGMENT_FINISHED",
        "gone": "COPY_SEGMENT_FINISHED", "blocked": "COPY_SEGMENT_FINISHED"}
    assert segments["leaked"]["metadata_partitions"] == [0] and segments["ok"]["segment_bytes"] == 1000
    assert json.loads(segments["ok"]["leader_epochs"]) == [[0, _start("ok")]]

    findings = _by_segment(_rows(store, "remote_findings", "local"))
    assert {k: (v["class"], v["plannable"]) for k, v in findings.items()} == EXPECTED
    assert findings["gone"]["bytes"] == 1020 and findings["gone"]["objects"] == 3
    assert "not a topic of the controller's image" in findings["gone"]["reason"]
    assert runs["local"].counts["error_rows"] == 2 and runs["local"].counts["listing_failures"] == 0


def test_aiven_layout_error_key_is_an_error_row_and_owned_prefix_limits_the_plan(runs) -> None:
    store, keys = runs["store"], runs["aiven_keys"]
    objects = _rows(store, "remote_objects", "aiven")
    assert sorted(r["key"] for r in objects) == sorted(keys)
    [bad] = [r for r in objects if r["error"] is not None]
    assert bad["key"] == keys[-1] and "suffix .index" in bad["error"]
    findings = _by_segment(_rows(store, "remote_findings", "aiven"))
    classes = {k: v["class"] for k, v in findings.items()}
    assert classes == {k: c for k, (c, _) in EXPECTED.items()}
    # only the deleted topic's folder is owned: its two segments are the only plannable ones
    assert {k for k, v in findings.items() if v["plannable"]} == {"gone", "blocked"}
    assert "outside remote_tier.owned_prefix" in findings["leaked"]["reason"]
    assert all(bad["key"] not in (r["reason"] or "") for r in findings.values())


def test_two_clusters_in_one_warehouse_keep_their_remote_rows_apart(runs) -> None:
    store = runs["store"]
    for table in ("remote_objects", "remote_log_segments", "remote_findings"):
        per = {c: _rows(store, table, c) for c in ("local", "aiven", "inventory", "damaged")}
        assert all(per.values()) and all({r["cluster"] for r in rows} == {c} for c, rows in per.items())
        assert of_run(store, table, None, RUN).count() == sum(map(len, per.values()))  # none replaced another's
    local_keys = {r["key"] for r in _rows(store, "remote_objects", "local")}
    assert local_keys.isdisjoint({r["key"] for r in _rows(store, "remote_objects", "aiven")})


def test_an_inventory_gives_what_the_listing_gives(runs) -> None:
    store = runs["store"]

    def without_cluster(table: str, cluster: str) -> list:
        rows = [{k: v for k, v in r.items() if k not in ("cluster", "etag")} for r in _rows(store, table, cluster)]
        return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))

    for table in ("remote_objects", "remote_log_segments", "remote_findings"):
        assert without_cluster(table, "inventory") == without_cluster(table, "aiven"), table
    assert runs["inventory"].counts["inventory_files"] == 2


def test_an_unreadable_inventory_file_plans_nothing(runs) -> None:
    """Half the report cannot be read: the other half's segments would miss keys, so nothing is plannable."""
    store = runs["store"]
    [failure] = [r for r in _rows(store, "remote_objects", "damaged") if r["object_kind"] == "listing_failure"]
    assert failure["key"] == "inventory:data/part-1.parquet" and "could not be listed" in failure["error"]
    findings = _rows(store, "remote_findings", "damaged")
    assert findings and not any(r["plannable"] for r in findings)
    assert all("listing is incomplete" in r["reason"] for r in findings if r["class"] != "remote_ok")
    assert runs["damaged"].counts["listing_failures"] == 1
    assert any("remote listing incomplete" in n for n in runs["damaged"].notes)
