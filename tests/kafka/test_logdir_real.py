"""scan_log_dir against real broker log dirs (../shared/real-logdirs, described by its MANIFEST.json).

Every expectation comes from the manifest, which was produced independently of this code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.kafka.logdir import LogDirInventory, scan_log_dir

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "real-logdirs"
MANIFEST = CORPUS / "MANIFEST.json"


def _roots() -> Iterator[Any]:
    if not MANIFEST.is_file():
        yield pytest.param(None, marks=pytest.mark.skip(reason=f"real log dirs not available at {CORPUS}"))
        return
    manifest = json.loads(MANIFEST.read_text())
    for repo in manifest["repos"]:
        for snap in repo["snapshots"]:
            for root in snap["roots"]:
                missing = tuple(m["path"] for m in snap["missing"])
                yield pytest.param((snap["corpus_path"], root, missing), id=f"{snap['corpus_path']}/{root['path']}")


_SCANS: dict[str, LogDirInventory] = {}


def _scan(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> tuple[LogDirInventory, dict[str, Any]]:
    corpus_path, root, _missing = case
    path = str(CORPUS / corpus_path / root["path"])
    if path not in _SCANS:
        _SCANS[path] = scan_log_dir(path)
    return _SCANS[path], root


@pytest.mark.parametrize("case", list(_roots()))
def test_topic_ids_match_manifest(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    inv, root = _scan(case)
    dirs = {d.name: d for d in inv.partition_dirs}
    for topic, info in root["topics"].items():
        for partition, topic_id in info["partition_topic_id"].items():
            d = dirs[f"{topic}-{partition}"]
            assert d.topic_id == topic_id
            assert d.partition_metadata_status == "ok"
            assert (d.topic, d.partition) == (topic, int(partition))
        for partition in info["without_partition_metadata"]:
            d = dirs[f"{topic}-{partition}"]
            assert d.partition_metadata_status == "missing" and d.topic_id is None
    assert len(inv.partition_dirs) == root["partition_dir_count"]
    assert (
        sum(1 for d in inv.partition_dirs if d.kind == "live" and not d.topic.startswith("__"))
        == root["user_partition_dir_count"]
    )


@pytest.mark.parametrize("case", list(_roots()))
def test_checkpoints_match_manifest(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    inv, root = _scan(case)
    for name, cp in inv.checkpoints.items():
        expected = root["checkpoints"].get(name)
        if expected is None:
            assert cp.status == "missing"
            continue
        assert cp.status == expected["status"]
        if expected["status"] == "ok":
            assert (cp.version, cp.declared_count, len(cp.entries)) == (
                expected["version"],
                expected["count"],
                expected["entries_parsed"],
            )
            assert sorted(e.dir_name for e in cp.entries) == sorted(expected["partitions"])


@pytest.mark.parametrize("case", list(_roots()))
def test_meta_properties_match_manifest(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    inv, root = _scan(case)
    if root["meta_properties"] is None:
        assert inv.meta_properties is None and inv.meta_properties_status == "missing"
        return
    mp = inv.meta_properties
    assert mp is not None
    assert dict(mp.raw) == root["meta_properties"]
    assert mp.version == int(root["meta_version"] or 0)
    assert mp.cluster_id == root["cluster_id"]
    expected_node = root["node_id"] if mp.version == 1 else root["broker_id"]
    assert mp.node_id == (None if expected_node is None else int(expected_node))
    assert (None if mp.directory_id is None else str(mp.directory_id)) == root["directory_id"]


def _absent_index_dirs(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> set[str]:
    """Partition dirs of this root with an .index/.timeindex listed as missing from the corpus."""
    root_path = case[1]["path"]
    return {
        Path(p).parent.name
        for p in case[2]
        if Path(p).parent.parent.as_posix() == root_path and p.endswith((".index", ".timeindex"))
    }


_ANOMALIES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"meta\.properties has an EMPTY cluster\.id"), "meta_properties_empty_cluster_id"),
    (re.compile(r"cluster\.id '.*' is not a 22-char base64url UUID"), "meta_properties_cluster_id_not_uuid"),
    (re.compile(r"no \(readable\) meta\.properties"), "meta_properties_missing"),
    (re.compile(r"(\S+): (\d+) checkpoint entr\(y/ies\) without a partition dir"), "checkpoint_entry_without_dir"),
    (re.compile(r"(\S+): (\d+) partition dir\(s\) absent from checkpoint"), "dir_absent_from_checkpoint"),
    (re.compile(r"(\d+) partition dir\(s\) have \.index/\.timeindex files but no matching \.log"), "index_without_log"),
    (re.compile(r"(\d+) partition dir\(s\) contain no segment files at all"), "no_segment_files"),
    (re.compile(r"__cluster_metadata-0 contains \*\.deleted files"), "transient_files"),
    (re.compile(r"topic '.*': non-contiguous partition set"), ""),  # a cluster-level observation, not a dir problem
]


@pytest.mark.parametrize("case", list(_roots()))
def test_anomalies_are_reported(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    inv, root = _scan(case)
    for anomaly in root["anomalies"]:
        matches = [(m, code) for pattern, code in _ANOMALIES if (m := pattern.match(anomaly))]
        assert matches, f"unrecognised manifest anomaly: {anomaly}"
        m, code = matches[0]
        if not code:
            continue
        problems = [p for p in inv.all_problems if p.code == code]
        assert problems or code == "index_without_log", f"{anomaly!r} not reported as {code}"
        if code in ("checkpoint_entry_without_dir", "dir_absent_from_checkpoint"):
            assert any(p.message.startswith(f"{m.group(1)}: {m.group(2)}: ") for p in problems)
        elif code == "index_without_log":
            # the manifest also counts index files that are in the commit but absent from the corpus (>= 4 MiB)
            with_log = {d.name for d in inv.partition_dirs if d.segment_count}
            seen = {Path(p.path).name for p in problems}
            assert len(seen | (_absent_index_dirs(case) - with_log)) == int(m.group(1))
        elif code == "no_segment_files":
            assert len(problems) == int(m.group(1))
        elif code == "transient_files":
            assert any(p.path.endswith("__cluster_metadata-0") for p in problems)
    fatal = [p for p in inv.all_problems if p.severity == "fatal"]
    assert sorted(Path(p.path).name for p in fatal) == sorted(root["odd_dirs"])
    assert list(inv.special_dirs) == list(root["special_dirs"])


@pytest.mark.parametrize("case", list(_roots()))
def test_cluster_metadata_dir(case: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    inv, root = _scan(case)
    assert inv.has_cluster_metadata == root["has_cluster_metadata_dir"]
    if not root["has_cluster_metadata_dir"]:
        return
    meta = next(d for d in inv.partition_dirs if d.name == "__cluster_metadata-0")
    expected = root["cluster_metadata"]
    assert meta.topic_id == expected["topic_id"]
    assert meta.quorum_state is not None and meta.quorum_state.raw == json.loads(expected["quorum_state"])
    names = {e.name for e in meta.entries}
    present = {s["name"] for s in expected["snapshot_checkpoints"] if s["present"]}
    assert present <= names
