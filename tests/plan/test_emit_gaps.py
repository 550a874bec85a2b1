"""Emission rules a mutation audit found unguarded: each test fails if its one check is removed from emit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detect"))
from gc_cluster import NOW, RUN
from mixed_cluster import mixed_cluster
from test_emit import POLICY, emit, findings

from pipelines.config.models import DetectConfig
from pipelines.errors import PlanError
from pipelines.plan.emit import emit_plan

DAY_OLD = NOW.replace(year=2025)


def _row(rows, broker: int, log_dir: str, dir_name: str) -> dict:
    return next(r for r in rows if (r["broker_id"], r["log_dir"], r["dir_name"]) == (broker, log_dir, dir_name))


def _problems(out: Path) -> dict[str, str]:
    [report] = out.glob("*.disagreements.json")
    return {d["dir_name"]: d["problem"] for d in json.loads(report.read_text())["disagreements"]}


def test_a_class_outside_the_garbage_classes_is_never_planned_even_when_both_classifiers_agree(
        tmp_path: Path) -> None:
    c = mixed_cluster()
    rows = findings(c)
    _row(rows, 1, "/d1", "nopm-0").update({"plannable": True, "garbage_since": DAY_OLD})
    with pytest.raises(PlanError, match="re-check refused 1 of"):
        emit(rows, c, tmp_path)
    assert "is never planned" in _problems(tmp_path)["nopm-0"]
    assert not list(tmp_path.glob("*[0-9a-f].json"))


def test_the_re_check_applies_protection_itself_not_only_the_row_flag(tmp_path: Path) -> None:
    """A finding whose ``protected`` flag is wrong (stale detector config) is still refused: the re-check derives
    protection from the topic names it sees, with the emitter's config."""
    c = mixed_cluster()
    rows = findings(c)
    config = DetectConfig(protected_topic_patterns=(*DetectConfig().protected_topic_patterns, "gone"))
    with pytest.raises(PlanError, match="re-check refused"):
        emit_plan(rows, c.image(), cluster="c1", run_id=RUN, created_by="detector", policy=POLICY,
                  out_dir=str(tmp_path), config=config, now=NOW)
    assert _problems(tmp_path)["gone-0"] == "protected topic"
    assert not list(tmp_path.glob("*[0-9a-f].json"))


def test_an_incomplete_image_aborts_before_any_candidate_is_judged(tmp_path: Path) -> None:
    c = mixed_cluster()
    rows = findings(c)
    c.complete = False
    with pytest.raises(PlanError, match=r"^controller image is incomplete"):
        emit(rows, c, tmp_path)
    assert list(tmp_path.iterdir()) == []
