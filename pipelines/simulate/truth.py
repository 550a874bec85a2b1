"""``truth.json`` (the expected class of every partition dir) and ``cluster.yaml`` (a config ``run`` accepts).

Both are written next to the simulated cluster. ``load_truth`` reads ``truth.json`` back for tests and benchmarks.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from pipelines.simulate.scenario import Scenario

TRUTH_FILE = "truth.json"
CONFIG_FILE = "cluster.yaml"
DELETE_MARGIN_MS = 3_600_000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class TruthItem(_Frozen):
    broker_id: int
    log_dir: str
    dir_name: str
    cls: str = Field(alias="class")
    protected: bool
    topic: str | None
    partition: int | None
    topic_id: str | None
    story: str = ""


class TruthBroker(_Frozen):
    broker_id: int
    log_dirs: tuple[str, ...]
    directory_ids: tuple[str, ...]
    down: bool


class Truth(_Frozen):
    cluster_id: str
    cluster: str
    now_ms: int
    seed: int
    brokers: tuple[TruthBroker, ...]
    metadata_dir: str
    file_delete_delay_ms: int
    skipped_anomalies: tuple[str, ...] = ()
    items: tuple[TruthItem, ...]

    def counts(self) -> dict[str, int]:
        """Number of dirs per class."""
        return dict(Counter(i.cls for i in self.items))


def log_dir_path(out: Path, broker_id: int, index: int) -> Path:
    return out / f"broker-{broker_id}" / f"data-{index}"


def metadata_dir_path(out: Path, scenario: Scenario) -> Path:
    """``__cluster_metadata-0``: in broker 1's first log dir (combined mode) or the controller's own dir."""
    if scenario.spec.separate_controller:
        return out / f"controller-{scenario.controller_id}" / "metadata" / "__cluster_metadata-0"
    return log_dir_path(out, 1, 0) / "__cluster_metadata-0"


def build_truth(scenario: Scenario, out: Path, cluster: str) -> Truth:
    out = out.resolve()
    items = tuple(
        TruthItem(broker_id=d.broker_id, log_dir=str(log_dir_path(out, d.broker_id, d.log_dir)), dir_name=d.name,
                  cls=d.cls, protected=d.protected, topic=d.topic, partition=d.partition,
                  topic_id=None if d.topic_id is None else str(d.topic_id), story=d.story)
        for d in scenario.dirs
    )
    brokers = tuple(
        TruthBroker(broker_id=b.broker_id, log_dirs=tuple(str(log_dir_path(out, b.broker_id, ld.index))
                                                            for ld in b.log_dirs),
                    directory_ids=tuple(str(ld.directory_id) for ld in b.log_dirs), down=b.down)
        for b in scenario.brokers
    )
    return Truth(cluster_id=scenario.cluster_id, cluster=cluster, now_ms=scenario.now_ms, seed=scenario.spec.seed,
                 brokers=brokers, metadata_dir=str(metadata_dir_path(out, scenario)),
                 file_delete_delay_ms=scenario.spec.file_delete_delay_ms, skipped_anomalies=scenario.skipped,
                 items=items)


def write_truth(truth: Truth, path: Path) -> None:
    path.write_text(truth.model_dump_json(by_alias=True, indent=1) + "\n")


def load_truth(path: str | Path) -> Truth:
    """Read a ``truth.json``. Raises pydantic's ``ValidationError`` on a malformed file."""
    return Truth.model_validate_json(Path(path).read_text())


def cluster_config(truth: Truth, warehouse: str) -> dict:
    """The ``AppConfig`` mapping for this cluster (``logdir-gc run --config cluster.yaml``)."""
    return {
        "cluster": truth.cluster,
        "warehouse": warehouse,
        "brokers": [{"broker_id": b.broker_id, "log_dirs": list(b.log_dirs)} for b in truth.brokers],
        "metadata": {"kind": "metadata_log", "source": truth.metadata_dir},
        "detect": {"file_delete_delay_ms": truth.file_delete_delay_ms, "delete_margin_ms": DELETE_MARGIN_MS},
    }


def write_cluster_config(truth: Truth, warehouse: str, path: Path) -> None:
    header = (f"# Simulated cluster {truth.cluster} (cluster.id {truth.cluster_id}), written by logdir-gc simulate.\n"
              "# Use it as: logdir-gc run --config <this file>\n")
    path.write_text(header + yaml.safe_dump(cluster_config(truth, warehouse), sort_keys=False))
