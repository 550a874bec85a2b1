"""Metadata record frame + body codec (facts 6.1-6.3): golden bytes built by hand, round trips, JSON, errors."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategies import struct_strategy, with_defaults

from pipelines.errors import DecodeError
from pipelines.kafka.metadata_codec import (
    RECORD_TYPES,
    ControlRecord,
    MetadataRecord,
    control_to_json_dict,
    decode_control_record,
    decode_metadata_record,
    encode_control_record,
    encode_metadata_record,
    make_record,
    record_type,
    to_json_dict,
)
from pipelines.kafka.metadata_schema import CONTROL_RECORD_TYPES
from pipelines.kafka.uuid import Uuid

U = Uuid(0x0102030405060708, 0x090A0B0C0D0E0F10)
U_HEX = "0102030405060708090a0b0c0d0e0f10"
D1 = Uuid(0x1111111111111111, 0x2222222222222222)
D2 = Uuid(0x3333333333333333, 0x4444444444444444)


def i32(n: int) -> str:
    return struct.pack(">i", n).hex()


# Each golden value is spelled out field by field from the layout rules, not produced by the encoder.
TOPIC_RECORD_HEX = "01" "02" "00" + "04" + b"foo".hex() + U_HEX + "00"
PARTITION_RECORD_V1_HEX = (
    "01" "03" "01"
    + i32(0) + U_HEX
    + "03" + i32(1) + i32(2)  # replicas [1, 2]
    + "02" + i32(1)  # isr [1]
    + "01" + "01"  # removing [], adding []
    + i32(1)  # leader
    + i32(5) + i32(7)  # leader epoch, partition epoch
    + "03" + D1.hex() + D2.hex()  # directories (v1+, not tagged)
    + "00"  # no tagged fields (LeaderRecoveryState at default 0)
)  # fmt: skip
PARTITION_CHANGE_HEX = (
    "01" "05" "00"
    + i32(2) + U_HEX
    + "02"  # two tagged fields
    + "00" "09" + "03" + i32(1) + i32(3)  # tag 0 Isr [1, 3]: 9 bytes
    + "01" "04" + i32(3)  # tag 1 Leader 3
)  # fmt: skip
REGISTER_BROKER_V3_HEX = (
    "01" "00" "03"
    + i32(1) + "00" + U_HEX + struct.pack(">q", 10).hex()
    + "02" + "0a" + b"PLAINTEXT".hex() + "02" + b"h".hex() + "2384" + "0000" + "00"  # endpoint + its tags
    + "02" + "11" + b"metadata.version".hex() + "0001" + "0015" + "00"  # feature + its tags
    + "00"  # rack null
    + "01" + "00"  # fenced, in controlled shutdown
    + "01" + "00" "11" + "02" + D1.hex()  # tag 0 LogDirs [D1]: 17 bytes
)  # fmt: skip


def test_topic_record_golden() -> None:
    rec = decode_metadata_record(bytes.fromhex(TOPIC_RECORD_HEX))
    assert (rec.api_key, rec.version, rec.name) == (2, 0, "TopicRecord")
    assert dict(rec.fields) == {"name": "foo", "topic_id": U}
    assert encode_metadata_record(rec).hex() == TOPIC_RECORD_HEX
    assert encode_metadata_record(make_record("TopicRecord", name="foo", topic_id=U)).hex() == TOPIC_RECORD_HEX


def test_partition_record_v1_golden() -> None:
    rec = decode_metadata_record(bytes.fromhex(PARTITION_RECORD_V1_HEX))
    f = rec.fields
    assert (f["partition_id"], f["topic_id"], f["replicas"], f["isr"]) == (0, U, (1, 2), (1,))
    assert (f["removing_replicas"], f["adding_replicas"], f["leader"]) == ((), (), 1)
    assert (f["leader_epoch"], f["partition_epoch"], f["directories"]) == (5, 7, (D1, D2))
    assert f["leader_recovery_state"] == 0
    assert f["eligible_leader_replicas"] is None and f["last_known_elr"] is None  # v2 fields at default
    assert encode_metadata_record(rec).hex() == PARTITION_RECORD_V1_HEX


def test_partition_change_record_tagged_golden() -> None:
    rec = decode_metadata_record(bytes.fromhex(PARTITION_CHANGE_HEX))
    f = rec.fields
    assert (f["partition_id"], f["topic_id"], f["isr"], f["leader"]) == (2, U, (1, 3), 3)
    assert f["replicas"] is None and f["leader_recovery_state"] == -1  # absent tags = defaults
    built = make_record("PartitionChangeRecord", 0, partition_id=2, topic_id=U, isr=(1, 3), leader=3)
    assert encode_metadata_record(built).hex() == PARTITION_CHANGE_HEX
    assert to_json_dict(rec) == {
        "type": "PARTITION_CHANGE_RECORD",
        "version": 0,
        "data": {"partitionId": 2, "topicId": str(U), "isr": [1, 3], "leader": 3},
    }


def test_register_broker_v3_golden() -> None:
    rec = decode_metadata_record(bytes.fromhex(REGISTER_BROKER_V3_HEX))
    f = rec.fields
    assert f["end_points"] == ({"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": 0},)
    assert f["features"] == ({"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 21},)
    assert (f["rack"], f["fenced"], f["in_controlled_shutdown"], f["log_dirs"]) == (None, True, False, (D1,))
    assert encode_metadata_record(rec).hex() == REGISTER_BROKER_V3_HEX
    data = to_json_dict(rec)["data"]
    assert data["logDirs"] == [str(D1)] and data["isMigratingZkBroker"] is False and data["rack"] is None
    assert data["endPoints"] == [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}]


def test_json_names_follow_kafka() -> None:
    assert record_type(21).json_type == "ZK_MIGRATION_STATE_RECORD"
    assert record_type("REGISTER_BROKER_RECORD") is record_type("RegisterBrokerRecord") is RECORD_TYPES[0]
    rec = make_record("PartitionRecord", 0, topic_id=U, replicas=(1,), isr=(1,), leader=1)
    data = to_json_dict(rec)["data"]
    assert "directories" not in data and "leaderRecoveryState" not in data  # not in v0 / tagged at default
    assert data["partitionId"] == -1 and data["removingReplicas"] == []
    scram = make_record("UserScramCredentialRecord", name="u", salt=b"\x00\xff", stored_key=b"", server_key=b"k")
    assert to_json_dict(scram)["data"]["salt"] == "AP8="  # standard base64, as Jackson's BinaryNode


@pytest.mark.parametrize(
    ("hexed", "message"),
    [
        ("000200", "frame version 0"),
        ("020200", "unknown frame version"),
        ("01" "7f" "00", "unknown metadata record type"),
        ("01" "02" "05", "unsupported version"),
        ("01" "80" "80" "02" "00", "too large"),  # apiKey 32768
        (TOPIC_RECORD_HEX + "00", "garbage"),
        (TOPIC_RECORD_HEX[:-2], "truncated"),
        ("01" "02" "00" "00" + U_HEX + "00", "null"),  # non-nullable name encoded as null
        ("01" "04" "00" "02" "05" "61", "past the end"),  # ResourceName of 4 bytes, 1 left
        ("", "truncated"),
    ],
)
def test_frame_and_body_errors(hexed: str, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_metadata_record(bytes.fromhex(hexed))


def test_unknown_tags_are_kept_and_re_encoded() -> None:
    body = "01" "02" "00" + "04" + b"foo".hex() + U_HEX
    raw = bytes.fromhex(body + "02" + "05" "01" "aa" + "09" "00")  # tags 5 and 9 unknown to TopicRecord
    rec = decode_metadata_record(raw)
    assert rec.unknown_tags == ((5, b"\xaa"), (9, b""))
    assert encode_metadata_record(rec) == raw
    bad_size = bytes.fromhex(body + "01" "01" "05" "0000")  # size 5 but 2 bytes left
    with pytest.raises(DecodeError):
        decode_metadata_record(bad_size)


def test_known_tag_with_wrong_size_is_rejected() -> None:
    raw = bytes.fromhex("01" "05" "00" + i32(2) + U_HEX + "01" + "01" "05" + i32(3) + "00")
    with pytest.raises(DecodeError, match="not 5 bytes"):
        decode_metadata_record(raw)


def test_encoder_rejects_fields_outside_the_version() -> None:
    with pytest.raises(ValueError, match="directories"):
        encode_metadata_record(make_record("PartitionRecord", 0, directories=(D1,)))
    with pytest.raises(ValueError):
        encode_metadata_record(MetadataRecord(2, 0, "TopicRecord", {"name": None}))


def _all_versions() -> list[tuple[int, int]]:
    return [(k, v) for k, spec in RECORD_TYPES.items() for v in range(spec.versions[0], spec.versions[1] + 1)]


def test_every_type_of_the_facts_sheet_is_covered() -> None:
    assert sorted(RECORD_TYPES) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, *range(17, 29)]
    # RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (CordonedLogDirs): Kafka 4.3.1 writes them
    assert {k: RECORD_TYPES[k].versions for k in (0, 3, 5, 17)} == {0: (0, 4), 3: (0, 2), 5: (0, 2), 17: (0, 3)}


@pytest.mark.parametrize(("api_key", "version"), _all_versions())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_type_and_version(api_key: int, version: int, data: st.DataObject) -> None:
    spec = RECORD_TYPES[api_key]
    values: dict[str, Any] = data.draw(struct_strategy(spec.fields, version))
    raw = encode_metadata_record(MetadataRecord(api_key, version, spec.name, values))
    decoded = decode_metadata_record(raw)
    assert (decoded.api_key, decoded.version, decoded.name) == (api_key, version, spec.name)
    assert dict(decoded.fields) == with_defaults(spec.fields, values)
    assert encode_metadata_record(decoded) == raw


# -- control records ---------------------------------------------------------------------------------


def test_snapshot_header_control_golden() -> None:
    key, value = bytes.fromhex("0000" "0003"), bytes.fromhex("0000" + struct.pack(">q", 1700000000123).hex() + "00")
    rec = decode_control_record(key, value)
    assert (rec.type_id, rec.type_name, rec.version) == (3, "SNAPSHOT_HEADER", 0)
    assert dict(rec.fields) == {"version": 0, "last_contained_log_timestamp": 1700000000123}
    assert encode_control_record(rec) == (key, value)
    assert control_to_json_dict(rec) == {"version": 0, "lastContainedLogTimestamp": 1700000000123}


def test_txn_marker_is_not_flexible() -> None:
    key, value = bytes.fromhex("0000" "0001"), bytes.fromhex("0000" "00000005")
    rec = decode_control_record(key, value)
    assert (rec.type_name, dict(rec.fields)) == ("COMMIT", {"version": 0, "coordinator_epoch": 5})
    assert encode_control_record(rec) == (key, value)
    with pytest.raises(DecodeError):
        decode_control_record(key, value + b"\x00")  # a tag section would be garbage here


def test_voters_record_nested_struct_golden() -> None:
    value = bytes.fromhex(
        "0000"  # version
        + "02"  # one voter
        + i32(1) + D1.hex()
        + "02" + "0b" + b"CONTROLLER".hex() + "0a" + b"localhost".hex() + "2383" + "00"  # endpoint + tags
        + "0000" "0001" + "00"  # KRaftVersionFeature struct + its tags
        + "00"  # voter tags
        + "00"  # record tags
    )  # fmt: skip
    rec = decode_control_record(bytes.fromhex("00000006"), value)
    voter = rec.fields["voters"][0]
    assert (voter["voter_id"], voter["voter_directory_id"]) == (1, D1)
    assert voter["endpoints"] == ({"name": "CONTROLLER", "host": "localhost", "port": 9091},)
    assert voter["kraft_version_feature"] == {"min_supported_version": 0, "max_supported_version": 1}
    assert encode_control_record(rec)[1] == value
    assert control_to_json_dict(rec)["voters"][0]["kRaftVersionFeature"] == {
        "minSupportedVersion": 0,
        "maxSupportedVersion": 1,
    }


def test_control_key_rules() -> None:
    with pytest.raises(DecodeError):
        decode_control_record(b"\x00\x00\x00", b"")
    with pytest.raises(DecodeError):
        decode_control_record(bytes.fromhex("ffff0003"), b"")  # negative key version
    unknown = decode_control_record(bytes.fromhex("00000063"), b"whatever")
    assert unknown.type_name == "UNKNOWN" and unknown.type_id == 99


@pytest.mark.parametrize("type_id", sorted(CONTROL_RECORD_TYPES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_control_round_trip(type_id: int, data: st.DataObject) -> None:
    spec = CONTROL_RECORD_TYPES[type_id]
    values = data.draw(struct_strategy(spec.fields, 0))
    key, value = encode_control_record(ControlRecord(type_id, "", 0, values))
    decoded = decode_control_record(key, value)
    assert decoded.type_id == type_id
    assert dict(decoded.fields) == with_defaults(spec.fields, values)
    assert encode_control_record(decoded) == (key, value)
