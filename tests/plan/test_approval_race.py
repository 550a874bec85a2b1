"""Racing decisions on one plan: exactly one wins, the loser is refused, the audit shows both attempts."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

from plan_factory import T0, plan

from pipelines.config.models import PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.plan import approval
from pipelines.tables.base import TableStore

NOW = T0 + timedelta(hours=1)
ROOT = Path(__file__).resolve().parents[2]


def _race(store: TableStore, plan_id: str, calls: dict[str, object]) -> dict[str, object]:
    barrier = threading.Barrier(len(calls))
    outcome: dict[str, object] = {}

    def run(name: str, fn) -> None:
        barrier.wait()
        try:
            outcome[name] = fn()
        except PolicyViolation as exc:
            outcome[name] = exc

    threads = [threading.Thread(target=run, args=(n, f)) for n, f in calls.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcome


def test_approve_vs_reject_exactly_one_wins(tmp_path: Path) -> None:
    from pipelines.tables.rust_engine import RustTableStore

    for round_ in range(3):
        store: TableStore = RustTableStore(str(tmp_path / f"wh{round_}"))
        approval.register_plan(store, plan(), actor="d", policy=PolicyConfig(), now=T0)
        outcome = _race(store, "p1", {
            "approve": lambda s=store: approval.approve(s, "p1", by="bob", policy=PolicyConfig(), now=NOW),
            "reject": lambda s=store: approval.reject(s, "p1", by="carol", reason="no", now=NOW),
        })
        winners = [k for k, v in outcome.items() if not isinstance(v, BaseException)]
        assert len(winners) == 1, outcome
        loser = "reject" if winners == ["approve"] else "approve"
        assert "[state_machine]" in str(outcome[loser])
        final = approval.get_plan(store, "p1").status
        assert final == {"approve": "approved", "reject": "rejected"}[winners[0]]
        acts = sorted(r["action"] for r in approval.audit_rows(store, "p1"))
        assert acts == sorted(["register", winners[0], f"{loser}_refused"])


def test_concurrent_approvals_are_both_kept_on_delta(tmp_path: Path) -> None:
    """Two approvers at once with two approvals required: neither approval may overwrite the other."""
    from pipelines.tables.rust_engine import RustTableStore

    policy = PolicyConfig(approvals_required=2)
    store = RustTableStore(str(tmp_path / "wh"))
    approval.register_plan(store, plan(), actor="d", policy=policy, now=T0)
    outcome = _race(store, "p1", {
        "bob": lambda: approval.approve(store, "p1", by="bob", policy=policy, now=NOW),
        "carol": lambda: approval.approve(store, "p1", by="carol", policy=policy, now=NOW),
    })
    assert not any(isinstance(v, BaseException) for v in outcome.values()), outcome
    rec = approval.get_plan(store, "p1")
    assert rec.status == "approved" and sorted(rec.approvals) == ["bob", "carol"]


_RACER = """
import sys
from datetime import datetime, timezone
from pipelines.config.models import PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.plan import approval
from pipelines.tables.rust_engine import RustTableStore
store, action, go = RustTableStore(sys.argv[1]), sys.argv[2], sys.argv[3]
import os, time
while not os.path.exists(go):
    time.sleep(0.001)
try:
    if action == "approve":
        approval.approve(store, "p1", by="bob", policy=PolicyConfig())
    else:
        approval.reject(store, "p1", by="carol", reason="no")
    print("won")
except PolicyViolation as exc:
    print("refused", exc)
"""


def test_approve_vs_reject_in_two_processes(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from pipelines.tables.rust_engine import RustTableStore

    wh = str(tmp_path / "wh")
    store = RustTableStore(wh)
    approval.register_plan(store, plan(created_at=datetime.now(timezone.utc)), actor="d", policy=PolicyConfig())
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, wh, a, str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for a in ("approve", "reject")]
    go.touch()
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert sorted(o.split()[0] for o in outs) == ["refused", "won"], outs
    acts = [r["action"] for r in approval.audit_rows(store, "p1")]
    assert len(acts) == 3 and sum(a.endswith("_refused") for a in acts) == 1
