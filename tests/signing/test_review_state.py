"""The review state comes from signatures (issue 29 point 3).

With ``executor.require_signatures`` on, ``plans list``/``show``, the state machine, the review notebook helper and
the metrics count a decision only when its signature verifies under the REVIEWERS' ``allowed_signers``
(``signing.allowed_signers``). The forgeries are written the way anyone who can write the warehouse would write
them: straight into Delta with ``deltalake``, or through the workflow with a key nobody lists for that name. Real
``ssh-keygen`` keys and signatures.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from deltalake import DeltaTable, write_deltalake

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import build_world, make_plan
from ssh_keys import Keyring, require_openssh

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.config.load import load_config
from pipelines.metrics import catalog as m
from pipelines.metrics.families import Families
from pipelines.metrics.run_metrics import plan_state_figures
from pipelines.plan import approval
from pipelines.signing import review_state
from pipelines.signing.workflow import propose_signed
from pipelines.tables.rust_engine import RustTableStore


@pytest.fixture(autouse=True)
def _openssh() -> None:
    require_openssh()


@dataclass
class Review:
    """A warehouse with plan ``plan-1`` proposed (signed) by ``detector``; reviewers' keys and config."""

    store: RustTableStore
    keys: Keyring
    config: Path
    plan: Any
    log_dir: Path

    @property
    def c(self) -> tuple[str, str]:
        return ("--config", str(self.config))


def _review(tmp_path: Path, *, required: int = 1, signatures: bool = True) -> Review:
    w = build_world(tmp_path, approve_plan=False, signed=signatures)
    keys = Keyring(tmp_path / "reviewers")  # the REVIEWERS' trust, not the broker host's
    for name in ("alice", "bob", "detector", "mallory"):
        keys.key(name)
        keys.allow(name, name)
    keys.key("eve")  # a key nobody lists
    data = w.config.model_dump(mode="json")
    data["policy"]["approvals_required"] = required
    data["signing"]["allowed_signers"] = str(keys.allowed_signers)
    cfg = tmp_path / "reviewer.yaml"
    cfg.write_text(yaml.safe_dump(data))
    config = load_config(cfg)
    approval.register_plan(w.store, w.plan, actor="detector", policy=config.policy)
    if signatures:
        propose_signed(w.store, "plan-1", policy=config.policy, key=keys.key("detector"))
    return Review(w.store, keys, cfg, w.plan, w.log_dir)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def listed(capsys: pytest.CaptureFixture[str], r: Review) -> dict[str, dict[str, Any]]:
    code, out, _ = run(capsys, "plans", "list", *r.c, "--json")
    assert code == 0
    return {p["plan_id"]: p for p in json.loads(out)}


# -- forging, as anyone who can write the warehouse can ---------------------------------------------------------

def forge_audit(store: RustTableStore, plan_id: str, actor: str, action: str, content_hash: str,
                to_status: str | None = "approved") -> None:
    table = DeltaTable(store.table_uri("gc_plan_audit"))
    schema = pa.schema(table.schema().to_arrow())
    row = {"plan_id": plan_id, "at": datetime.now(timezone.utc), "actor": actor, "action": action,
           "from_status": "proposed", "to_status": to_status, "comment": "", "content_hash": content_hash}
    write_deltalake(table, pa.Table.from_pylist([row], schema=schema), mode="append")


def forge_status(store: RustTableStore, plan_id: str, status: str, approvals: list[str]) -> None:
    names = ", ".join(f"'{a}'" for a in approvals)
    DeltaTable(store.table_uri("gc_plans")).update(
        updates={"status": f"'{status}'", "approvals": f"make_array({names})"}, predicate=f"plan_id = '{plan_id}'")


# -- (a) forged audit rows and a forged gc_plans status --------------------------------------------------------

