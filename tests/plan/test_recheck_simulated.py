"""The plain-Python re-check alone reproduces the simulator's truth.json (crawl rows + replayed image)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detect"))
from sim_pipeline import SIZES, simulate, truth_classes

from pipelines.detect import classes as C
from pipelines.plan.recheck import DirFacts, classify, is_protected_dir, live_copies


@pytest.mark.parametrize("size", sorted(SIZES))
def test_recheck_reproduces_truth(tmp_path: Path, size: str) -> None:
    sim = simulate(size, tmp_path / "cluster")
    dir_ids = {(r["broker_id"], r["log_dir"]): r["directory_id"] for r in sim.tables["log_dirs"]}
    facts = [DirFacts.from_partition_dir(r, dir_ids[(r["broker_id"], r["log_dir"])])
             for r in sim.tables["partition_dirs"]]
    copies = live_copies(facts)
    got = {(f.broker_id, f.log_dir, f.dir_name): (
        classify(f, sim.image, copies=copies, config=sim.config.detect, now=sim.now)[0],
        is_protected_dir(f, sim.image, sim.config.detect)) for f in facts}
    assert got == truth_classes(sim)
    assert {cls for cls, _ in got.values()} >= set(C.GARBAGE_CLASSES)
