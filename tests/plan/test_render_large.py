"""A plan's Markdown stays readable at fleet size: summarised above ``MARKDOWN_ITEMS`` items, in full below."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipelines.plan import render
from pipelines.plan.model import GcPlan, PlanItem


def _plan(n: int) -> GcPlan:
    items = tuple(
        PlanItem.model_validate({"item_id": f"{i:016x}", "broker_id": i % 7, "log_dir": f"/d{i % 2}",
                                 "dir_name": f"gone-{i:06d}", "class": "deleted_topic", "bytes": 1000 + i,
                                 "fingerprint": "f" * 64})
        for i in range(n)
    )
    items = tuple(sorted(items, key=lambda i: (i.broker_id, i.log_dir, i.dir_name)))
    return GcPlan(plan_id="p", cluster="c", created_at=datetime(2026, 1, 1, tzinfo=timezone.utc), created_by="t",
                  run_id="r", items=items).with_hash()  # fmt: skip


@pytest.mark.parametrize("n", [5, 40])
def test_markdown_lists_every_item_up_to_the_limit_and_summarises_above(n: int, monkeypatch: pytest.MonkeyPatch
                                                                        ) -> None:  # fmt: skip
    monkeypatch.setattr(render, "MARKDOWN_ITEMS", 10)
    plan = _plan(n)
    md = render.render_plan(plan)
    listed = [line for line in md.splitlines() if line.startswith("| `") and "gone-" in line]
    assert len(listed) == min(n, 10)
    assert [line.split("`")[3] for line in listed] == [i.dir_name for i in plan.items[: len(listed)]]
    assert (f"every item is in `{plan.plan_id}.json`" in md) == (n > 10)
    assert ("## Per log dir" in md) == (n > 10)
    assert f"- {n} directories" in md
    per_broker = [line for line in md.splitlines() if line.startswith("| ") and line.count("|") == 4
                  and line.split("|")[1].strip().isdigit()]  # fmt: skip
    assert sum(int(line.split("|")[2]) for line in per_broker) == n  # the summary counts every item