def test_forged_rows_do_not_make_a_plan_approved_nor_block_a_signed_approval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _review(tmp_path)
    h = r.plan.content_hash
    forge_audit(r.store, "plan-1", "mallory", "approve", h)
    forge_audit(r.store, "plan-1", "carol", "approve", h)
    forge_audit(r.store, "plan-1", "alice", "propose", h, to_status="proposed")  # "alice is an author": blocks her?
    forge_status(r.store, "plan-1", "approved", ["mallory", "carol"])
    assert approval.get_plan(r.store, "plan-1").status == "approved"  # the forgery is in the warehouse

    shown = listed(capsys, r)["plan-1"]
    assert (shown["status"], shown["approvals"], shown["recorded_status"]) == ("proposed", [], "approved")
    assert shown["review_state_from"] == "signatures"
    assert {(u["action"], u["actor"]) for u in shown["unverified_decisions"]} >= {("approve", "mallory"),
                                                                                 ("approve", "carol")}
    code, out, _ = run(capsys, "plans", "list", *r.c)
    assert code == 0 and out.split()[1] == "proposed" and "unverified: recorded approved" in out
    code, out, _ = run(capsys, "plans", "show", "plan-1", *r.c, "--json")
    assert json.loads(out)["status"] == "proposed" and json.loads(out)["approvals"] == []
    code, out, _ = run(capsys, "plans", "show", "plan-1", *r.c)
    assert "- status: **proposed**" in out and "- recorded status: approved (unverified)" in out

    code, out, err = run(capsys, "plans", "approve", "plan-1", "--by", "alice", "--key", str(r.keys.key("alice")),
                         *r.c)
    assert code == 0, err
    assert out.startswith("plan-1: approved (approvals: alice)")
    shown = listed(capsys, r)["plan-1"]
    assert (shown["status"], shown["approvals"]) == ("approved", ["alice"])


def test_a_forged_rejection_neither_shows_rejected_nor_blocks_approval(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    r = _review(tmp_path)
    forge_audit(r.store, "plan-1", "carol", "reject", r.plan.content_hash, to_status="rejected")
    forge_status(r.store, "plan-1", "rejected", [])
    assert listed(capsys, r)["plan-1"]["status"] == "proposed"
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "bob", "--key", str(r.keys.key("bob")), *r.c)
    assert code == 0, err
    assert listed(capsys, r)["plan-1"]["status"] == "approved"
    # a real, signed rejection is a veto however the row is then rewritten
    r2 = _review(tmp_path / "second")
    code, _, err = run(capsys, "plans", "reject", "plan-1", "--by", "bob", "--reason", "no",
                       "--key", str(r2.keys.key("bob")), *r2.c)
    assert code == 0, err
    forge_status(r2.store, "plan-1", "proposed", [])
    assert listed(capsys, r2)["plan-1"]["status"] == "rejected"


# -- (b) one valid approval and one by a key that is not bob's, claiming bob -------------------------------------

@pytest.mark.parametrize("impostor", ["eve", "mallory"])  # a key nobody lists; mallory's key, listed for mallory
def test_an_approval_claimed_by_a_key_that_is_not_the_principals_does_not_count(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], impostor: str) -> None:
    r = _review(tmp_path, required=2)
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "alice", "--key", str(r.keys.key("alice")), *r.c)
    assert code == 0, err
    code, out, err = run(capsys, "plans", "approve", "plan-1", "--by", "bob", "--key", str(r.keys.key(impostor)),
                         *r.c)
    assert code == 0 and "bob's signature does not verify" in err and "[signer_not_allowed]" in err
    # recorded as the workflow records any signed approval (the broker hosts' files decide), shown unverified
    assert out.startswith("plan-1: proposed (recorded approved: unverified) (approvals: alice)")
    shown = listed(capsys, r)["plan-1"]
    assert (shown["status"], shown["approvals"]) == ("proposed", ["alice"])
    assert any(u["actor"] == "bob" and "[signer_not_allowed]" in u["reason"] for u in shown["unverified_decisions"])

    code, out, err = run(capsys, "plans", "approve", "plan-1", "--by", "bob", "--key", str(r.keys.key("bob")), *r.c)
    assert code == 0, err
    shown = listed(capsys, r)["plan-1"]
    assert (shown["status"], shown["approvals"]) == ("approved", ["alice", "bob"])


