"""A Kafka ZooKeeper tree described once, as Kafka writes it: as a ``ZnodeSnapshot`` (what a dump holds, with
made-up zxids and times) or written into a real ZooKeeper through a kazoo client (server-assigned stats)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pipelines.kafka.uuid import Uuid
from pipelines.metadata.zookeeper_znodes import Znode, ZnodeSnapshot

T0 = 1_700_000_000_000  # ms
PARENTS = ("/brokers/ids", "/brokers/topics", "/admin/delete_topics", "/config/brokers", "/config/topics")
"""The znodes whose children a live read lists (an empty list when it has none)."""


@dataclass
class ZkTree:
    connect: str = "zk1:2181/kafka"
    taken_at_ms: int = T0 + 10 * 86_400_000
    nodes: dict[str, tuple[bytes | None, int, int]] = field(default_factory=dict)  # path -> (data, ctime, mtime)

    def _put(self, path: str, doc: Any, ctime: int = T0, mtime: int | None = None) -> ZkTree:
        data = None if doc is None else (doc if isinstance(doc, bytes) else json.dumps(doc).encode())
        self.nodes[path] = (data, ctime, ctime if mtime is None else mtime)
        return self

    def kafka_root(self) -> ZkTree:
        for path in PARENTS:
            self.nodes.setdefault(path, (None, T0, T0))
        return self

    def broker(self, broker_id: int, rack: str | None = None) -> ZkTree:
        doc = {"version": 5, "host": "127.0.0.1", "port": 9092 + broker_id, "jmx_port": -1,
               "endpoints": [f"PLAINTEXT://127.0.0.1:{9092 + broker_id}"], "rack": rack, "features": {},
               "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "timestamp": str(T0)}
        return self.kafka_root()._put(f"/brokers/ids/{broker_id}", doc)

    def topic(self, name: str, topic_id: Uuid | None, assignment: dict[int, list[int]], *,
              adding: dict[int, list[int]] | None = None, removing: dict[int, list[int]] | None = None,
              ctime: int = T0, mtime: int | None = None, leaders: bool = True) -> ZkTree:
        doc: dict[str, Any] = {"version": 3 if topic_id is not None else 1,
                               "partitions": {str(p): r for p, r in assignment.items()}}
        if topic_id is not None:
            doc |= {"topic_id": str(topic_id), "adding_replicas": {str(p): r for p, r in (adding or {}).items()},
                    "removing_replicas": {str(p): r for p, r in (removing or {}).items()}}
        self.kafka_root()._put(f"/brokers/topics/{name}", doc, ctime, mtime)
        if leaders:
            self._put(f"/brokers/topics/{name}/partitions", None, ctime)
            for p, replicas in assignment.items():
                self._put(f"/brokers/topics/{name}/partitions/{p}", None, ctime)
                self._put(f"/brokers/topics/{name}/partitions/{p}/state",
                          {"controller_epoch": 1, "leader": replicas[0], "version": 1, "leader_epoch": 2,
                           "isr": replicas}, ctime)
        return self

    def delete_queued(self, name: str, ctime: int) -> ZkTree:
        return self.kafka_root()._put(f"/admin/delete_topics/{name}", None, ctime)

    def reassign(self, targets: dict[tuple[str, int], list[int]]) -> ZkTree:
        doc = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                            for (t, p), r in targets.items()]}
        return self._put("/admin/reassign_partitions", doc)

    def config(self, kind: str, name: str, values: dict[str, str]) -> ZkTree:
        return self.kafka_root()._put(f"/config/{kind}/{name}", {"version": 1, "config": values})

    def raw(self, path: str, data: bytes | None) -> ZkTree:
        return self._put(path, data)

    # -- renderings -------------------------------------------------------------------------------------------
    def snapshot(self) -> ZnodeSnapshot:
        """As ``read_snapshot`` would return it: each node's zxids in path order, children of every parent."""
        children: dict[str, set[str]] = {}
        for path in self.nodes:
            parent, _, name = path.rpartition("/")
            children.setdefault(parent or "/", set()).add(name)
        znodes = {}
        for zxid, (path, (data, ctime, mtime)) in enumerate(sorted(self.nodes.items()), start=100):
            kids = children.get(path, set() if path in PARENTS else None)
            znodes[path] = Znode(path, data, ctime, mtime, zxid, zxid + (1000 if mtime != ctime else 0), zxid,
                                 1 if mtime != ctime else 0, None if kids is None else tuple(sorted(kids)))
        return ZnodeSnapshot(self.connect, self.taken_at_ms, MappingProxyType(znodes))

    def write(self, client: Any, chroot: str = "") -> None:
        """Create every znode through a kazoo client (parents first; a node written twice keeps the last data)."""
        for path, (data, _, _) in sorted(self.nodes.items()):
            full = chroot + path
            if client.exists(full):
                client.set(full, data or b"")
            else:
                client.create(full, data or b"", makepath=True)
