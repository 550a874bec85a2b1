"""Root files (.kafka_cleanshutdown, quorum-state) and partition-dir file names."""

from __future__ import annotations

import pytest

from pipelines.kafka.root_files import MalformedQuorumState, is_tmp_leftover, read_clean_shutdown, read_quorum_state
from pipelines.kafka.segment_files import classify_file


@pytest.mark.parametrize(
    ("data", "epoch", "codes"),
    [
        (b"", None, []),  # up to 3.6 the file is empty: normal
        (b'{"version":0,"brokerEpoch":428}', 428, []),
        (b'{"version":0,"brokerEpoch":428,"future":1}', 428, []),  # unknown keys ignored
        (b'{"version":0}', None, ["clean_shutdown_no_epoch"]),
        (b'{"version":0,"brokerEpoch":"x"}', None, ["clean_shutdown_no_epoch"]),
        (b"garbage", None, ["clean_shutdown_unparseable"]),
        (b"[1]", None, ["clean_shutdown_unparseable"]),
        (b"\xff", None, ["clean_shutdown_unparseable"]),
    ],
)
def test_clean_shutdown(data: bytes, epoch: int | None, codes: list[str]) -> None:
    cs = read_clean_shutdown(data)
    assert cs.broker_epoch == epoch
    assert [p.code for p in cs.problems] == codes


def test_quorum_state_v0_and_v1() -> None:
    v0 = read_quorum_state(
        b'{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        b'"currentVoters":[{"voterId":1},{"voterId":3}],"data_version":0}'
    )
    assert (v0.data_version, v0.leader_id, v0.leader_epoch, v0.voted_id, v0.current_voters) == (0, 1, 2, -1, (1, 3))
    v1 = read_quorum_state(
        b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    )
    assert (v1.data_version, v1.current_voters, str(v1.voted_directory_id)) == (1, None, "AAAAAAAAAAAAAAAAAAAAAA")
    assert read_quorum_state(b'{"data_version":1}').leader_id == -1


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{}",
        b'{"data_version":2}',
        b'{"data_version":"0"}',
        b'{"data_version":true}',
        b"[]",
        b'{"data_version":0,"leaderId":"x"}',
        b'{"data_version":0,"currentVoters":[{"id":1}]}',
        b'{"data_version":1,"votedDirectoryId":"nope"}',
    ],
)
def test_quorum_state_rejects(data: bytes) -> None:
    with pytest.raises(MalformedQuorumState):
        read_quorum_state(data)


def test_tmp() -> None:
    assert is_tmp_leftover("meta.properties.tmp")
    assert not is_tmp_leftover(".tmp")
    assert not is_tmp_leftover("meta.properties")


@pytest.mark.parametrize(
    ("name", "kind", "base", "suffix", "state", "epoch"),
    [
        ("00000000000000000000.log", "segment", 0, ".log", "", None),
        ("00000000000000012345.index", "segment", 12345, ".index", "", None),
        ("00000000000000012345.timeindex", "segment", 12345, ".timeindex", "", None),
        ("00000000000000012345.txnindex", "segment", 12345, ".txnindex", "", None),
        ("00000000000000038194.snapshot", "segment", 38194, ".snapshot", "", None),
        ("00000000000000000000.log.deleted", "segment", 0, ".log", "deleted", None),
        ("00000000000000000000.index.swap", "segment", 0, ".index", "swap", None),
        ("00000000000000000000.log.cleaned", "segment", 0, ".log", "cleaned", None),
        ("00000000000000000100-0000000001.checkpoint", "raft_snapshot", 100, ".checkpoint", "", 1),
        (
            "00000000000000000100-0000000001.checkpoint.deleted",
            "raft_snapshot_deleted",
            100,
            ".checkpoint",
            "deleted",
            1,
        ),
        (
            "00000000000000000100-0000000001-123456.checkpoint.part",
            "raft_snapshot_partial",
            100,
            ".checkpoint",
            "partial",
            1,
        ),
        ("leader-epoch-checkpoint", "leader_epoch_checkpoint", None, None, "", None),
        ("partition.metadata", "partition_metadata", None, None, "", None),
        ("quorum-state", "quorum_state", None, None, "", None),
        ("partition.metadata.tmp", "tmp", None, None, "", None),
        ("0000000000000000000.log", "unknown", None, None, "", None),  # 19 digits
        ("\u0660" * 20 + ".log", "unknown", None, None, "", None),  # non-ASCII digits
        ("00000000000000000000.log.bak", "unknown", None, None, "", None),
        ("README", "unknown", None, None, "", None),
    ],
)
def test_classify_file(
    name: str, kind: str, base: int | None, suffix: str | None, state: str, epoch: int | None
) -> None:
    fn = classify_file(name)
    assert (fn.kind, fn.base_offset, fn.suffix, fn.state, fn.epoch) == (kind, base, suffix, state, epoch)


def test_segment_helpers() -> None:
    assert classify_file("00000000000000000000.log").is_live_segment_data
    assert not classify_file("00000000000000000000.log.deleted").is_live_segment_data
    assert classify_file("00000000000000000000.timeindex").is_index
    assert not classify_file("00000000000000000000.snapshot").is_index
