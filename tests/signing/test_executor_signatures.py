"""The executor's authorisation from signatures (``executor.require_signatures: true``): every way a stored
approval can lie is refused with exit 5 and a one-line reason naming its rule, through ``apply_plan``.

The world is a real broker host (``exec_world``), a real delta-rs warehouse, real ``ssh-keygen`` keys. An
"attacker" here can write every warehouse table: status, approvals, audit rows and signature rows.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import GARBAGE, LIVE, World, approve, build_world, item_for, keyring_of, make_plan
from ssh_keys import require_openssh

from pipelines.errors import PolicyViolation
from pipelines.execute.apply import apply_plan
from pipelines.plan import approval
from pipelines.plan.model import GcPlan
from pipelines.signing.records import store_signature
from pipelines.signing.signer import SignedStatement, sign
from pipelines.signing.workflow import approve_signed, propose_signed, reject_signed, statement_for

NOW = datetime.now(timezone.utc)


@pytest.fixture(autouse=True)
def _openssh() -> None:
    require_openssh()


def _refused(w: World, rule: str, plan_id: str = "plan-1") -> str:
    with pytest.raises(PolicyViolation) as exc:
        apply_plan(w.config, w.store, plan_id, 1, execute=True)
    message = str(exc.value)
    assert message.startswith(f"[{rule}] ") and "\n" not in message, message
    assert all(p.exists() for p in w.garbage.values())
    return message


def _applies(w: World, plan_id: str = "plan-1") -> None:
    report = apply_plan(w.config, w.store, plan_id, 1, execute=True)
    assert report.count("quarantined") == len(w.garbage) and report.status == "applied"


def _registered(tmp_path: Path, **world) -> World:
    """The world's plan registered and proposed by its author ``detector`` (signed), not approved."""
    w = build_world(tmp_path, approve_plan=False, **world)
    approval.register_plan(w.store, w.plan, actor="detector", policy=w.config.policy)
    propose_signed(w.store, "plan-1", policy=w.config.policy, key=keyring_of(w.config).key("detector"))
    return w


def _forged_approval(w: World, plan: GcPlan | None = None, *, by: str = "reviewer") -> None:
    """What a warehouse writer can do without any key: an approved status with audited approvals."""
    plan = plan or w.plan
    approval.approve(w.store, plan.plan_id, by=by, policy=w.config.policy)


def _store(w: World, signed: SignedStatement, plan_id: str = "plan-1") -> None:
    store_signature(w.store, plan_id, datetime.now(timezone.utc), signed)


def _signed(w: World, *, by: str = "reviewer", key: str | None = None, action: str = "approve",
            plan: GcPlan | None = None, **changes) -> SignedStatement:
    """``by``'s statement about ``plan`` (default the world's), with ``changes`` to its fields, signed with the key
    of ``key`` (default ``by``'s own)."""
    st = statement_for(plan or w.plan, action, by, w.config.policy, now=NOW)
    return sign(dataclasses.replace(st, **changes), key=keyring_of(w.config).key(key or by))


# --- the accepted path ------------------------------------------------------------------------------------------

def test_a_signed_approval_by_a_trusted_key_lets_the_executor_apply(tmp_path: Path) -> None:
    w = build_world(tmp_path)  # approved with reviewer's signature
    _applies(w)


def test_two_required_approvals_from_an_ed25519_and_an_rsa_key(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    w.config = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"approvals_required": 2})})
    keys = keyring_of(w.config)
    keys.key("carol", "rsa")
    keys.allow("carol", "carol")
    approve_signed(w.store, "plan-1", by="reviewer", policy=w.config.policy, key=keys.key("reviewer"))
    _refused(w, "not_approved")  # one of two: the workflow keeps it proposed
    approve_signed(w.store, "plan-1", by="carol", policy=w.config.policy, key=keys.key("carol"))
    _applies(w)


# --- point 3: each lie refused, naming its rule -----------------------------------------------------------------

def test_forged_audit_rows_without_a_signature_are_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)  # status approved, approvals [reviewer], an audited approve row: no signature
    assert "0 of 1" in _refused(w, "approvals_required")


def test_a_signature_that_is_not_ssh_signature_of_the_statement_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    good = _signed(w)
    other = _signed(w, signed_at=NOW.replace(microsecond=0) - timedelta(seconds=5))
    _store(w, dataclasses.replace(good, signature=other.signature))  # a real signature, of other bytes
    _refused(w, "signature_invalid")


def test_a_signature_made_for_another_plan_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    other = make_plan(w.log_dir, GARBAGE[:1], plan_id="plan-2")
    _store(w, _signed(w, plan=other))  # reviewer really approved plan-2; copied under plan-1
    _refused(w, "signature_plan")


