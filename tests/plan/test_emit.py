"""Plan emission from findings rows (built here from the hand-written expectations, no Spark)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pipelines.cli.exit_codes import FAILED, code_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detect"))
from gc_cluster import NOW, RUN, Cluster
from mixed_cluster import EXPECTED, mixed_cluster

from pipelines.config.models import DetectConfig, PolicyConfig
from pipelines.errors import PlanError, PolicyViolation
from pipelines.plan.approval import plan_item_table, plan_row
from pipelines.plan.emit import emit_plan, item_id_for
from pipelines.plan.model import GcPlan
from pipelines.tables.schemas import GC_PLAN_ITEMS, GC_PLANS

POLICY = PolicyConfig()


def findings(cluster: Cluster, expected=EXPECTED) -> list[dict[str, Any]]:
    """findings-shaped rows: disk facts from the cluster, verdicts from the expectation table."""
    dir_ids = {(b, ld): d for b, dirs in cluster.brokers.items() for ld, d in dirs.items()}
    rows = []
    for d in cluster.dirs:
        key = (d["broker_id"], d["log_dir"], d["dir_name"])
        cls, protected, plannable, since = expected[key]
        mtime_ms = None if d["dir_mtime"] is None else int(d["dir_mtime"].timestamp() * 1000)
        rows.append({
            "run_id": RUN, "cluster": "c1", "broker_id": d["broker_id"], "log_dir": d["log_dir"],
            "dir_name": d["dir_name"], "topic": d["topic"], "partition": d["partition"], "topic_id": d["topic_id"],
            "class": cls, "protected": protected, "reason": f"because {cls}", "bytes": d["bytes"], "kind": d["kind"],
            "metadata_offset": cluster.metadata_offset, "garbage_since": since, "plannable": plannable,
            "evidence": json.dumps({"disk": {"partition_metadata_status": d["partition_metadata_status"],
                                             "dir_mtime_ms": mtime_ms}}),
            "fingerprint": d["fingerprint"], "directory_id": dir_ids[key[:2]],
        })
    return rows


def emit(rows, cluster: Cluster, out: Path, **kw: Any) -> GcPlan:
    return emit_plan(rows, cluster.image(), cluster="c1", run_id=RUN, created_by="detector", policy=POLICY,
                     out_dir=str(out), config=DetectConfig(), now=NOW, **kw)


def test_plan_holds_exactly_the_plannable_dirs(tmp_path: Path) -> None:
    c = mixed_cluster()
    plan = emit(findings(c), c, tmp_path)
    want = {k for k, v in EXPECTED.items() if v[2]}
    assert {(i.broker_id, i.log_dir, i.dir_name) for i in plan.items} == want
    assert plan.metadata_offset == 500 and plan.run_id == RUN and plan.metadata_complete
    assert [(i.broker_id, i.log_dir, i.dir_name) for i in plan.items] == sorted(want)

    on_disk = json.loads((tmp_path / f"{plan.plan_id}.json").read_text())
    assert on_disk["content_hash"] == plan.content_hash and on_disk["plan_id"] == plan.plan_id
    first = on_disk["items"][0]
    assert {"item_id", "broker_id", "log_dir", "dir_name", "topic_id", "class", "bytes", "fingerprint"} <= set(first)
    assert GcPlan.from_json((tmp_path / f"{plan.plan_id}.json").read_text()) == plan
    md = (tmp_path / f"{plan.plan_id}.md").read_text()
    assert plan.content_hash in md and RUN in md and "500" in md
    assert "| 1 |" in md and "| 2 |" in md  # a line per broker


def test_item_ids_are_deterministic_and_content_bound(tmp_path: Path) -> None:
    c = mixed_cluster()
    a = emit(findings(c), c, tmp_path / "a")
    b = emit(list(reversed(findings(c))), c, tmp_path / "b")
    assert [i.item_id for i in a.items] == [i.item_id for i in b.items]
    assert a.content_hash == b.content_hash
    i = a.items[0]
    assert i.item_id == item_id_for(i.broker_id, i.log_dir, i.dir_name, i.fingerprint)
    assert item_id_for(i.broker_id, i.log_dir, i.dir_name, "sha256:other") != i.item_id


def test_a_class_the_recheck_does_not_confirm_aborts_everything(tmp_path: Path) -> None:
    c = mixed_cluster()
    rows = findings(c)
    ok = next(r for r in rows if r["dir_name"] == "orders-0" and r["broker_id"] == 1)
    ok.update({"class": "deleted_topic", "plannable": True, "garbage_since": NOW.replace(year=2025)})
    with pytest.raises(PlanError, match="re-check refused 1 of") as refused:
        emit(rows, c, tmp_path)
    assert code_for(refused.value) == FAILED  # exit 9, as docs/commands.md says: the run failed, not a policy refusal
    assert not list(tmp_path.glob("*[0-9a-f].json"))  # no plan
    [report] = tmp_path.glob("*.disagreements.json")
    body = json.loads(report.read_text())
    assert body["disagreements"][0]["dir_name"] == "orders-0"
    assert body["disagreements"][0]["recheck_class"] == "assigned_replica"
    assert (tmp_path / report.name.replace(".json", ".md")).is_file()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"run_id": "another-run"}, "belongs to run"),
        ({"metadata_offset": 499}, "metadata offset"),
        ({"garbage_since": NOW}, "not elapsed"),
        ({"garbage_since": None}, "garbage_since"),
        ({"fingerprint": None}, "fingerprint"),
        ({"protected": True}, "protected"),
    ],
)
def test_unbound_or_unripe_candidates_are_refused(tmp_path: Path, change, problem) -> None:
    c = mixed_cluster()
    rows = findings(c)
    next(r for r in rows if r["dir_name"] == "gone-0").update(change)
    with pytest.raises(PlanError) as err:
        emit(rows, c, tmp_path)
    [report] = tmp_path.glob("*.disagreements.json")
    assert problem in json.loads(report.read_text())["disagreements"][0]["problem"], err.value


def test_incomplete_image_plans_nothing(tmp_path: Path) -> None:
    c = mixed_cluster()
    rows = findings(c)
    c.complete = False
    with pytest.raises(PlanError, match=r"^controller image is incomplete \("):
        emit(rows, c, tmp_path)


def test_empty_plan_is_written(tmp_path: Path) -> None:
    c = mixed_cluster()
    rows = [{**r, "plannable": False} for r in findings(c)]
    plan = emit(rows, c, tmp_path)
    assert plan.items == () and plan.content_hash
    assert (tmp_path / f"{plan.plan_id}.json").is_file()
    assert "Nothing to reclaim" in (tmp_path / f"{plan.plan_id}.md").read_text()


def test_policy_budget_applies(tmp_path: Path) -> None:
    c = mixed_cluster()
    with pytest.raises(PolicyViolation, match="max_plan_items"):
        emit_plan(findings(c), c.image(), cluster="c1", run_id=RUN, created_by="d", now=NOW,
                  policy=PolicyConfig(max_plan_items=2), out_dir=str(tmp_path))


def test_plan_rows_match_the_table_schemas(tmp_path: Path) -> None:
    c = mixed_cluster()
    plan = emit(findings(c), c, tmp_path)
    row, table = plan_row(plan, POLICY), plan_item_table(plan)
    items = table.to_pylist()
    assert table.schema == GC_PLAN_ITEMS.to_arrow()
    assert set(row) == set(GC_PLANS.column_names)
    assert row["status"] == "proposed" and row["item_count"] == len(plan.items) == len(items)
    assert row["total_bytes"] == sum(i["bytes"] for i in items)
    assert all(set(i) == set(GC_PLAN_ITEMS.column_names) for i in items)
    assert {i["plan_id"] for i in items} == {plan.plan_id}
    assert [(i["item_id"], i["class"], i["bytes"]) for i in items] == [
        (i.item_id, i.class_, i.bytes) for i in plan.items]


def test_streamed_emission_equals_one_pass(tmp_path: Path) -> None:
    """The plan step streams: the live rows first (``live_rows``), then the plannable rows one at a time; the plan
    is the one a single pass over every finding gives, and a refusal still names every disagreement."""
    c = mixed_cluster()
    rows = findings(c)
    one_pass = emit(rows, c, tmp_path / "one")
    live = [r for r in rows if r["kind"] == "live"]
    candidates = iter([r for r in rows if r["plannable"]])
    streamed = emit(candidates, c, tmp_path / "streamed", live_rows=iter(live))
    assert streamed.items == one_pass.items and streamed.content_hash == one_pass.content_hash
    assert not list(candidates)  # consumed once, as a stream
    lying = [{**r, "class": "stray"} if r["plannable"] and r["class"] != "stray" else r for r in rows]
    with pytest.raises(PlanError) as one:
        emit(lying, c, tmp_path / "one-lie")
    with pytest.raises(PlanError) as stream:
        emit((r for r in lying if r["plannable"]), c, tmp_path / "stream-lie", live_rows=live)
    assert str(one.value).split(";")[0] == str(stream.value).split(";")[0]  # "re-check refused N of M candidates"
