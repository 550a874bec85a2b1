"""The second witnesses in the Spark task's own function (``classify_group``, no Spark): the ``.rsm-manifest`` of a
plannable segment is read and a lying or unreadable one blocks it; the lineage row that travels with a partition's
events makes ``remote_outside_lineage``; and the crawl keeps the ``leader-epoch-checkpoint`` it parsed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from remote_builders import DAY, NOW, OLD, uid
from witness_scenario import (
    DELETED_AT,
    GONE,
    LEADER_LINEAGE,
    LIVE,
    PREFIX,
    SEG,
    epochs_json,
    events,
    write_bucket,
)

from pipelines.remote_tier.classify import ControllerTopics
from pipelines.remote_tier.listing import parse_listing
from pipelines.remote_tier.metadata_sources import event_row
from pipelines.remote_tier.metadata_topic import read_replica
from pipelines.remote_tier.metadata_writer import write_metadata_replica
from pipelines.remote_tier.spark_classify import ClassifyParams, classify_group, lineage_row

pytestmark = pytest.mark.timeout(120)


def _params(bucket: Path, reads: dict, **over) -> ClassifyParams:
    fields = {"cluster": "c1", "run_id": "r1", "reads": reads, "num_partitions": 1, "retention_infinite": True,
              "controller": ControllerTopics(frozenset({LIVE}), True, {GONE: DELETED_AT}), "now_ms": NOW,
              "grace_ms": DAY, "plan_untracked": False, "owned_prefix": PREFIX, "incomplete": None,
              "layout": "aiven", "location": f"file://{bucket}"}
    return ClassifyParams(**{**fields, **over})


def _findings(tmp_path: Path, *, lineage: tuple | None = LEADER_LINEAGE, as_of: int = NOW, **over) -> dict:
    """Classify each (topic id, partition) group as the task does; findings by segment name."""
    bucket = tmp_path / "bucket"
    rows = list(parse_listing(write_bucket(bucket), "aiven", PREFIX))
    read = read_replica(write_metadata_replica(tmp_path / "meta", 0, events()))
    event_rows = [{"_kind": "event", "source": read.source, **event_row(e)} for e in read.events]
    if lineage is not None:
        event_rows.append(lineage_row(str(LIVE), 0, epochs_json(lineage), as_of, "broker 1 d/orders-0"))
    params = _params(bucket, {0: read}, **over)
    out = {}
    for tid in (LIVE, GONE):
        group = [r for r in rows if r.topic_id == tid]
        mine = [r for r in event_rows if r["topic_id"] == str(tid)]
        found = classify_group(params, group, mine)
        out.update({r["segment_id"]: r for r in found if r["_table"] == "remote_findings"})
    names = {str(v): k for k, v in SEG.items()}
    return {names[k]: v for k, v in out.items()}


def test_a_manifest_that_contradicts_its_key_makes_the_segment_unplannable(tmp_path) -> None:
    got = _findings(tmp_path)
    lying = got["lying"]
    assert (lying["class"], lying["plannable"]) == ("remote_deleted_topic", False)
    assert "manifest names another segment" in lying["reason"] and str(uid(77)) in lying["reason"]
    garbled = got["garbled"]
    assert not garbled["plannable"] and "its manifest is unreadable" in garbled["reason"]
    honest = got["honest"]  # the same read of a truthful manifest blocks nothing
    assert (honest["class"], honest["plannable"]) == ("remote_deleted_topic", True)


def test_a_manifest_is_read_only_for_a_segment_that_would_be_plannable(tmp_path) -> None:
    """Outside ``owned_prefix`` nothing is plannable: no manifest is read (a FIFO in its place would hang the read)."""
    got = _findings(tmp_path, owned_prefix="elsewhere/")
    assert not any(f["plannable"] for f in got.values())
    assert not any("manifest" in f["reason"] for f in got.values())


def test_a_fifo_planted_as_a_manifest_is_an_unreadable_witness_not_a_hang(tmp_path) -> None:
    bucket = tmp_path / "bucket"
    listed = write_bucket(bucket)
    fifo = next(o.key for o in listed if str(SEG["honest"]) in o.key and o.key.endswith(".rsm-manifest"))
    os.unlink(bucket / fifo)
    os.mkfifo(bucket / fifo)
    rows = list(parse_listing(listed, "aiven", PREFIX))
    read = read_replica(write_metadata_replica(tmp_path / "meta", 0, events()))
    event_rows = [{"_kind": "event", "source": read.source, **event_row(e)} for e in read.events
                  if e.topic_id == GONE]
    out = {r["segment_id"]: r for r in classify_group(_params(bucket, {0: read}), [r for r in rows
           if r.topic_id == GONE], event_rows) if r["_table"] == "remote_findings"}
    honest = out[str(SEG["honest"])]
    assert not honest["plannable"] and "not a regular file" in honest["reason"]


def test_a_segment_outside_the_leaders_lineage_is_reported_never_planned(tmp_path) -> None:
    got = _findings(tmp_path)
    assert (got["outside"]["class"], got["outside"]["plannable"]) == ("remote_outside_lineage", False)
    assert "outside the partition leader's epoch lineage" in got["outside"]["reason"]
    assert (got["inside"]["class"], got["inside"]["plannable"]) == ("remote_ok", False)


def test_without_a_lineage_or_with_one_older_than_the_copy_nothing_is_judged_outside(tmp_path) -> None:
    none = _findings(tmp_path / "a", lineage=None)
    assert none["outside"]["class"] == "remote_ok" and "lineage was not checked" in none["outside"]["reason"]
    stale = _findings(tmp_path / "b", as_of=OLD)  # the leader's replica was crawled before the copy finished
    assert stale["outside"]["class"] == "remote_ok" and "copied after the leader's replica was crawled" in \
        stale["outside"]["reason"]


def test_the_crawl_keeps_the_leader_epoch_checkpoint_it_parsed(tmp_path) -> None:
    from pipelines.crawl.local_crawl import crawl_local
    from tests.crawl.conftest import Broker

    log_dir = tmp_path / "d0"
    for name, checkpoint in (("orders-0", "0\n2\n0 0\n2 100\n"), ("orders-1", "0\n0\n"), ("orders-2", "0\nnot\n")):
        (log_dir / name).mkdir(parents=True)
        (log_dir / name / "00000000000000000000.log").write_bytes(b"")
        (log_dir / name / "leader-epoch-checkpoint").write_text(checkpoint)
    (log_dir / "orders-3").mkdir()
    result = crawl_local([Broker(1, (str(log_dir),), {})], run_id="r1", cluster="c1")
    got = {r["dir_name"]: r["leader_epochs"] for r in result.partition_dirs}
    assert got == {"orders-0": "[[0,0],[2,100]]", "orders-1": None, "orders-2": None, "orders-3": None}


def test_manifests_on_an_object_store_are_read_bounded_and_each_failure_stays_its_own(tmp_path) -> None:
    """Through fsspec's memory store (ranged reads, as on S3): the lying one is parsed and names another segment, one
    listed above the bound is never fetched, one that grew past it after the listing is refused, a missing one is
    that segment's error only."""
    import fsspec

    from pipelines.remote_tier.aiven_manifest import MAX_MANIFEST_BYTES, ManifestWitness
    from pipelines.remote_tier.manifest_reads import read_manifests

    listed = write_bucket(tmp_path / "bucket")
    fs = fsspec.filesystem("memory")
    root = "/witness-tier"
    for o in listed:
        fs.pipe(f"{root}/{o.key}", (tmp_path / "bucket" / o.key).read_bytes())
    rows = list(parse_listing(listed, "aiven", PREFIX))
    by_name = {n: next(r for r in rows if r.segment_id == SEG[n] and r.object_kind == "rsm-manifest") for n in SEG}
    fs.pipe(f"{root}/{by_name['inside'].key}", b" " * (MAX_MANIFEST_BYTES + 10))  # grew after the listing
    fs.rm(f"{root}/{by_name['outside'].key}")
    rows = [r if r is not by_name["garbled"] else type(r)(**{**{f: getattr(r, f) for f in r.__slots__},
                                                             "size": MAX_MANIFEST_BYTES + 1}) for r in rows]
    got = read_manifests(f"memory://{root}", {}, rows, [r.segment for r in rows if r.segment])
    names = {v: k for k, v in SEG.items()}
    got = {names[seg[2]]: v for seg, v in got.items()}
    assert isinstance(got["honest"], ManifestWitness) and got["honest"].segment_id == SEG["honest"]
    assert isinstance(got["lying"], ManifestWitness) and got["lying"].segment_id == uid(77)
    assert got["garbled"].startswith("listed at") and "not read" in got["garbled"]
    assert "larger than" in got["inside"]
    assert "FileNotFoundError" in got["outside"]
