"""Kafka's znodes, read-only: from a live ZooKeeper (kazoo) or from a ``logdir-gc metadata dump-zk`` file.

Only ``exists``, ``get``, ``get_children`` and ``sync`` are ever sent (:class:`ReadOnlyZooKeeper` has no other
call); the session is opened with ``read_only=True`` so a read-only server may answer. The reads are not one atomic
snapshot: a topic deleted while we walk simply vanishes from the walk.

Dump format (JSON, one object)::

    {"format": "kafka-logdir-gc/zookeeper-dump", "version": 1,
     "zookeeper_connect": "zk1:2181/kafka", "taken_at_ms": 1732500000000,
     "znodes": {"/brokers/topics/orders": {"data": "<the znode's bytes as UTF-8 text, or null>",
                                           "ctime": ..., "mtime": ..., "czxid": ..., "mzxid": ..., "pzxid": ...,
                                           "version": ..., "children": ["partitions"]}, ...}}

``znodes`` maps each path (under the chroot) to its data and ``Stat`` fields (times in ms since the epoch, zxids as
integers); ``children`` is present on the znodes whose children were listed (``/brokers/topics``, ...), so an
empty list means "listed, none" and a missing path means "absent". Data that is not UTF-8 is stored as
``data_base64`` instead of ``data``. :data:`KAFKA_PATHS` says which znodes a dump holds.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pipelines.config.kafka_client import env_secret
from pipelines.config.models import MetadataConfig
from pipelines.errors import ConfigError, DecodeError, SourceUnavailable
from pipelines.kafka.bounded_read import FileTooLarge, limit_for

DUMP_FORMAT = "kafka-logdir-gc/zookeeper-dump"
DUMP_VERSION = 1

#: What is read. ``*`` is every child; each listed parent is recorded with its children.
KAFKA_PATHS = (
    "/cluster/id",
    "/brokers/ids/*",
    "/brokers/topics/*",
    "/brokers/topics/*/partitions/*/state",
    "/admin/delete_topics/*",
    "/admin/reassign_partitions",
    "/config/brokers/*",
    "/config/topics/*",
)

_STAT_FIELDS = ("ctime", "mtime", "czxid", "mzxid", "pzxid", "version")


@dataclass(frozen=True, slots=True)
class Znode:
    """One znode: its data and the ``Stat`` fields the image uses. ``children``: None when not listed."""

    path: str
    data: bytes | None
    ctime: int = -1
    mtime: int = -1
    czxid: int = -1
    mzxid: int = -1
    pzxid: int = -1
    version: int = -1
    children: tuple[str, ...] | None = None

    def json(self) -> Any:
        """The data parsed as JSON. Raises DecodeError naming the znode."""
        if self.data is None:
            raise DecodeError(f"{self.path}: no data")
        try:
            return json.loads(self.data)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise DecodeError(f"{self.path}: not JSON ({exc})") from None

    def to_dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.data is None:
            out["data"] = None
        else:
            try:
                out["data"] = self.data.decode("utf-8")
            except UnicodeDecodeError:
                out["data_base64"] = base64.b64encode(self.data).decode("ascii")
        out.update({k: getattr(self, k) for k in _STAT_FIELDS})
        if self.children is not None:
            out["children"] = sorted(self.children)
        return out

    @classmethod
    def from_dump(cls, path: str, raw: Mapping[str, Any]) -> Znode:
        if not isinstance(raw, Mapping):
            raise DecodeError(f"dump: znode {path} is not an object")
        try:
            if "data_base64" in raw:
                data: bytes | None = base64.b64decode(raw["data_base64"], validate=True)
            else:
                text = raw.get("data")
                data = None if text is None else str(text).encode("utf-8")
            children = raw.get("children")
            stat = {k: int(raw.get(k, -1)) for k in _STAT_FIELDS}
            return cls(path, data, **stat,
                       children=None if children is None else tuple(str(c) for c in children))
        except (ValueError, TypeError) as exc:
            raise DecodeError(f"dump: znode {path}: {exc}") from None


@dataclass(frozen=True)
class ZnodeSnapshot:
    """The Kafka znodes of one cluster as read at ``taken_at_ms`` (live) or as a dump recorded them."""

    zookeeper_connect: str
    taken_at_ms: int
    znodes: Mapping[str, Znode]

    def get(self, path: str) -> Znode | None:
        return self.znodes.get(path)

    def children(self, path: str) -> tuple[str, ...] | None:
        node = self.znodes.get(path)
        return None if node is None else node.children

    @property
    def last_zxid(self) -> int:
        """The newest transaction id among the znodes: how far this snapshot saw (the image's offset)."""
        return max((max(n.czxid, n.mzxid, n.pzxid) for n in self.znodes.values()), default=-1)

    def to_json(self) -> str:
        return json.dumps({
            "format": DUMP_FORMAT, "version": DUMP_VERSION, "zookeeper_connect": self.zookeeper_connect,
            "taken_at_ms": self.taken_at_ms,
            "znodes": {path: node.to_dump() for path, node in sorted(self.znodes.items())},
        }, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, *, name: str = "dump") -> ZnodeSnapshot:
        """Parse a dump. Raises DecodeError with a one-line reason."""
        try:
            doc = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise DecodeError(f"{name}: not JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != DUMP_FORMAT:
            raise DecodeError(f"{name}: not a ZooKeeper dump (format is not {DUMP_FORMAT!r})")
        if doc.get("version") != DUMP_VERSION:
            raise DecodeError(f"{name}: dump version {doc.get('version')!r}, this reader knows {DUMP_VERSION}")
        znodes = doc.get("znodes")
        if not isinstance(znodes, dict):
            raise DecodeError(f"{name}: 'znodes' is not an object")
        try:
            taken = int(doc.get("taken_at_ms", -1))
        except (TypeError, ValueError):
            raise DecodeError(f"{name}: taken_at_ms is not an integer") from None
        return cls(str(doc.get("zookeeper_connect") or ""), taken,
                   MappingProxyType({p: Znode.from_dump(p, raw) for p, raw in znodes.items()}))


def load_dump(url: str, storage_options: Mapping[str, Any] | None = None) -> ZnodeSnapshot:
    """A dump file (path or fsspec URL). Raises FileNotFoundError / OSError, DecodeError."""
    import fsspec

    limit = limit_for("metadata_dump")
    with fsspec.open(url, "rb", **dict(storage_options or {})) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(url, limit, "metadata_dump")
    return ZnodeSnapshot.from_json(data, name=url)


# -- live ZooKeeper ---------------------------------------------------------------------------------------------


_QUIET = logging.getLogger("pipelines.zookeeper.kazoo")
"""kazoo's own log lines (connection drops, retries) stay off stderr: failures reach the user as one line."""
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False




def client_options(config: MetadataConfig) -> dict[str, Any]:
    """``KazooClient`` keyword arguments for the configured connect string, timeout, TLS and authentication."""
    assert config.zookeeper_connect is not None
    options: dict[str, Any] = {"hosts": config.zookeeper_connect, "timeout": config.zookeeper_timeout_ms / 1000,
                               "read_only": True, "connection_retry": {"max_tries": 1, "delay": 0.2},
                               "command_retry": {"max_tries": 2, "delay": 0.2}, "logger": _QUIET}
    tls = config.zookeeper_tls
    if tls is not None:
        options.update(use_ssl=True, ca=tls.ca_file, certfile=tls.cert_file, keyfile=tls.key_file,
                       keyfile_password=env_secret(tls.key_password_env, "zookeeper_tls.key_password_env"),
                       verify_certs=tls.verify_certs, check_hostname=tls.check_hostname)
    auth = config.zookeeper_auth
    if auth is not None:
        password = env_secret(auth.password_env, "zookeeper_auth.password_env")
        if auth.mechanism == "digest":
            options["auth_data"] = [("digest", f"{auth.username}:{password}")]
        elif auth.mechanism == "DIGEST-MD5":
            options["sasl_options"] = {"mechanism": "DIGEST-MD5", "username": auth.username, "password": password}
        else:
            options["sasl_options"] = {"mechanism": "GSSAPI",
                                       **{k: v for k, v in (("service", auth.service),
                                                            ("principal", auth.principal)) if v}}
    return options


class ReadOnlyZooKeeper:
    """A kazoo session that can only read: the one place this project talks to ZooKeeper.

    Raises SourceUnavailable (one line) when the ensemble cannot be reached or a read fails for another reason than
    a missing znode.
    """

    def __init__(self, config: MetadataConfig) -> None:
        try:
            from kazoo.client import KazooClient
            from kazoo.exceptions import KazooException, NoNodeError
            from kazoo.handlers.threading import KazooTimeoutError
        except ImportError as exc:
            raise ConfigError("metadata.kind zookeeper needs kazoo: pip install 'kafka-logdir-gc[zookeeper]'") from exc
        self._errors: tuple[type[BaseException], ...] = (KazooException, KazooTimeoutError, OSError)
        self._no_node = NoNodeError
        self.connect = config.zookeeper_connect or ""
        self._timeout = config.zookeeper_timeout_ms / 1000
        try:
            self._client = KazooClient(**client_options(config))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"ZooKeeper client options: {exc}") from None

    def __enter__(self) -> ReadOnlyZooKeeper:
        """Connect, waiting up to the timeout (``start_async``: kazoo's ``start`` would also warn on stderr about a
        missing chroot, which the image reports as a reason instead)."""
        try:
            self._client.start_async().wait(self._timeout)
        except self._errors as exc:
            self._close()
            raise SourceUnavailable(f"cannot reach ZooKeeper {self.connect}: {type(exc).__name__}: {exc}") from None
        if not self._client.connected:
            self._close()
            raise SourceUnavailable(f"cannot reach ZooKeeper {self.connect} (no session within "
                                    f"{self._timeout:g} s: refused, unreachable, or TLS/authentication failed)")
        return self

    def _close(self) -> None:
        self._client.stop()
        self._client.close()

    def __exit__(self, *exc: object) -> None:
        self._close()

    def sync(self) -> None:
        """Ask the server we read from to catch up with the leader first (best effort: a read-only server
        cannot)."""
        with contextlib.suppress(*self._errors):
            self._client.sync("/")

    def _fail(self, path: str, exc: BaseException) -> SourceUnavailable:
        return SourceUnavailable(f"ZooKeeper {self.connect}: reading {path} failed: {type(exc).__name__}: {exc}")

    def get_many(self, paths: Iterable[str]) -> dict[str, Znode]:
        """The znodes that exist among ``paths`` (sent pipelined, then collected)."""
        pending = [(p, self._client.get_async(p)) for p in paths]
        out: dict[str, Znode] = {}
        for path, result in pending:
            try:
                data, stat = result.get(timeout=self._timeout)
            except self._no_node:
                continue
            except self._errors as exc:
                raise self._fail(path, exc) from None
            out[path] = _znode(path, data, stat)
        return out

    def children_many(self, paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """The children of each path that exists among ``paths``."""
        pending = [(p, self._client.get_children_async(p)) for p in paths]
        out: dict[str, tuple[str, ...]] = {}
        for path, result in pending:
            try:
                out[path] = tuple(sorted(result.get(timeout=self._timeout)))
            except self._no_node:
                continue
            except self._errors as exc:
                raise self._fail(path, exc) from None
        return out


def _znode(path: str, data: bytes | None, stat: Any, children: tuple[str, ...] | None = None) -> Znode:
    return Znode(path, data if data else None, stat.ctime, stat.mtime, stat.czxid, stat.mzxid, stat.pzxid,
                 stat.version, children)


def _join(parent: str, child: str) -> str:
    return f"{parent.rstrip('/')}/{child}"


def read_snapshot(zk: ReadOnlyZooKeeper) -> ZnodeSnapshot:
    """Walk :data:`KAFKA_PATHS` on a live session (a few pipelined rounds, not one round trip per znode)."""
    zk.sync()
    taken = int(time.time() * 1000)
    parents = ("/brokers/ids", "/brokers/topics", "/admin/delete_topics", "/config/brokers", "/config/topics")
    listed = zk.children_many(parents)
    nodes = zk.get_many([*listed, "/cluster/id", "/admin/reassign_partitions"])
    for parent, children in listed.items():
        if parent in nodes:
            nodes[parent] = _with_children(nodes[parent], children)
    nodes.update(zk.get_many(_join(parent, c) for parent, children in listed.items() for c in children))
    topics = [_join("/brokers/topics", t) for t in listed.get("/brokers/topics", ())]
    partition_dirs = zk.children_many(_join(t, "partitions") for t in topics)
    for topic in topics:
        if topic in nodes:
            nodes[topic] = _with_children(nodes[topic], ("partitions",) if _join(topic, "partitions") in
                                          partition_dirs else ())
    nodes.update(zk.get_many(partition_dirs))
    for path, children in partition_dirs.items():
        if path in nodes:
            nodes[path] = _with_children(nodes[path], children)
    nodes.update(zk.get_many(_join(_join(p, c), "state") for p, children in partition_dirs.items() for c in children))
    return ZnodeSnapshot(zk.connect, taken, MappingProxyType(dict(sorted(nodes.items()))))


def _with_children(node: Znode, children: tuple[str, ...]) -> Znode:
    return Znode(node.path, node.data, node.ctime, node.mtime, node.czxid, node.mzxid, node.pzxid, node.version,
                 tuple(children))


def read_live(config: MetadataConfig) -> ZnodeSnapshot:
    """Connect (read-only), walk, disconnect. Raises SourceUnavailable, ConfigError."""
    with ReadOnlyZooKeeper(config) as zk:
        return read_snapshot(zk)
