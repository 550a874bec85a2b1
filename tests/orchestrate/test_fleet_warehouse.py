"""One warehouse for a fleet: two clusters' runs with the same run id write, replace and read their own rows only
(every per-run table is keyed by (cluster, run id)), and a new run id is unique even within one second."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from pipelines.config import load_config
from pipelines.orchestrate import new_run_id, run_pipeline
from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.tables import open_store
from pipelines.tables.schemas import ALL_TABLES

NOW = datetime.fromtimestamp(1_780_000_000, tz=timezone.utc)
PER_RUN = [name for name, t in ALL_TABLES.items() if {"cluster", "run_id"} <= set(t.column_names)
           and name not in ("metadata_events", "gc_plans", "gc_plan_items", "gc_plan_audit", "gc_plan_signatures",
                            "gc_journal")]


def test_new_run_ids_are_unique_within_one_second() -> None:
    ids = {new_run_id(NOW) for _ in range(1000)}
    assert len(ids) == 1000 and all(i.startswith(f"{NOW:%Y%m%dT%H%M%SZ}-") for i in ids)
    assert new_run_id(NOW) < new_run_id(NOW + timedelta(seconds=1))  # they sort by time


def _cluster(tmp_path: Path, name: str, seed: int, warehouse: Path) -> Path:
    spec = ClusterSpec(brokers=2, jbod_dirs=1, anomalies=PRESETS["small"], now_ms=int(NOW.timestamp() * 1000),
                       seed=seed)
    out = tmp_path / name
    generate(spec, out, warehouse=str(warehouse), force=True)
    config = out / "cluster.yaml"
    document = yaml.safe_load(config.read_text())
    document["cluster"] = name
    config.write_text(yaml.safe_dump(document))
    return config


def _counts(warehouse: Path, run_id: str) -> dict[tuple[str, str], int]:
    store = open_store("rust", str(warehouse))
    out: dict[tuple[str, str], int] = {}
    for table in PER_RUN:
        if store.exists(table):
            for row in store.read_rows(table, {"run_id": run_id}, columns=("cluster",)):
                out[(table, row["cluster"])] = out.get((table, row["cluster"]), 0) + 1
    return out


@pytest.mark.spark
def test_two_clusters_with_one_run_id_keep_their_own_rows(spark, tmp_path: Path) -> None:
    shared = tmp_path / "fleet-warehouse"
    a = load_config(_cluster(tmp_path, "fleet-a", 21, shared))
    b = load_config(_cluster(tmp_path, "fleet-b", 22, shared))
    run_pipeline(a, "r1", created_by="t", now=NOW)
    alone = {table: n for (table, cluster), n in _counts(shared, "r1").items() if cluster == "fleet-a"}
    assert alone.get("partition_dirs") and alone.get("findings") and alone.get("controller_partitions")
    run_pipeline(b, "r1", created_by="t", now=NOW)
    run_pipeline(a, "r1", created_by="t", now=NOW)  # a rerun of a's run id replaces a's rows only
    both = _counts(shared, "r1")
    assert {table: n for (table, cluster), n in both.items() if cluster == "fleet-a"} == alone
    assert all(both.get((table, "fleet-b")) for table in alone), both