# -- (c) the review notebook helper and the metrics agree with plans list ----------------------------------------

def test_the_review_notebook_and_the_metrics_agree_with_plans_list(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    from pipelines.analytics import open_warehouse, plan_record, review_summary
    from pipelines.analytics import review_state as notebook_state

    r = _review(tmp_path)
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "alice", "--key", str(r.keys.key("alice")), *r.c)
    assert code == 0, err
    config = load_config(r.config)
    newer = make_plan(r.log_dir, (), plan_id="plan-2", items=r.plan.items).model_copy(
        update={"created_at": r.plan.created_at + timedelta(minutes=1)}).with_hash()  # the newest: not superseded
    approval.register_plan(r.store, newer, actor="detector", policy=config.policy)
    forge_audit(r.store, "plan-2", "mallory", "approve", newer.content_hash, to_status="applied")
    forge_status(r.store, "plan-2", "applied", ["mallory"])

    plans = listed(capsys, r)
    assert (plans["plan-1"]["status"], plans["plan-2"]["status"]) == ("approved", "proposed")
    wh = open_warehouse(str(config.warehouse), "c1")
    empty = pd.DataFrame(columns=["change"]), pd.DataFrame(columns=["rule", "status"])
    for plan_id, shown in plans.items():
        record = plan_record(wh, plan_id)
        state = notebook_state(wh, record, config_path=str(r.config))
        assert {k: state[k] for k in ("status", "approvals", "recorded_status", "unverified_decisions")} == {
            k: shown[k] for k in ("status", "approvals", "recorded_status", "unverified_decisions")}
        summary = review_summary(record, *empty, state)
        assert (summary["status"], summary["approvals"]) == (shown["status"], shown["approvals"])

    families = Families()
    plan_state_figures(families, config)
    per_status = {key[1]: value for key, value in families.samples(m.PLANS).items()}
    assert {s: n for s, n in per_status.items() if n} == Counter(p["status"] for p in plans.values())
    unverified = sum(len(p["unverified_decisions"]) for p in plans.values())
    assert unverified > 0 and families.samples(m.UNVERIFIED_DECISIONS)[("c1",)] == unverified


# -- require_signatures off: as before ---------------------------------------------------------------------------

def test_without_required_signatures_the_recorded_state_is_the_state(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    r = _review(tmp_path, signatures=False)
    forge_status(r.store, "plan-1", "approved", ["mallory"])
    shown = listed(capsys, r)["plan-1"]
    assert (shown["status"], shown["approvals"], shown["review_state_from"]) == ("approved", ["mallory"], "recorded")
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "alice", *r.c)
    assert code == exit_codes.POLICY and "[state_machine]" in err


# -- cost: each signature verified once per content, none for plans nobody decided --------------------------------

def test_signatures_are_verified_once_and_only_when_a_decision_needs_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    r = _review(tmp_path)
    calls: list[str] = []
    real = review_state.verify_signature

    def counting(*args: Any) -> Any:
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(review_state, "verify_signature", counting)
    review_state._CHECKS.clear()
    listed(capsys, r)
    assert calls == []  # a proposal alone decides nothing: no ssh-keygen
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "alice", "--key", str(r.keys.key("alice")), *r.c)
    assert code == 0, err
    calls.clear()
    review_state._CHECKS.clear()
    for _ in range(3):
        assert listed(capsys, r)["plan-1"]["status"] == "approved"
    # alice's approval, once, not once per listing; detector's proposal shares neither her name nor her key, so
    # whether it verifies changes nothing here
    assert calls == ["alice"]
