from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from sim_reference import MiniImage, reference_classes, replay
from sim_specs import ALL_SPEC, NOW_MS

from pipelines.config import load_config
from pipelines.detect import classes as c
from pipelines.kafka.logdir import scan_log_dir
from pipelines.kafka.meta_properties import read_meta_properties
from pipelines.kafka.metadata_log import iter_metadata_log
from pipelines.kafka.snapshot_names import parse_snapshot_name
from pipelines.simulate import PRESETS, ClusterSpec, GenerationResult, OutputNotEmpty, generate, load_truth
from pipelines.simulate.scenario import build_scenario
from pipelines.simulate.spec import ANOMALIES, REASSIGNMENT_IN_FLIGHT
from pipelines.simulate.truth import DELETE_MARGIN_MS

# Problems scan_log_dir reports for the anomalies we inject on purpose, by class.
EXPECTED_PROBLEM_CODES = {
    c.MISSING_PARTITION_METADATA: {"partition_metadata_missing"},
    c.CORRUPT_PARTITION_METADATA: {"partition_metadata_invalid_id"},
    c.UNPARSEABLE_DIR: {"unparseable_dir_name"},
}


def test_every_class_appears_with_all_anomalies(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    # unknown needs an incomplete image, which we never write; the topic-deletion classes are ZooKeeper mode's
    expected = set(c.ALL_CLASSES) - {c.UNKNOWN, c.PENDING_TOPIC_DELETION, c.STUCK_TOPIC_DELETION}
    assert set(truth.counts()) == expected
    assert truth.skipped_anomalies == ()


def test_truth_matches_an_independent_reading_of_the_files(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    reference = reference_classes(truth, DELETE_MARGIN_MS)
    expected = {(i.log_dir, i.dir_name): i.cls for i in truth.items}
    assert expected.keys() == reference.keys(), "truth lists exactly the dirs on disk"
    wrong = {k: (expected[k], reference[k]) for k in expected if expected[k] != reference[k]}
    assert not wrong


def test_protected_items_are_the_internal_and_metadata_dirs(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    protected = {i.topic for i in truth.items if i.protected}
    assert protected == {"__consumer_offsets", "__cluster_metadata"}
    assert all(i.cls in (c.OK, c.METADATA_LOG) for i in truth.items if i.protected)


def test_in_flight_reassignment_targets_hold_ok_dirs(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    image = replay(Path(truth.metadata_dir))
    adding = {(b, name, p) for name, parts in image.topics.values() for p, reg in parts.items()
              for b in reg["adding_replicas"]}
    assert len(adding) == ALL_SPEC.anomalies["reassignment_in_flight"]
    for broker, topic, p in adding:
        [item] = [i for i in truth.items if (i.broker_id, i.topic, i.partition) == (broker, topic, p)]
        assert item.cls == c.OK
        assert item.dir_name == f"{topic}-{p}"


def test_image_is_as_planned(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    image = replay(Path(truth.metadata_dir))
    names = {name for name, _ in image.topics.values()}
    regular = {"orders", "payments.v2", "click_stream"}
    stories = {"clickstream", "inventory.snapshots", "orders.rebalancing", "ops.replay-buffer"}
    assert names == {"__consumer_offsets"} | regular | stories  # retired.*, tmp.migration-test: deleted
    for name, parts in image.topics.values():
        if name in regular:
            assert sorted(parts) == list(range(ALL_SPEC.partitions_per_topic))
            assert all(len(set(reg["replicas"])) == len(reg["replicas"]) for reg in parts.values())
    assert image.features["metadata.version"] >= 17  # JBOD records need 3.7-IV2
    for b in truth.brokers:
        assert tuple(str(d) for d in image.brokers[b.broker_id]["log_dirs"]) == b.directory_ids
        assert image.brokers[b.broker_id]["fenced"] == b.down
    assert sum(b.down for b in truth.brokers) == 1


def test_log_dirs_scan_with_only_the_injected_problems(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    by_dir = {(i.log_dir, i.dir_name): i.cls for i in truth.items}
    for b in truth.brokers:
        for ld, dir_id in zip(b.log_dirs, b.directory_ids, strict=True):
            inv = scan_log_dir(ld)
            assert inv.problems == (), inv.problems
            assert inv.meta_properties is not None
            assert (inv.meta_properties.node_id, str(inv.meta_properties.directory_id)) == (b.broker_id, dir_id)
            assert inv.meta_properties.cluster_id == truth.cluster_id
            assert inv.has_bootstrap_checkpoint and inv.has_lock_file
            assert (inv.clean_shutdown is None) == b.down
            for d in inv.partition_dirs:
                codes = {p.code for p in d.problems}
                assert codes == EXPECTED_PROBLEM_CODES.get(by_dir[(ld, d.name)], set()), (d.name, d.problems)


def test_checkpoints_list_exactly_the_current_logs(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    for b in truth.brokers:
        for ld in b.log_dirs:
            inv = scan_log_dir(ld)
            listed = {f"{e.topic}-{e.partition}" for e in inv.checkpoints["recovery-point-offset-checkpoint"].entries}
            current = {d.name for d in inv.partition_dirs if d.kind == "live"}
            assert listed == current


def test_partition_dirs_hold_files_per_partition(all_cluster: GenerationResult) -> None:
    truth = load_truth(all_cluster.truth_path)
    ok = next(i for i in truth.items if i.cls == c.OK and not i.protected)
    path = Path(ok.log_dir) / ok.dir_name
    assert len(os.listdir(path)) == ALL_SPEC.files_per_partition
    logs = [p for p in path.iterdir() if p.suffix == ".log"]
    assert logs and all(0 < p.stat().st_size <= ALL_SPEC.segment_bytes for p in logs)
    assert all(p.stat().st_blocks == 0 for p in logs), "segments are sparse"
    missing = next(i for i in truth.items if i.cls == c.MISSING_PARTITION_METADATA)
    assert not (Path(missing.log_dir) / missing.dir_name / "partition.metadata").exists()


def test_cluster_yaml_is_a_valid_config(all_cluster: GenerationResult) -> None:
    config = load_config(all_cluster.config_path)
    truth = load_truth(all_cluster.truth_path)
    assert [b.broker_id for b in config.brokers] == [b.broker_id for b in truth.brokers]
    assert config.metadata.kind == "metadata_log" and config.metadata.source == truth.metadata_dir
    assert config.warehouse == str(all_cluster.out / "warehouse")
    assert config.detect.file_delete_delay_ms == ALL_SPEC.file_delete_delay_ms


def test_replays_with_load_metadata_to_a_complete_image(all_cluster: GenerationResult) -> None:
    metadata = pytest.importorskip("pipelines.metadata")
    if not hasattr(metadata, "load_metadata"):
        pytest.skip("pipelines.metadata.load_metadata has not landed yet")
    truth = load_truth(all_cluster.truth_path)
    result = metadata.load_metadata(truth.metadata_dir)
    assert not result.errors
    image = result.image
    assert image.complete, image.incomplete_reasons
    reference = replay(Path(truth.metadata_dir))
    assert {str(t) for t in image.topics.by_id} == {str(t) for t in reference.topics}
    for tid, (name, parts) in reference.topics.items():
        topic = image.topics.by_id[tid]
        assert topic.name == name
        for p, reg in parts.items():
            assert tuple(topic.partitions[p].replicas) == tuple(reg["replicas"])
            assert tuple(topic.partitions[p].adding_replicas) == tuple(reg["adding_replicas"])
            assert tuple(topic.partitions[p].directories) == tuple(reg["directories"])
    for item in truth.items:
        if item.cls == c.OK and not item.protected:
            partition = image.topics.by_name[item.topic].partitions[item.partition]
            assert item.broker_id in partition.replicas + partition.adding_replicas


def _digest(root: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            data = p.read_bytes() if p.stat().st_blocks else b""
            out[rel] = (p.stat().st_size, hashlib.sha256(data).hexdigest())
    return out


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=3, topics=2, partitions_per_topic=3, jbod_dirs=2, seed=11, anomalies=PRESETS["small"],
                       internal_partitions=2, files_per_partition=3, now_ms=NOW_MS)
    a = generate(spec, tmp_path / "a")
    b = generate(spec, tmp_path / "b")
    da, db = _digest(a.out), _digest(b.out)
    da.pop("truth.json"), db.pop("truth.json")  # they hold their own absolute paths
    da.pop("cluster.yaml"), db.pop("cluster.yaml")
    assert da == db
    other = generate(ClusterSpec(**{**_fields(spec), "seed": 12}), tmp_path / "c")
    assert _digest(other.out) != da


def _fields(spec: ClusterSpec) -> dict:
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__}


def test_refuses_a_non_empty_dir_and_replaces_a_previous_simulation(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=2, topics=1, partitions_per_topic=1, anomalies=PRESETS["none"], internal_partitions=1,
                       now_ms=NOW_MS)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(OutputNotEmpty):
        generate(spec, foreign, force=True)
    assert (foreign / "keep.txt").read_text() == "mine"
    first = generate(spec, tmp_path / "sim")
    with pytest.raises(OutputNotEmpty):
        generate(spec, tmp_path / "sim")
    again = generate(spec, tmp_path / "sim", force=True)
    assert again.files == first.files


def test_clean_cluster_has_only_ok_and_metadata(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=3, topics=2, partitions_per_topic=4, anomalies=PRESETS["none"], internal_partitions=2,
                       now_ms=NOW_MS)
    truth = load_truth(generate(spec, tmp_path / "sim").truth_path)
    assert set(truth.counts()) == {c.OK, c.METADATA_LOG}
    assert truth.counts()[c.OK] == (2 * 4 + 2) * 3
    assert not any(b.down for b in truth.brokers)


def test_separate_controller_keeps_metadata_out_of_broker_dirs(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=3, topics=1, partitions_per_topic=2, anomalies=PRESETS["small"], internal_partitions=1,
                       separate_controller=True, now_ms=NOW_MS)
    result = generate(spec, tmp_path / "sim")
    truth = load_truth(result.truth_path)
    assert c.METADATA_LOG not in truth.counts()
    meta_root = Path(truth.metadata_dir).parent
    props = read_meta_properties((meta_root / "meta.properties").read_bytes())
    assert props.node_id == 4
    assert not (meta_root / "recovery-point-offset-checkpoint").exists()
    assert replay(Path(truth.metadata_dir)).topics
    assert set(reference_classes(truth, DELETE_MARGIN_MS).values()) == set(truth.counts())


def test_without_jbod_the_jbod_anomalies_are_reported_skipped(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=3, topics=2, partitions_per_topic=3, anomalies=PRESETS["small"], internal_partitions=1,
                       now_ms=NOW_MS)
    result = generate(spec, tmp_path / "sim")
    assert set(result.skipped) == {c.WRONG_LOG_DIR, c.DUPLICATE_REPLICA, c.FUTURE_IN_PROGRESS}
    truth = load_truth(result.truth_path)
    assert c.ABANDONED_FUTURE in truth.counts() and c.WRONG_LOG_DIR not in truth.counts()
    reference = reference_classes(truth, DELETE_MARGIN_MS)
    assert all(reference[(i.log_dir, i.dir_name)] == i.cls for i in truth.items)


def test_tail_changes_apply_to_the_snapshot_state(all_cluster: GenerationResult) -> None:
    """The snapshot is the image at its end offset: every tail change changes something, and the down broker is
    still unfenced in the snapshot (it crashes later, in the tail)."""
    truth = load_truth(all_cluster.truth_path)
    metadata_dir = Path(truth.metadata_dir)
    [snapshot] = metadata_dir.glob("*.checkpoint")
    image = MiniImage()
    for entry in iter_metadata_log(snapshot):
        if not entry.is_control:
            image.apply(entry.record.name, entry.record.fields)
    [down] = [b.broker_id for b in truth.brokers if b.down]
    assert image.brokers[down]["fenced"] is False
    end = parse_snapshot_name(snapshot.name)[0]
    changes = 0
    for segment in sorted(metadata_dir.glob("*.log")):
        for entry in iter_metadata_log(segment):
            rec = entry.record
            if entry.offset < end or entry.is_control or rec.name != "PartitionChangeRecord":
                continue
            before = dict(image.topics[rec.fields["topic_id"]][1][rec.fields["partition_id"]])
            image.apply(rec.name, rec.fields)
            after = image.topics[rec.fields["topic_id"]][1][rec.fields["partition_id"]]
            assert before != after, entry.offset
            changes += 1
    assert changes >= 2 * 3 * 3  # three reassign-away stories of three cases, two records each


def test_without_snapshot_the_whole_log_replays(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=3, topics=2, partitions_per_topic=3, jbod_dirs=2, anomalies=PRESETS["small"],
                       internal_partitions=2, snapshot=False, now_ms=NOW_MS)
    truth = load_truth(generate(spec, tmp_path / "sim").truth_path)
    metadata_dir = Path(truth.metadata_dir)
    assert not list(metadata_dir.glob("*.checkpoint"))
    assert (metadata_dir / f"{0:020d}.log").exists()
    reference = reference_classes(truth, DELETE_MARGIN_MS)
    assert all(reference[(i.log_dir, i.dir_name)] == i.cls for i in truth.items)


def test_spec_validation() -> None:
    with pytest.raises(ValueError, match="unknown anomalies"):
        ClusterSpec(anomalies={"nonsense": 1})
    with pytest.raises(ValueError, match="2 brokers"):
        ClusterSpec(brokers=1)
    with pytest.raises(ValueError, match="files per partition"):
        ClusterSpec(files_per_partition=0)
    assert ClusterSpec(brokers=1, anomalies=PRESETS["none"]).effective_replication == 1


@pytest.mark.parametrize("brokers", [2, 3])
@pytest.mark.parametrize("jbod_dirs", [1, 2])
def test_replication_one_injects_or_reports_every_anomaly(brokers: int, jbod_dirs: int) -> None:
    """Each anomaly alone, over several seeds: injected, or listed as skipped, never a crash (replication 1 once
    hit a StopIteration). With 2 brokers (one down) the reassignment stories have no live target: skipped."""
    for seed in range(8):
        for anomaly in ANOMALIES:
            spec = ClusterSpec(brokers=brokers, topics=1, partitions_per_topic=1, replication=1, jbod_dirs=jbod_dirs,
                               seed=seed, anomalies={anomaly: 1}, internal_partitions=0, now_ms=NOW_MS)
            scenario = build_scenario(spec)
            produced = {d.cls for d in scenario.dirs}
            in_flight = any(reg["adding_replicas"] for t in scenario.log.topics.values()
                            for reg in t.partitions.values())
            injected = in_flight if anomaly == REASSIGNMENT_IN_FLIGHT else anomaly in produced
            assert injected != (anomaly in scenario.skipped), (brokers, jbod_dirs, seed, anomaly)


def test_one_broker_clean_cluster_builds() -> None:
    scenario = build_scenario(ClusterSpec(brokers=1, replication=3, anomalies=PRESETS["none"], now_ms=NOW_MS))
    assert {d.cls for d in scenario.dirs} == {c.OK, c.METADATA_LOG}
    assert not any(b.down for b in scenario.brokers)
