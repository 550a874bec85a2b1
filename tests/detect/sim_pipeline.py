"""Generated cluster → crawl rows + controller rows + image, with the simulator's ``truth.json`` beside them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.config.load import load_config
from pipelines.config.models import AppConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.metadata.image import MetadataImage
from pipelines.metadata.metadata_log_source import load_metadata
from pipelines.metadata.rows import event_rows, image_rows
from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.simulate.truth import Truth

RUN_ID = "e2e-run"
NOW_MS = 1_763_700_000_000

SIZES = {
    "small": ClusterSpec(brokers=3, topics=2, partitions_per_topic=2, replication=2, jbod_dirs=2, seed=3,
                         anomalies=PRESETS["small"], files_per_partition=1, segment_bytes=0, internal_partitions=2,
                         now_ms=NOW_MS),
    # replication 1 with partition 0 of the out-of-range story's topic on the down broker (was a StopIteration)
    "replication_one": ClusterSpec(brokers=3, topics=2, partitions_per_topic=2, replication=1, jbod_dirs=2, seed=3,
                                   anomalies=PRESETS["small"], files_per_partition=1, segment_bytes=0,
                                   internal_partitions=2, now_ms=NOW_MS),
    "all": ClusterSpec(brokers=4, topics=4, partitions_per_topic=4, replication=3, jbod_dirs=2, seed=7,
                       anomalies=PRESETS["all"], files_per_partition=2, segment_bytes=1024, internal_partitions=3,
                       now_ms=NOW_MS),
}


@dataclass
class Simulated:
    truth: Truth
    config: AppConfig
    tables: dict[str, list[dict[str, Any]]]
    image: MetadataImage
    now: datetime


def simulate(size: str, out: Path) -> Simulated:
    result = generate(SIZES[size], out)
    truth = Truth.model_validate_json(result.truth_path.read_text())
    config = load_config(result.config_path)
    crawl = crawl_local(config.brokers, run_id=RUN_ID, cluster=config.cluster)
    replay = load_metadata(config.metadata.source)
    tables = {"partition_dirs": crawl.partition_dirs, "log_dirs": crawl.log_dirs,
              **image_rows(replay.image, run_id=RUN_ID, cluster=config.cluster, source="e2e"),
              "metadata_events": event_rows(replay.events, cluster=config.cluster, source="e2e", run_id=RUN_ID)}
    now = datetime.fromtimestamp(truth.now_ms / 1000, tz=timezone.utc)
    return Simulated(truth, config, tables, replay.image, now)


def truth_classes(sim: Simulated) -> dict[tuple[int, str, str], tuple[str, bool]]:
    return {(i.broker_id, i.log_dir, i.dir_name): (i.cls, i.protected) for i in sim.truth.items}
