r"""Build a ``MetadataImage`` from ``kafka-topics.sh --describe`` output (for clusters we cannot read the log of).

Accepted lines (tab separated ``Key: value`` pairs, leading whitespace ignored)::

    Topic: t\tTopicId: <base64>\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: k=v,k2=v2
    Topic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tElr: \tLastKnownElr:

``Leader: none`` is -1. Lines of other shapes are reported, not fatal. Leader and partition epochs and directories
are not in the output (epochs 0, directories MIGRATING). The image is ``complete`` only when the caller says the
describe covered every topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.errors import DecodeError
from pipelines.kafka.bounded_read import FileTooLarge, limit_for
from pipelines.kafka.uuid import Uuid
from pipelines.metadata.image import TOPIC_RESOURCE, MetadataImage, MetadataProvenance
from pipelines.metadata.image_delta import MetadataDelta
from pipelines.metadata.source import ControllerSource, ControllerView

SOURCE = "topics_describe"


@dataclass(frozen=True, slots=True)
class _Record:
    name: str
    fields: dict[str, Any]


def _pairs(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for cell in line.strip().split("\t"):
        key, sep, value = cell.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def parse_topics_describe(text: str, *, complete: bool = False) -> tuple[MetadataImage, tuple[str, ...]]:
    """(image, problems). ``complete``: the caller vouches that every topic of the cluster is in ``text``."""
    delta = MetadataDelta()
    problems: list[str] = []
    ids: dict[str, Uuid] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = _pairs(line)
        name = cells.get("Topic")
        try:
            if name is not None and "TopicId" in cells:
                topic_id = Uuid.from_string(cells["TopicId"])
                ids[name] = topic_id
                delta.replay(_Record("TopicRecord", {"name": name, "topic_id": topic_id}), number)
                for item in filter(None, cells.get("Configs", "").split(",")):
                    key, _, value = item.partition("=")
                    delta.replay(_Record("ConfigRecord", {"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                                          "name": key.strip(), "value": value.strip()}), number)
            elif name is not None and "Partition" in cells:
                if name not in ids:
                    problems.append(f"line {number}: partition of {name!r} before its topic line (no TopicId)")
                    continue
                leader = cells.get("Leader", "none")
                replicas = _ints(cells.get("Replicas", ""))
                delta.replay(_Record("PartitionRecord", {
                    "partition_id": int(cells["Partition"]), "topic_id": ids[name], "replicas": replicas,
                    "isr": _ints(cells.get("Isr", "")), "leader": -1 if leader == "none" else int(leader),
                    "leader_epoch": 0, "partition_epoch": 0,
                    "eligible_leader_replicas": _ints(cells.get("Elr", "")),
                    "last_known_elr": _ints(cells.get("LastKnownElr", "")),
                }), number)
            else:
                problems.append(f"line {number}: not a topic or partition line: {line.strip()[:80]!r}")
        except (ValueError, DecodeError) as exc:
            problems.append(f"line {number}: {exc}")
    problems += [str(p) for p in delta.errors]
    image = delta.apply(MetadataProvenance(SOURCE))
    reasons = () if complete else ("topics describe output: not known to cover every topic",)
    if problems and complete:
        reasons = ("topics describe output had unparseable lines",)
    return image.with_completeness(complete and not problems, reasons), tuple(problems)


class TopicsDescribeSource(ControllerSource):
    """``metadata.kind: topics_describe``: a ``kafka-topics.sh --describe`` output file covering every topic."""

    kind = "topics_describe"

    def load(self) -> ControllerView:
        import fsspec

        assert self.config.source is not None
        limit = limit_for("metadata_dump")
        with fsspec.open(self.config.source, "rt", encoding="utf-8", **self.config.storage_options) as f:
            text = f.read(limit + 1)
        if len(text) > limit:
            raise FileTooLarge(self.config.source, limit, "metadata_dump")
        image, problems = parse_topics_describe(text, complete=True)
        return ControllerView(image, (), self.config.source, problems)
