"""Leader-epoch lineages of a real tiered cluster, taken as the remote tier step takes them: the controller's leader
and leader epoch, and the crawl's parse of that broker's ``leader-epoch-checkpoint``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pipelines.config.models import BrokerConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.kafka.uuid import Uuid
from pipelines.remote_tier.classify import Lineage


def crawled_lineages(brokers: Mapping[int, Any], image: Any, topic_ids: Iterable[Uuid]
                     ) -> dict[tuple[Uuid, int], tuple[Lineage, int]]:  # fmt: skip
    """``(topic id, 0)`` -> (the leader's lineage, the controller's leader epoch), for each topic whose leader's
    live replica the crawl found with a checkpoint (no time: every segment is judged)."""
    rows = []
    for b, node in brokers.items():
        res = crawl_local([BrokerConfig(broker_id=b, log_dirs=tuple(str(d) for d in node.log_dirs))],
                          run_id="lineage", cluster="it")
        rows += res.partition_dirs
    out = {}
    for tid in topic_ids:
        part = image.topics.by_id[tid].partitions[0]
        mine = [r for r in rows if r["broker_id"] == part.leader and r["kind"] == "live"
                and r["topic_id"] == str(tid) and r["partition"] == 0 and r["leader_epochs"]]
        if len(mine) == 1:
            out[(tid, 0)] = (Lineage(dict(json.loads(mine[0]["leader_epochs"])), None), part.leader_epoch)
    return out
