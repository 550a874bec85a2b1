"""Small root-level files: ``.kafka_cleanshutdown``, ``quorum-state``, and the names of everything else.

- ``.kafka_cleanshutdown`` (``storage/.../checkpoint/CleanShutdownFileHandler.java``): empty up to 3.6, since 3.7
  ``{"version":0,"brokerEpoch":N}``. Kafka only needs the file to exist; an unreadable epoch is "no epoch".
- ``quorum-state`` (``raft/.../FileQuorumStateStore.java``): one JSON object with ``data_version`` 0 or 1 plus the
  QuorumStateData fields. It lives inside ``__cluster_metadata-0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import clip, loads_json
from pipelines.kafka.checkpoints import ROOT_CHECKPOINTS
from pipelines.kafka.problems import Problem
from pipelines.kafka.uuid import Uuid

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
LOCK = ".lock"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
META_PROPERTIES = "meta.properties"
QUORUM_STATE = "quorum-state"
TMP_SUFFIX = ".tmp"
KNOWN_ROOT_FILES = frozenset({CLEAN_SHUTDOWN, LOCK, BOOTSTRAP_CHECKPOINT, META_PROPERTIES, *ROOT_CHECKPOINTS})


@dataclass(frozen=True, slots=True)
class CleanShutdown:
    """``broker_epoch`` is None for the pre-3.7 empty file and for anything Kafka could not parse."""

    broker_epoch: int | None
    version: int | None
    problems: tuple[Problem, ...] = ()


def read_clean_shutdown(data: bytes) -> CleanShutdown:
    """Never raises: Kafka tolerates any content."""
    if not data.strip():
        return CleanShutdown(None, None)
    try:
        obj = loads_json(data.decode("utf-8"), CLEAN_SHUTDOWN)
    except (UnicodeDecodeError, ValueError, DecodeError):
        return CleanShutdown(None, None, (Problem("warning", "clean_shutdown_unparseable", "not JSON; no epoch"),))
    if not isinstance(obj, dict):
        return CleanShutdown(None, None, (Problem("warning", "clean_shutdown_unparseable", "not a JSON object"),))
    epoch, version = obj.get("brokerEpoch"), obj.get("version")
    epoch = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    problems = () if epoch is not None else (Problem("warning", "clean_shutdown_no_epoch", "no brokerEpoch"),)
    return CleanShutdown(epoch, version, problems)


class MalformedQuorumState(DecodeError):
    """``quorum-state`` is not JSON, has no ``data_version``, or one outside 0..1."""


@dataclass(frozen=True, slots=True)
class QuorumState:
    data_version: int
    leader_id: int
    leader_epoch: int
    voted_id: int
    voted_directory_id: Uuid | None
    applied_offset: int | None
    current_voters: tuple[int, ...] | None
    cluster_id: str | None
    raw: dict[str, Any]


def _opt_int(obj: dict[str, Any], key: str, default: int | None) -> int | None:
    value = obj.get(key, default)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise MalformedQuorumState(f"{key} is not an integer: {clip(value)}")


def _int(obj: dict[str, Any], key: str) -> int:
    """An int field whose default (absent or null) is -1, like QuorumStateData's."""
    value = _opt_int(obj, key, -1)
    return -1 if value is None else value


def read_quorum_state(data: bytes) -> QuorumState:
    """Parse ``quorum-state``.

    Raises:
        MalformedQuorumState: see the class.
    """
    try:
        obj = loads_json(data.decode("utf-8"), QUORUM_STATE)
    except DecodeError as exc:
        raise MalformedQuorumState(str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedQuorumState(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedQuorumState("not a JSON object")
    version = obj.get("data_version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in (0, 1):
        raise MalformedQuorumState(f"data_version must be 0 or 1, got {clip(version)}")
    voters = obj.get("currentVoters")
    current: tuple[int, ...] | None = None
    if isinstance(voters, list):
        try:
            current = tuple(int(v["voterId"]) for v in voters)
        except (TypeError, KeyError, ValueError):
            raise MalformedQuorumState(f"bad currentVoters: {clip(voters)}") from None
    voted_dir: Uuid | None = None
    if isinstance(obj.get("votedDirectoryId"), str):
        try:
            voted_dir = Uuid.from_string(obj["votedDirectoryId"])
        except DecodeError as exc:
            raise MalformedQuorumState(f"votedDirectoryId: {exc}") from None
    cluster_id = obj.get("clusterId")
    return QuorumState(
        data_version=version,
        leader_id=_int(obj, "leaderId"),
        leader_epoch=_int(obj, "leaderEpoch"),
        voted_id=_int(obj, "votedId"),
        voted_directory_id=voted_dir,
        applied_offset=_opt_int(obj, "appliedOffset", None),
        current_voters=current,
        cluster_id=cluster_id if isinstance(cluster_id, str) else None,
        raw=obj,
    )


def is_tmp_leftover(name: str) -> bool:
    """``<name>.tmp``: an atomic write (checkpoint, meta.properties, partition.metadata) interrupted by a crash."""
    return name.endswith(TMP_SUFFIX) and len(name) > len(TMP_SUFFIX)
