"""Replay semantics, one rule of the facts sheet section 7 per test (records built with the real codec classes)."""

from __future__ import annotations

import pytest
from mdrecords import broker, broker_change, change, config, did, feature, named, partition, remove, tid, topic

from pipelines.errors import ReplayError
from pipelines.kafka.uuid import MIGRATING, UNASSIGNED, Uuid
from pipelines.metadata.image import BROKER_RESOURCE, EMPTY, TOPIC_RESOURCE, MetadataImage
from pipelines.metadata.image_delta import MetadataDelta, raise_on_fault

T1, T2 = tid(1), tid(2)
D1, D2, D3 = did(1), did(2), did(3)


def replay(records, base: MetadataImage = EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    for i, rec in enumerate(records):
        delta.replay(rec, offset=i)
    return delta.apply()


def one_partition(records, base: MetadataImage = EMPTY):
    image = replay(records, base)
    return image.topics.by_id[T1].partitions[0], image


# -- topics ----------------------------------------------------------------------------------------------
def test_topic_record_creates_topic_without_partitions_and_both_indexes() -> None:
    image = replay([topic("orders", T1)])
    assert image.topics.by_id[T1].name == "orders"
    assert image.topics.by_name["orders"] is image.topics.by_id[T1]
    assert dict(image.topics.by_id[T1].partitions) == {}


def test_topic_record_for_known_id_replaces_it_with_an_empty_topic() -> None:
    base = replay([topic("orders", T1), partition(T1, 0, [1])])
    image = replay([topic("orders", T1)], base)
    assert dict(image.topics.by_id[T1].partitions) == {}


def test_remove_topic_drops_topic_partitions_and_its_configs_only() -> None:
    base = replay([
        topic("orders", T1), partition(T1, 0, [1]), config(TOPIC_RESOURCE, "orders", "retention.ms", "1"),
        topic("other", T2), config(TOPIC_RESOURCE, "other", "retention.ms", "2"),
    ])
    image = replay([remove(T1)], base)
    assert T1 not in image.topics.by_id and "orders" not in image.topics.by_name
    assert image.topic_config("orders", "retention.ms") is None
    assert image.topic_config("other", "retention.ms") == "2"


def test_topic_created_and_removed_in_one_delta_leaves_no_trace() -> None:
    base = replay([topic("other", T2)])
    image = replay([topic("orders", T1), partition(T1, 0, [1]), remove(T1)], base)
    assert image.topics == base.topics
    assert image.topics is base.topics or image.topics.by_id.keys() == {T2}


def test_removing_an_unknown_topic_is_reported_with_its_offset() -> None:
    delta = MetadataDelta(EMPTY)
    delta.replay(topic("a", T2), offset=10)
    delta.replay(remove(T1), offset=11)
    image = delta.apply()
    assert [(p.offset, p.record) for p in image.replay_errors] == [(11, "RemoveTopicRecord")]
    assert "a" in image.topics.by_name


def test_strict_mode_raises_replay_error() -> None:
    delta = MetadataDelta(EMPTY, fault_handler=raise_on_fault)
    with pytest.raises(ReplayError, match="offset 3"):
        delta.replay(remove(T1), offset=3)


def test_recreated_topic_name_gets_the_new_id() -> None:
    base = replay([topic("orders", T1), partition(T1, 0, [1])])
    image = replay([remove(T1), topic("orders", T2)], base)
    assert image.topics.by_name["orders"].topic_id == T2
    assert set(image.topics.by_id) == {T2}


def test_untouched_topics_are_shared_between_images() -> None:
    base = replay([topic("a", T1), partition(T1, 0, [1]), topic("b", T2)])
    image = replay([partition(T2, 0, [2])], base)
    assert image.topics.by_id[T1] is base.topics.by_id[T1]
    assert image.brokers is base.brokers and image.configs is base.configs


# -- partitions ----------------------------------------------------------------------------------------
def test_partition_record_replaces_whole_registration() -> None:
    p, _ = one_partition([topic("a", T1), partition(T1, 0, [1, 2], leader_epoch=5),
                          partition(T1, 0, [3], leader_epoch=1)])
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ((3,), (3,), 3, 1)


def test_partition_record_for_unknown_topic_is_an_error() -> None:
    image = replay([partition(T1, 0, [1])])
    assert image.replay_errors and image.replay_errors[0].record == "PartitionRecord"
    assert not image.topics.by_id


@pytest.mark.parametrize(
    ("dirs", "version", "expected"),
    [
        ((), 0, (MIGRATING, MIGRATING)),  # v0: no Directories field
        ((), 1, (MIGRATING, MIGRATING)),  # empty
        ((MIGRATING, MIGRATING), 1, (MIGRATING, MIGRATING)),
        ((D1, UNASSIGNED), 1, (D1, UNASSIGNED)),
    ],
)
def test_partition_record_directories(dirs, version, expected) -> None:
    p, _ = one_partition([topic("a", T1), partition(T1, 0, [1, 2], dirs=dirs, version=version)])
    assert p.directories == expected
    assert p.directory_of(2) == expected[1] and p.directory_of(7) is None


def test_partition_record_with_wrong_directory_count_is_rejected() -> None:
    image = replay([topic("a", T1), partition(T1, 0, [1, 2], dirs=[D1])])
    assert "directories" in image.replay_errors[0].message
    assert dict(image.topics.by_id[T1].partitions) == {}


def test_partition_record_elr_absent_means_empty() -> None:
    p, _ = one_partition([topic("a", T1), partition(T1, 0, [1], version=1)])
    assert p.elr == () and p.last_known_elr == ()


def test_change_for_unknown_partition_is_reported_and_skipped() -> None:
    image = replay([topic("a", T1), change(T1, 3, isr=(1,))])
    assert image.replay_errors[0].record == "PartitionChangeRecord"
    assert "a-3" in image.replay_errors[0].message


BASE = [topic("a", T1), partition(T1, 0, [1, 2, 3], leader=1, leader_epoch=7, partition_epoch=4)]


@pytest.mark.parametrize(
    ("fields", "leader", "leader_epoch"),
    [
        ({}, 1, 7),  # Leader absent = -2: keep leader and epoch
        ({"leader": -2}, 1, 7),
        ({"leader": -1}, -1, 8),  # no leader still bumps the epoch
        ({"leader": 2}, 2, 8),
        ({"leader": 1}, 1, 8),  # same leader re-elected: epoch bumps too
    ],
)
def test_change_leader_and_epochs(fields, leader, leader_epoch) -> None:
    p, _ = one_partition([*BASE, change(T1, 0, **fields)])
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (leader, leader_epoch, 5)


def test_partition_epoch_increments_on_every_change() -> None:
    p, _ = one_partition([*BASE, change(T1, 0), change(T1, 0, isr=[1]), change(T1, 0)])
    assert p.partition_epoch == 7 and p.isr == (1,)


def test_change_null_keeps_lists_and_empty_clears() -> None:
    p, _ = one_partition([*BASE, change(T1, 0, replicas=[1, 2, 3, 4], adding_replicas=[4], removing_replicas=[3]),
                          change(T1, 0, isr=[1, 2, 4])])
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((1, 2, 3, 4), (4,), (3,))
    assert p.target_replicas == (1, 2, 4)
    p, _ = one_partition([*BASE, change(T1, 0, replicas=[1, 2, 3, 4], adding_replicas=[4], removing_replicas=[3]),
                          change(T1, 0, replicas=[1, 2, 4], adding_replicas=[], removing_replicas=[])])
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((1, 2, 4), (), ())
    assert p.isr == (1, 2, 3)


def test_change_leader_recovery_state() -> None:
    p, _ = one_partition([*BASE, change(T1, 0, leader=3, leader_recovery_state=1)])
    assert p.leader_recovery_state == 1
    p, _ = one_partition([*BASE, change(T1, 0, leader=3, leader_recovery_state=1), change(T1, 0)])
    assert p.leader_recovery_state == 1
    p, _ = one_partition([*BASE, change(T1, 0, leader_recovery_state=1), change(T1, 0, leader_recovery_state=0)])
    assert p.leader_recovery_state == 0


def test_change_elr_fields() -> None:
    p, _ = one_partition([*BASE, change(T1, 0, eligible_leader_replicas=[2], last_known_elr=[3])])
    assert (p.elr, p.last_known_elr) == ((2,), (3,))
    p, _ = one_partition([*BASE, change(T1, 0, eligible_leader_replicas=[2]),
                          change(T1, 0, eligible_leader_replicas=[])])
    assert p.elr == ()


# -- directories (KIP-858) ------------------------------------------------------------------------------------
REAL = [topic("a", T1), partition(T1, 0, [1, 2], dirs=[D1, D2])]
MIGR = [topic("a", T1), partition(T1, 0, [1, 2], version=0)]


@pytest.mark.parametrize(
    ("base", "fields", "expected"),
    [
        # null Directories, all-MIGRATING old array: resized to the new replica count
        (MIGR, {"replicas": [1, 2, 3]}, (MIGRATING,) * 3),
        (MIGR, {"replicas": [1]}, (MIGRATING,)),
        # null Directories, real old array, same replica count: kept
        (REAL, {"isr": [1]}, (D1, D2)),
        # explicit array replaces
        (REAL, {"directories": [D2, D3]}, (D2, D3)),
        (REAL, {"replicas": [1, 2, 3], "directories": [D1, D2, UNASSIGNED]}, (D1, D2, UNASSIGNED)),
        # explicit empty or all-MIGRATING array: MIGRATING x |replicas|
        (REAL, {"directories": []}, (MIGRATING, MIGRATING)),
        (REAL, {"replicas": [1, 2, 3], "directories": [MIGRATING] * 3}, (MIGRATING,) * 3),
    ],
)
def test_change_directories(base, fields, expected) -> None:
    p, image = one_partition([*base, change(T1, 0, **fields)])
    assert not image.replay_errors
    assert p.directories == expected


@pytest.mark.parametrize(
    "fields",
    [
        {"replicas": [1, 2, 3], "directories": [D1, D2]},  # explicit array, wrong length
        {"replicas": [1, 2, 3]},  # real old array cannot be stretched
        {"directories": [D1]},  # no replicas change, array of another length
    ],
)
def test_change_directories_that_do_not_match_replicas_are_rejected(fields) -> None:
    p, image = one_partition([*REAL, change(T1, 0, **fields)])
    assert image.replay_errors[0].record == "PartitionChangeRecord"
    assert p.directories == (D1, D2) and p.partition_epoch == 0


def test_clear_elr_record() -> None:
    records = [*BASE, change(T1, 0, eligible_leader_replicas=[2]), named("ClearElrRecord", topic_name="a")]
    p, image = one_partition(records)
    assert p.elr == () and p.partition_epoch == 7 - 1
    image = replay([named("ClearElrRecord", topic_name="missing")])
    assert image.replay_errors


# -- brokers ---------------------------------------------------------------------------------------------------
def test_register_broker_replaces_registration() -> None:
    image = replay([broker(1, 10, log_dirs=[D1, D2], rack="r1"), broker(1, 11, log_dirs=[D3], fenced=False)])
    b = image.brokers[1]
    assert (b.epoch, b.log_dirs, b.fenced, b.rack) == (11, (D3,), False, None)
    assert b.incarnation_id == Uuid(9, 1)


def test_broker_registration_change_semantics() -> None:
    base = replay([broker(1, 10, log_dirs=[D1, D2])])
    image = replay([broker_change(1, 10, fenced=-1)], base)
    assert image.brokers[1].fenced is False and image.brokers[1].log_dirs == (D1, D2)  # empty LogDirs = unchanged
    image = replay([broker_change(1, 10, fenced=-1), broker_change(1, 10, fenced=0, log_dirs=(D2,))], base)
    assert image.brokers[1].fenced is False and image.brokers[1].log_dirs == (D2,)
    image = replay([broker_change(1, 10, in_controlled_shutdown=1), broker_change(1, 10, fenced=1)], base)
    assert image.brokers[1].in_controlled_shutdown and image.brokers[1].fenced


def test_broker_change_with_wrong_epoch_is_reported() -> None:
    base = replay([broker(1, 10)])
    image = replay([broker_change(1, 9, fenced=-1), named("UnfenceBrokerRecord", id=1, epoch=9)], base)
    assert [p.record for p in image.replay_errors] == ["BrokerRegistrationChangeRecord", "UnfenceBrokerRecord"]
    assert image.brokers[1].fenced is True


def test_legacy_fence_unfence() -> None:
    image = replay([broker(1, 10), named("UnfenceBrokerRecord", id=1, epoch=10)])
    assert image.brokers[1].fenced is False
    image = replay([named("FenceBrokerRecord", id=1, epoch=10)], image)
    assert image.brokers[1].fenced is True


def test_unregister_broker() -> None:
    image = replay([broker(1, 10), broker(2, 3), named("UnregisterBrokerRecord", broker_id=1, broker_epoch=10)])
    assert set(image.brokers) == {2}


# -- features and configs ---------------------------------------------------------------------------------------
def test_features_level_zero_removes() -> None:
    image = replay([feature("metadata.version", 27), feature("group.version", 1), feature("group.version", 0)])
    assert dict(image.features) == {"metadata.version": 27}
    assert image.metadata_version == 27


def test_configs_null_deletes_and_broker_fallback() -> None:
    image = replay([
        config(BROKER_RESOURCE, "", "log.segment.delete.delay.ms", "1000"),
        config(BROKER_RESOURCE, "2", "log.segment.delete.delay.ms", "5"),
        config(TOPIC_RESOURCE, "a", "retention.ms", "9"),
        config(TOPIC_RESOURCE, "a", "retention.ms", None),
    ])
    assert image.broker_config(2, "log.segment.delete.delay.ms") == "5"
    assert image.broker_config(1, "log.segment.delete.delay.ms") == "1000"
    assert image.broker_config(None, "log.segment.delete.delay.ms") == "1000"
    assert image.topic_config("a", "retention.ms") is None
    assert (TOPIC_RESOURCE, "a") not in image.configs.resources


def test_minimal_parts_are_counted_and_never_crash() -> None:
    acl = Uuid(5, 5)
    image = replay([
        named("AccessControlEntryRecord", id=acl, resource_type=2, resource_name="t", pattern_type=3,
              principal="User:x", host="*", operation=3, permission_type=3),
        named("UserScramCredentialRecord", name="u", mechanism=1, iterations=4096),
        named("DelegationTokenRecord", token_id="tok", owner="User:x"),
        named("ClientQuotaRecord", entity=({"entity_type": "user", "entity_name": "u"},), key="k", value=1.0),
        named("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=5000),
        named("NoOpRecord"), named("ZkMigrationStateRecord", zk_migration_state=0),
        named("RegisterControllerRecord", controller_id=3000, incarnation_id=Uuid(7, 7)),
    ])
    assert image.misc.counts() == {"controllers": 1, "acls": 1, "scram_credentials": 1, "delegation_tokens": 1,
                                   "client_quotas": 1}
    assert image.misc.next_producer_id == 5000 and not image.replay_errors
    image = replay([named("RemoveAccessControlEntryRecord", id=acl), named("RemoveDelegationTokenRecord",
                                                                           token_id="tok")], image)
    assert image.misc.counts()["acls"] == 0 and image.misc.counts()["delegation_tokens"] == 0


# -- snapshots -----------------------------------------------------------------------------------------------------
def test_finish_snapshot_deletes_everything_not_mentioned() -> None:
    base = replay([
        feature("metadata.version", 20), feature("group.version", 1), broker(1, 1), broker(2, 2),
        topic("a", T1), partition(T1, 0, [1]), topic("b", T2), partition(T2, 0, [2]),
        config(TOPIC_RESOURCE, "a", "x", "1"), config(TOPIC_RESOURCE, "b", "y", "2"),
        config(BROKER_RESOURCE, "", "k1", "v"), config(BROKER_RESOURCE, "", "k2", "v"),
    ])
    delta = MetadataDelta(base, from_snapshot=True)
    for rec in [feature("metadata.version", 21), broker(2, 2), topic("b", T2), config(TOPIC_RESOURCE, "b", "y", "2"),
                config(BROKER_RESOURCE, "", "k1", "v")]:
        delta.replay(rec)
    delta.finish_snapshot()
    image = delta.apply()
    assert dict(image.features) == {"metadata.version": 21}
    assert set(image.brokers) == {2}
    assert set(image.topics.by_name) == {"b"} and dict(image.topics.by_name["b"].partitions) == {}
    assert dict(image.configs.resources) == {(TOPIC_RESOURCE, "b"): {"y": "2"}, (BROKER_RESOURCE, ""): {"k1": "v"}}
    removed = [e for e in delta.events if e.event == "topic_removed"]
    assert [(e.topic, e.detail["from_snapshot"]) for e in removed] == [("a", True)]