def test_a_signature_replayed_after_the_plan_changed_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    approve_signed(w.store, "plan-1", by="reviewer", policy=w.config.policy, key=keyring_of(w.config).key("reviewer"))
    # the plan id is re-registered with one more item (a live replica); the old signature row stays, status forged
    changed = make_plan(w.log_dir, (), items=(*w.plan.items, item_for(w.log_dir, LIVE[0])), plan_id="plan-1")
    approval.register_plan(w.store, changed, actor="detector", policy=w.config.policy)
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["reviewer"]})
    _refused(w, "signature_content_hash")


def test_a_signature_for_another_cluster_name_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    _store(w, _signed(w, cluster="c2"))
    _refused(w, "signature_cluster")


def test_a_host_of_another_cluster_name_refuses_the_signature(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    w.config = w.config.model_copy(update={"cluster": "staging"})
    _refused(w, "signature_cluster")


def test_a_signature_for_another_cluster_id_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    _store(w, _signed(w, cluster_id="Zm9yZWlnbi1jbHVzdGVyMQ"))
    _refused(w, "signature_cluster_id")


def test_a_plan_and_signature_of_another_cluster_id_are_refused_before_the_disk(tmp_path: Path) -> None:
    w = build_world(tmp_path, approve_plan=False)
    foreign = make_plan(w.log_dir, GARBAGE, plan_id="foreign", cluster_id="Zm9yZWlnbi1jbHVzdGVyMQ")
    approve(w.store, foreign, w.config)  # honestly signed, for the cluster id the plan names
    assert "this host is cluster.id" in _refused(w, "signature_cluster_id", "foreign")


def test_a_signature_for_another_broker_set_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    _store(w, _signed(w, brokers=(2, 3)))
    assert "not broker 1" in _refused(w, "signature_brokers")


def test_an_expired_approval_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    _store(w, _signed(w, expires_at=NOW.replace(microsecond=0) - timedelta(minutes=1)))
    _refused(w, "approval_expired")


@pytest.mark.parametrize(("option", "says"), [
    ('valid-before="20200101Z"', "valid-before 20200101Z"),
    (f'valid-after="{(NOW + timedelta(days=2)):%Y%m%d}Z"', "valid only after"),
])
def test_a_key_outside_its_validity_is_refused(tmp_path: Path, option: str, says: str) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("dave")
    keys.allow("dave", "dave", option)
    _forged_approval(w, by="dave")
    _store(w, _signed(w, by="dave"))
    assert says in _refused(w, "key_validity")


def test_key_validity_is_judged_at_the_time_of_the_apply(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("gina")
    keys.allow("gina", "gina", f'valid-before="{(NOW + timedelta(days=1)):%Y%m%d%H%M%S}Z"')
    _forged_approval(w, by="gina")
    _store(w, _signed(w, by="gina"))
    assert apply_plan(w.config, w.store, "plan-1", 1).count("would_quarantine") == 3  # valid today
    with pytest.raises(PolicyViolation, match=r"^\[key_validity\]"):
        apply_plan(w.config, w.store, "plan-1", 1, now=NOW + timedelta(days=2))


def test_a_revoked_key_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    _applies_dry = apply_plan(w.config, w.store, "plan-1", 1)  # accepted before the revocation
    assert _applies_dry.count("would_quarantine") == 3
    revoked = keyring_of(w.config).revoke("reviewer")
    w.config = w.config.model_copy(update={"executor": w.config.executor.model_copy(
        update={"revoked_keys": str(revoked)})})
    _refused(w, "key_revoked")


def test_a_signer_not_in_allowed_signers_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keyring_of(w.config).key("mallory")  # a real key, never listed
    _forged_approval(w, by="mallory")
    _store(w, _signed(w, by="mallory"))
    assert "is not in" in _refused(w, "signer_not_allowed")


def test_a_listed_key_signing_under_another_principal_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w, by="alice")
    _store(w, _signed(w, by="alice", key="reviewer"))  # reviewer's key, claiming to be alice
    assert "not for alice" in _refused(w, "signer_not_allowed")


def test_the_principal_checked_is_the_statements_never_the_rows(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w, by="alice")
    signed = _signed(w, by="alice", key="reviewer")  # reviewer's key, a statement naming alice
    w.store.append("gc_plan_signatures", [{
        "plan_id": "plan-1", "at": NOW, "action": "approve", "signer": "reviewer",  # the row claims reviewer
        "content_hash": w.plan.content_hash, "key_fingerprint": signed.key_fingerprint, "statement": signed.text,
        "signature": signed.signature}])
    assert "not for alice" in _refused(w, "signer_not_allowed")


def test_the_authors_own_signed_approval_is_not_counted(tmp_path: Path) -> None:
    w = _registered(tmp_path)  # created_by detector, whose key is trusted
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["detector"]})
    _store(w, _signed(w, by="detector"))
    _refused(w, "approver_differs_from_author")


def test_whoever_signed_the_proposal_is_an_author_by_name_and_by_key(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    propose_signed(w.store, "plan-1", policy=w.config.policy, key=keys.key("detector"))
    keys.allow("detector-alias", "detector")  # the author's key listed under a second name
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["detector-alias"]})
    _store(w, _signed(w, by="detector-alias", key="detector"))
    _refused(w, "approver_differs_from_author")


