"""The review shows each approval's signature status, as a broker host trusting the given allowed_signers would
judge it, in the library and in the executed review notebook."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "signing"))

from ssh_keys import Keyring, require_openssh

from pipelines.analytics import open_warehouse, plan_record, signature_status
from pipelines.config.models import PolicyConfig
from pipelines.signing.records import store_signature
from pipelines.signing.signer import sign
from pipelines.signing.workflow import approve_signed, statement_for


@pytest.fixture
def signed_copy(demo, tmp_path: Path):
    """A copy of the demo warehouse whose newest plan alice approved (signed, trusted), mallory signed with a key
    nobody trusts, and carol 'approved' by writing the table."""
    require_openssh()
    copy = tmp_path / "warehouse"
    shutil.copytree(demo.warehouse, copy)
    wh = open_warehouse(str(copy))
    record = plan_record(wh)
    keys = Keyring(tmp_path / "trust")
    keys.key("alice")
    keys.allow("alice", "alice")
    approve_signed(wh.store, record.plan_id, by="alice", policy=PolicyConfig(), key=keys.key("alice"))
    st = statement_for(record.plan(), "approve", "mallory", PolicyConfig(), now=datetime.now(timezone.utc))
    store_signature(wh.store, record.plan_id, datetime.now(timezone.utc), sign(st, key=keys.key("mallory")))
    wh.store.update("gc_plans", {"plan_id": record.plan_id}, {"approvals": ["alice", "carol"]})
    return wh, plan_record(wh, record.plan_id), keys


def test_each_approval_has_its_signature_status(signed_copy) -> None:
    wh, record, keys = signed_copy
    checked = signature_status(wh, record, allowed_signers=str(keys.allowed_signers)).set_index("signer")
    assert checked.loc["alice", "status"] == "counted" and checked.loc["alice", "brokers"]
    assert (checked.loc["mallory", "status"], checked.loc["mallory", "rule"]) == ("not_counted", "signer_not_allowed")
    assert checked.loc["carol", "status"] == "unsigned"
    unchecked = signature_status(wh, record).set_index("signer")  # no allowed_signers known here
    assert list(unchecked["status"]) == ["unchecked", "unchecked", "unsigned"]


def test_a_signature_not_over_its_statement_shows_as_invalid_even_unchecked(signed_copy) -> None:
    wh, record, keys = signed_copy
    st = statement_for(record.plan(), "approve", "dave", PolicyConfig(), now=datetime.now(timezone.utc))
    good = sign(st, key=keys.key("dave"))
    forged = dataclasses.replace(good, statement=dataclasses.replace(st, signer="dave2"))  # dave's signature
    store_signature(wh.store, record.plan_id, datetime.now(timezone.utc), forged)
    unchecked = signature_status(wh, record).set_index("signer")
    assert (unchecked.loc["dave2", "status"], unchecked.loc["dave2", "rule"]) == ("not_counted", "signature_invalid")


def test_the_review_notebook_shows_signature_status(signed_copy, tmp_path: Path) -> None:
    pytest.importorskip("nbclient")
    from tests.analytics.notebook_runner import run_notebook

    wh, record, keys = signed_copy
    out = tmp_path / "review.json"
    key = str(keys.key("bob"))
    run_notebook(Path(__file__).resolve().parents[2] / "notebooks" / "gc_plan_review.ipynb",
                 {"warehouse": wh.root, "cluster": "demo", "plan_id": record.plan_id, "approver": "bob",
                  "config_path": None, "allowed_signers": str(keys.allowed_signers), "signing_key": key,
                  "figures_out": str(out)})
    figures = json.loads(out.read_text())
    assert {s["signer"]: s["status"] for s in figures["signatures"]} == {
        "alice": "counted", "mallory": "not_counted", "carol": "unsigned"}
    assert figures["commands"]["approve"].endswith(f"--key {key}")
