"""Plan review: items, breakdown, evidence, diff vs the previous plan, policy checks and the printed commands."""

from __future__ import annotations

import shlex
import shutil
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "signing"))

from ssh_keys import Keyring

from pipelines.analytics import (
    decision_commands,
    open_warehouse,
    plan_breakdown,
    plan_diff,
    plan_evidence,
    plan_items,
    plan_record,
    policy_checks,
    previous_plan,
    review_summary,
)
from pipelines.cli.main import main
from pipelines.config.models import PolicyConfig
from pipelines.errors import PlanError
from pipelines.plan import approval


@pytest.fixture(scope="module")
def wh(demo):
    return open_warehouse(str(demo.warehouse))


def test_newest_plan_and_its_items(demo, wh) -> None:
    record = plan_record(wh)
    assert record.plan_id == demo.plans[-1]
    stored = demo.store().read_rows("gc_plan_items", {"plan_id": record.plan_id})
    items = plan_items(record.plan())
    assert sorted(items["item_id"]) == sorted(r["item_id"] for r in stored)
    assert items["bytes"].sum() == sum(r["bytes"] for r in stored)
    by_class = plan_breakdown(record.plan(), "class").set_index("class")
    assert by_class["items"].to_dict() == dict(Counter(r["class"] for r in stored))
    by_dir = plan_breakdown(record.plan(), ["broker_id", "log_dir"])
    assert by_dir["bytes"].sum() == record.total_bytes
    with pytest.raises(PlanError):
        plan_record(wh, "no-such-plan")


def test_evidence_joins_the_plan_run_findings(demo, wh) -> None:
    plan = plan_record(wh).plan()
    findings = {(r["broker_id"], r["log_dir"], r["dir_name"]): r
                for r in demo.store().read_rows("findings", {"run_id": plan.run_id})}
    ev = plan_evidence(wh, plan)
    assert ev["in_findings"].all()
    for row in ev.itertuples():
        src = findings[(row.broker_id, row.log_dir, row.dir_name)]
        assert row.controller_topic_id == src["controller_topic_id"]
        assert row.metadata_offset == src["metadata_offset"]
        assert row.grace_days == pytest.approx((src["detected_at"] - src["garbage_since"]).total_seconds() / 86400)
        assert row.evidence["image"]["metadata_offset"] == src["metadata_offset"]


def test_diff_against_the_previous_plan(demo, wh) -> None:
    record = plan_record(wh)
    previous = previous_plan(wh, record.plan())
    assert previous is not None and previous.plan_id == demo.plans[0]
    diff = plan_diff(record.plan(), previous.plan())
    removed = diff[diff["change"] == "removed"]
    assert removed[["broker_id", "log_dir", "dir_name"]].apply(tuple, axis=1).tolist() == [demo.removed_dir]
    assert (diff["change"] == "same").sum() == len(record.plan().items)
    first = plan_diff(previous.plan(), None)
    assert set(first["change"]) == {"added"}
    assert previous_plan(wh, previous.plan()) is None


def test_policy_checks_name_each_broken_rule(wh) -> None:
    record = plan_record(wh)
    plan = record.plan()
    per_broker = Counter(i.broker_id for i in plan.items)
    a_topic = plan.items[0].topic
    policy = PolicyConfig(max_broker_items=max(per_broker.values()) - 1, max_plan_items=len(plan.items),
                          protected_topic_patterns=(a_topic.replace(".", r"\."),))
    checks = policy_checks(plan, policy, now=plan.created_at, detect_grace_ms=86_400_000, approver=plan.created_by)
    status = dict(zip(checks["rule"], checks["status"], strict=True))
    assert status["max_broker_items"] == "fail"
    assert status["max_plan_items"] == "pass"
    assert status["max_plan_bytes"] == "not_configured"
    assert status["protected_topic"] == "fail"
    assert status["approver"] == "fail"
    assert status["plan_expiry"] == "pass"
    assert status["approvals_required"] == "pending"
    later = policy_checks(plan, PolicyConfig(), now=plan.created_at + timedelta(days=30), approver="someone-else")
    status = dict(zip(later["rule"], later["status"], strict=True))
    assert status["plan_expiry"] == "fail" and status["approver"] == "pass" and status["protected_topic"] == "pass"
    summary = review_summary(record, plan_diff(plan, None), checks)
    assert summary["failed_rules"] == ["approver", "max_broker_items", "protected_topic"]
    assert summary["added"] == len(plan.items) and summary["bytes"] == plan.total_bytes


def test_printed_approve_command_works_and_review_changes_nothing(demo, tmp_path: Path) -> None:
    copy = tmp_path / "warehouse"
    shutil.copytree(demo.warehouse, copy)
    wh = open_warehouse(str(copy))
    record = plan_record(wh)
    keys = Keyring(tmp_path / "keys")  # the command signs with the approver's key
    commands = decision_commands(record, wh.root, approver="alice", key=str(keys.key("alice")))
    assert approval.get_plan(wh.store, record.plan_id).status == "proposed"  # building the review approved nothing
    argv = shlex.split(commands["approve"])
    assert argv[:4] == ["logdir-gc", "plans", "approve", record.plan_id]
    with pytest.raises(SystemExit) as exit_info:
        main(argv[1:])
    assert exit_info.value.code == 0
    assert approval.get_plan(wh.store, record.plan_id).status == "approved"
    reject = shlex.split(decision_commands(record, wh.root, approver="bob")["reject"])
    assert reject[:4] == ["logdir-gc", "plans", "reject", record.plan_id] and "--reason" in reject


def test_the_review_notebook_shows_names_escaped() -> None:
    """A name with ESC, CR and a bidi override reaches the reviewer's table escaped; numbers stay numbers."""
    import pandas as pd

    from pipelines.analytics import shown_frame

    hostile = "orders\x1b[2K\r\u202eevil"
    df = pd.DataFrame({"topic": [hostile, "plain"], "bytes": [10, 20], "names": [[hostile], []]})
    out = shown_frame(df)
    assert out["topic"].tolist() == ["orders\\x1b[2K\\x0d\\u202eevil", "plain"]
    assert out["names"].tolist() == [["orders\\x1b[2K\\x0d\\u202eevil"], []]
    assert out["bytes"].tolist() == [10, 20] and df["topic"][0] == hostile  # the input is left as it was
    generator = (Path(__file__).resolve().parents[2] / "notebooks" / "make_notebooks.py").read_text()
    assert 'pd.set_option(\\"display.html.use_mathjax\\", False)' in generator