def test_the_authors_name_never_counts_with_another_key(tmp_path: Path) -> None:
    w = _registered(tmp_path)  # detector proposed, with detector's key
    keys = keyring_of(w.config)
    keys.key("detector-laptop")
    keys.allow("detector", "detector-laptop")  # a second key of the author's principal
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["detector"]})
    _store(w, _signed(w, by="detector", key="detector-laptop"))
    _refused(w, "approver_differs_from_author")


def test_one_principal_signing_twice_counts_once(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    w.config = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"approvals_required": 2})})
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["reviewer", "bob"]})
    _store(w, _signed(w))
    _store(w, _signed(w, signed_at=NOW.replace(microsecond=0) + timedelta(seconds=1)))
    assert "1 of 2" in _refused(w, "distinct_approvers")


def test_one_principal_with_two_keys_counts_once(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    w.config = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"approvals_required": 2})})
    keys = keyring_of(w.config)
    keys.key("reviewer-laptop")
    keys.allow("reviewer", "reviewer-laptop")  # reviewer's second key
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["reviewer"]})
    _store(w, _signed(w))
    _store(w, _signed(w, key="reviewer-laptop", signed_at=NOW.replace(microsecond=0) + timedelta(seconds=1)))
    assert "1 of 2" in _refused(w, "distinct_approvers")


def test_one_key_listed_for_two_principals_counts_once(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    w.config = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"approvals_required": 2})})
    keyring_of(w.config).allow("bob", "reviewer")  # the same key for reviewer and bob
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["reviewer", "bob"]})
    _store(w, _signed(w))
    _store(w, _signed(w, by="bob", key="reviewer"))
    _refused(w, "distinct_approvers")


def test_too_few_approvals_for_the_host_policy_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)  # the workflow (policy 1) approved it with one signature
    w.config = w.config.model_copy(update={"policy": w.config.policy.model_copy(update={"approvals_required": 2})})
    assert "1 of 2" in _refused(w, "approvals_required")


def test_a_signed_rejection_vetoes_even_a_forged_approval(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("bob")
    keys.allow("bob", "bob")
    reject_signed(w.store, "plan-1", by="bob", reason="wrong topic", policy=w.config.policy, key=keys.key("bob"))
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": ["reviewer"]})
    _store(w, _signed(w))
    assert "rejected by bob" in _refused(w, "rejected")


def test_a_signature_under_another_namespace_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    good = _signed(w)
    key = str(keyring_of(w.config).key("reviewer"))
    git = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "git", "-f", key], input=good.statement.to_bytes(),
                         capture_output=True, check=True).stdout.decode()
    _store(w, dataclasses.replace(good, signature=git))
    _refused(w, "signature_namespace")


def test_a_key_whose_namespaces_exclude_ours_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("frank")
    keys.allow("frank", "frank", 'namespaces="git,file"')
    _forged_approval(w, by="frank")
    _store(w, _signed(w, by="frank"))
    _refused(w, "signature_namespace")


def test_an_edited_statement_is_refused(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    _forged_approval(w)
    good = _signed(w)
    w.store.append("gc_plan_signatures", [{
        "plan_id": "plan-1", "at": NOW, "action": "approve", "signer": "reviewer", "content_hash": "x",
        "key_fingerprint": good.key_fingerprint, "statement": good.text.replace("brokers=1", "brokers=1 "),
        "signature": good.signature}])
    _refused(w, "statement_invalid")


def test_a_plan_without_cluster_id_cannot_be_approved_by_signature(tmp_path: Path) -> None:
    w = build_world(tmp_path, approve_plan=False)
    with pytest.raises(PolicyViolation, match=r"^\[plan_cluster_id\]"):
        approve(w.store, make_plan(w.log_dir, GARBAGE, plan_id="unbound", cluster_id=None), w.config)


# --- point 5: unsigned mode only when configured, warned at every apply ------------------------------------------

def test_unsigned_mode_warns_at_every_apply(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    w = build_world(tmp_path, signed=False)
    with caplog.at_level(logging.WARNING, logger="pipelines.execute.plan_source"):
        apply_plan(w.config, w.store, "plan-1", 1)
        apply_plan(w.config, w.store, "plan-1", 1)
    warnings = [r.getMessage() for r in caplog.records if "require_signatures is false" in r.getMessage()]
    assert len(warnings) == 2


def test_signatures_are_required_by_default_and_need_allowed_signers(tmp_path: Path) -> None:
    from pipelines.config.models import AppConfig
    from pipelines.errors import ConfigError

    w = build_world(tmp_path)
    assert AppConfig.model_validate({"cluster": "c", "warehouse": "w"}).executor.require_signatures is True
    bare = w.config.model_copy(update={"executor": w.config.executor.model_copy(update={"allowed_signers": None})})
    with pytest.raises(ConfigError, match="allowed_signers is not set"):
        apply_plan(bare, w.store, "plan-1", 1)
