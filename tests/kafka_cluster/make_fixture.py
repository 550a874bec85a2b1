"""Regenerate ``tests/fixtures/kraft-cluster/``: a real KRaft cluster's log dirs and metadata, for the fast suite.

    .venv/bin/python tests/kafka_cluster/make_fixture.py [--version 4.3.1] [--out tests/fixtures/kraft-cluster]

Runs Kafka (jars resolved by ``jars.py``), then does the KIP-516 stale-state story: broker 3 stops; topic ``t`` is
deleted and recreated, ``gone`` deleted, ``moved`` reassigned away from broker 3; then brokers 1, 2 and the
controller stop cleanly (Kafka trims its preallocated indexes on a clean shutdown). What is copied:

- ``controller/`` (the controller's metadata log dir) and ``broker<N>/d<i>/`` (every broker log dir), minus
  ``.lock`` files; index files are cut after their last non-zero entry, so nothing preallocated is committed;
- ``dump-log/<file>.txt``: Kafka's ``DumpLogSegments --cluster-metadata-decoder`` output of every metadata
  ``.log``/``.checkpoint`` of the controller, so the fast suite compares the project's decoder with Kafka's
  without a JVM;
- ``truth.json``: what the script DID (which dirs on broker 3 it made stale and why), never what the project's
  classifier says; plus the Kafka version and the cluster/topic ids.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import KafkaCluster, wait_for
from jars import KAFKA_4, resolve

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "tests" / "fixtures" / "kraft-cluster"
ENTRY_SIZE = {".index": 8, ".timeindex": 12}


def _trimmed(data: bytes, entry: int) -> bytes:
    end = len(data.rstrip(b"\0"))
    return data[: -(-end // entry) * entry]


def copy_log_dir(src: Path, dst: Path) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        target = dst / rel
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.name != ".lock":
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if path.suffix in ENTRY_SIZE:
                data = _trimmed(data, ENTRY_SIZE[path.suffix])
            target.write_bytes(data)


def _ids(kafka: KafkaCluster) -> dict[str, str]:
    admin = kafka.admin()
    try:
        return {t["name"]: t["topic_id"] for t in admin.describe_topics() if t["error_code"] == 0}
    finally:
        admin.close()


def build(kafka: KafkaCluster) -> dict[str, object]:
    from kafka import TopicPartition
    from kafka.admin import NewTopic

    admin = kafka.admin()
    try:
        for name, assignment in (("t", {0: [1, 2, 3], 1: [3, 1, 2]}), ("gone", {0: [3, 1]}),
                                 ("moved", {0: [3, 1]}), ("kept", {0: [3, 2], 1: [1, 3]})):
            admin.create_topics([NewTopic(name, replica_assignments=assignment)])
            wait_for(name, lambda n=name: n in admin.list_topics())
            for p in assignment:
                wait_for(f"{name}-{p} leader", lambda n=name: all(
                    x["leader_id"] >= 0 for x in admin.describe_topics([n])[0]["partitions"]))
                kafka.produce(name, [f"{name}-{p}-{i}".encode() * 10 for i in range(10)], partition=p)
        before = _ids(kafka)
        kafka.stop_broker(3)
        admin.close()
        admin = kafka.admin()
        admin.delete_topics(["t", "gone"])
        wait_for("deletion", lambda: not {"t", "gone"} & set(admin.list_topics()))
        admin.create_topics([NewTopic("t", replica_assignments={0: [1, 2], 1: [2, 1]})])
        admin.alter_partition_reassignments({TopicPartition("moved", 0): [1, 2]})
        wait_for("reassignment", lambda: not admin.list_partition_reassignments())
        after = _ids(kafka)
    finally:
        admin.close()
    time.sleep(2)
    return {
        "kafka_version": kafka.jars.version,
        "cluster_id": kafka.cluster_id,
        "topic_ids_before": before,
        "topic_ids_after": after,
        "stale_on_broker_3": {
            "t-0": "recreated_topic", "t-1": "recreated_topic", "gone-0": "deleted_topic", "moved-0": "not_a_replica",
        },
        "live_on_broker_3": ["kept-0", "kept-1"],
        "story": "broker 3 stopped; t deleted and recreated on [1,2]; gone deleted; moved-0 reassigned [3,1] -> [1,2]",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=KAFKA_4)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    jars = resolve(args.version)
    with tempfile.TemporaryDirectory(prefix="kraft-fixture-") as tmp:
        kafka = KafkaCluster(Path(tmp), jars)
        try:
            kafka.start()
            truth = build(kafka)
            for b in (1, 2):
                kafka.stop_broker(b)
        finally:
            kafka.close(grace_s=20)
        if args.out.exists():
            shutil.rmtree(args.out)
        copy_log_dir(kafka.controller.log_dirs[0], args.out / "controller")
        for b, node in kafka.brokers.items():
            for d in node.log_dirs:
                copy_log_dir(d, args.out / f"broker{b}" / d.name)
        dumps = args.out / "dump-log"
        dumps.mkdir()
        md = args.out / "controller" / "__cluster_metadata-0"
        for f in sorted(md.iterdir()):
            if f.suffix in (".log", ".checkpoint"):
                out = kafka.java(jars.dump_log, "--cluster-metadata-decoder", "--files", str(f)).stdout
                (dumps / f"{f.name}.txt").write_text("".join(
                    line.replace(str(md) + "/", "") + "\n" for line in out.splitlines()))
        (args.out / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out} ({size} bytes)")


if __name__ == "__main__":
    main()
