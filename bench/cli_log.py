"""A large KRaft metadata log for ``bench/cli.py``: many topics, deletions, recreations, fencing, ISR churn.

Built with the simulator's controller model (``pipelines.simulate.controller.ControllerLog``) and written with the
project's own encoder (``pipelines.simulate.metadata_files.encode_log_batch``), so every record replays cleanly.
The default shape is the one issue 17 measured: about 321k records and 19k live topics.
"""

from __future__ import annotations

import random
from pathlib import Path

from pipelines.kafka.uuid import Uuid
from pipelines.simulate.controller import (
    CONFIG_TOPIC,
    METADATA_VERSION,
    PARTITION_CHANGE_VERSION,
    PARTITION_RECORD_VERSION,
    REGISTER_BROKER_VERSION,
    ControllerLog,
    Rec,
)
from pipelines.simulate.metadata_files import encode_log_batch

BROKERS = 12
T0 = 1_700_000_000_000


def build_log(records: int = 321_000, topics: int = 19_250, seed: int = 17) -> ControllerLog:
    """A controller log of about ``records`` records ending with about ``topics`` live topics."""
    rng = random.Random(seed)
    log = ControllerLog(noop_interval_ms=0)
    ts = T0
    dirs = {b: (Uuid(0x1000 + b, 1), Uuid(0x1000 + b, 2)) for b in range(1, BROKERS + 1)}
    log.append([Rec("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": METADATA_VERSION})], ts)
    for b in range(1, BROKERS + 1):
        log.append([Rec("RegisterBrokerRecord", REGISTER_BROKER_VERSION, {
            "broker_id": b, "incarnation_id": Uuid(9, b), "broker_epoch": b,
            "end_points": ({"name": "PLAINTEXT", "host": f"kafka-{b}.bench", "port": 9092, "security_protocol": 0},),
            "rack": f"rack-{b % 3}", "fenced": False, "in_controlled_shutdown": False, "log_dirs": dirs[b]})], ts)
    live: list[tuple[str, Uuid, int]] = []
    created = 0

    def create(name: str) -> None:
        nonlocal ts
        topic_id = Uuid(rng.getrandbits(63) | 1 << 62, rng.getrandbits(64))
        parts = rng.choice((1, 3, 6, 6, 12)) if rng.random() < 0.98 else rng.choice((50, 100))
        recs = [Rec("TopicRecord", 0, {"name": name, "topic_id": topic_id})]
        for p in range(parts):
            reps = tuple(rng.sample(range(1, BROKERS + 1), 3))
            recs.append(Rec("PartitionRecord", PARTITION_RECORD_VERSION, {
                "partition_id": p, "topic_id": topic_id, "replicas": reps, "isr": reps, "removing_replicas": (),
                "adding_replicas": (), "leader": reps[0], "leader_epoch": 0, "partition_epoch": 0,
                "directories": tuple(rng.choice(dirs[b]) for b in reps)}))
        recs.append(Rec("ConfigRecord", 0, {"resource_type": CONFIG_TOPIC, "resource_name": name,
                                            "name": "retention.ms", "value": "86400000"}))
        log.append(recs, ts)
        live.append((name, topic_id, parts))

    while log.next_offset < records:
        ts += rng.randrange(1, 4000)
        r = rng.random()
        if r < 0.38:
            if created < topics:
                create(f"topic-{created:05d}")
                created += 1
        elif live and r < 0.386:  # a deletion; half of them recreated under the same name
            name, topic_id, _ = live.pop(rng.randrange(len(live)))
            log.append([Rec("RemoveTopicRecord", 0, {"topic_id": topic_id})], ts)
            if rng.random() < 0.5:
                create(name)
        elif r < 0.39:
            b = rng.randrange(1, BROKERS + 1)
            log.append([Rec("BrokerRegistrationChangeRecord", 2, {
                "broker_id": b, "broker_epoch": b, "fenced": rng.choice((1, -1))})], ts)
        elif live:
            changes = []
            for _ in range(rng.randint(1, 6)):
                _, topic_id, parts = live[rng.randrange(len(live))]
                part = rng.randrange(parts)
                replicas = log.partition(topic_id, part)["replicas"]
                fields = rng.choice(({"isr": replicas[:2]}, {"isr": replicas}, {"leader": replicas[1]}))
                changes.append(Rec("PartitionChangeRecord", PARTITION_CHANGE_VERSION,
                                   {"partition_id": part, "topic_id": topic_id, **fields}))
            log.append(changes, ts)
    return log


def write_log(path: Path, records: int = 321_000, topics: int = 19_250) -> tuple[int, int]:
    """Write the log as one ``.log`` segment at ``path``; returns (records, live topics)."""
    log = build_log(records, topics)
    with open(path, "wb") as out:
        for batch in log.batches:
            out.write(encode_log_batch(batch))
    return log.next_offset, len(log.topics)
