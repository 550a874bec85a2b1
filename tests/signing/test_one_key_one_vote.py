"""One key, one vote; authorship signed.

A key is one approver however it is presented: under several principals, through any number of OpenSSH
certificates (the SSHSIG signature does not cover the certificate, so anyone can swap one for another), through a
``cert-authority`` line and as a plain key, or with its RSA integers re-encoded. And the author is whoever signed a
valid proposal, never the plan's unsigned ``created_by``. Real ``ssh-keygen`` keys, certificates and signatures.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import World, build_world, keyring_of
from ssh_keys import Keyring, require_openssh

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.config.models import ExecutorConfig, PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.execute.apply import apply_plan
from pipelines.plan import approval
from pipelines.plan.model import GcPlan, PlanItem
from pipelines.signing.decision import COUNTED, HostFacts, judge
from pipelines.signing.envelope import read_envelope
from pipelines.signing.records import SignatureRow, store_signature
from pipelines.signing.signer import SignedStatement, sign
from pipelines.signing.ssh_key import KeyBlobError, parse_key_blob
from pipelines.signing.trust import load_host_trust
from pipelines.signing.workflow import propose_signed, statement_for

NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture(autouse=True)
def _openssh() -> None:
    require_openssh()


def _registered(tmp_path: Path, *, required: int = 2) -> World:
    """The world's plan, proposed (signed) by its author ``detector``, ``required`` approvals needed."""
    w = build_world(tmp_path, approve_plan=False)
    w.config = w.config.model_copy(update={"policy": w.config.policy.model_copy(
        update={"approvals_required": required})})
    approval.register_plan(w.store, w.plan, actor="detector", policy=w.config.policy)
    propose_signed(w.store, "plan-1", policy=w.config.policy, key=keyring_of(w.config).key("detector"))
    return w


def _approve(w: World, by: str, key: Path, *, reencode: bool = False) -> None:
    """``by``'s signed approval, made with ``key`` (a private key or a ``-cert.pub``), stored; the warehouse row
    says approved (an attacker writes it)."""
    registered = approval.get_plan(w.store, "plan-1").plan()
    signed = sign(statement_for(registered, "approve", by, w.config.policy, now=NOW), key=key)
    if reencode:
        signed = dataclasses.replace(signed, signature=_rsa_reencoded(signed.signature))
    store_signature(w.store, "plan-1", datetime.now(timezone.utc), signed)
    record = approval.get_plan(w.store, "plan-1")
    w.store.update("gc_plans", {"plan_id": "plan-1"}, {"status": "approved", "approvals": [*record.approvals, by]})


def _refused(w: World, rule: str) -> str:
    with pytest.raises(PolicyViolation) as exc:
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    message = str(exc.value)
    assert message.startswith(f"[{rule}] ") and "\n" not in message, message
    assert all(p.exists() for p in w.garbage.values())
    return message


def _s(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def _strings(data: bytes, offset: int, count: int) -> list[bytes]:
    out = []
    for _ in range(count):
        (size,) = struct.unpack_from(">I", data, offset)
        out.append(data[offset + 4:offset + 4 + size])
        offset += 4 + size
    return out


def _rsa_reencoded(armored: str) -> str:
    """The same SSHSIG with its RSA public key re-encoded: a zero byte before ``e``. OpenSSH reads it as the same
    key (it strips leading zeros) and the signature does not cover the key, so this needs no private key."""
    lines = armored.strip().splitlines()
    blob = base64.b64decode("".join(lines[1:-1]))
    key, namespace, reserved, hash_alg, signature = _strings(blob, 10, 5)
    key_type, e, n = _strings(key, 0, 3)
    assert key_type == b"ssh-rsa"
    key = _s(key_type) + _s(b"\x00" + e) + _s(n)
    text = base64.b64encode(blob[:10] + b"".join(map(_s, (key, namespace, reserved, hash_alg, signature)))).decode()
    return "\n".join([lines[0], *(text[i:i + 70] for i in range(0, len(text), 70)), lines[-1]]) + "\n"


# --- one key, one vote -----------------------------------------------------------------------------------------

def test_one_key_with_two_certificates_for_two_principals_counts_once(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("carol")
    keys.allow_ca("carol,dave", "ca")  # one cert-authority line
    _approve(w, "carol", keys.certify("carol", "carol"))
    _approve(w, "dave", keys.certify("carol", "dave"))  # carol's key, a second certificate naming dave
    message = _refused(w, "distinct_approvers")
    assert "1 of 2" in message and "(counted: carol)" in message


def test_one_key_listed_through_a_ca_and_as_a_plain_key_counts_once(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("carol")
    keys.allow_ca("carol", "ca")
    keys.allow("dave", "carol")  # carol's key again, listed plainly for dave
    _approve(w, "carol", keys.certify("carol", "carol"))
    _approve(w, "dave", keys.key("carol"))
    assert "1 of 2" in _refused(w, "distinct_approvers")


def test_an_ed25519_and_an_rsa_key_certified_by_one_ca_count_twice(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("carol")
    keys.key("erin", "rsa")
    keys.allow_ca("carol,erin", "ca")
    _approve(w, "carol", keys.certify("carol", "carol"))
    _approve(w, "erin", keys.certify("erin", "erin"))
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert report.status == "applied" and not any(p.exists() for p in w.garbage.values())


def test_one_rsa_key_re_encoded_in_the_envelope_counts_once(tmp_path: Path) -> None:
    w = _registered(tmp_path)
    keys = keyring_of(w.config)
    keys.key("erin", "rsa")
    keys.allow("erin,frank", "erin")
    _approve(w, "erin", keys.key("erin"))
    _approve(w, "frank", keys.key("erin"), reencode=True)  # ssh-keygen accepts it: same key, other bytes
    assert "1 of 2" in _refused(w, "distinct_approvers")


def test_a_certificate_signs_only_for_its_own_principals(tmp_path: Path) -> None:
    w = _registered(tmp_path, required=1)
    keys = keyring_of(w.config)
    keys.key("carol")
    keys.allow_ca("carol,dave", "ca")
    _approve(w, "dave", keys.certify("carol", "carol"))  # the CA may vouch for dave, this certificate does not
    assert "its certificate is for carol, not for dave" in _refused(w, "signer_not_allowed")


def test_the_authors_key_never_counts_through_a_certificate(tmp_path: Path) -> None:
    w = build_world(tmp_path, approve_plan=False)
    keys = keyring_of(w.config)
    keys.allow_ca("detector-ca", "ca")
    approval.register_plan(w.store, w.plan, actor="detector", policy=w.config.policy)
    # detector's key proposes through a certificate for another name, then approves plainly as detector's alias
    propose_signed(w.store, "plan-1", policy=w.config.policy, by="detector-ca",
                   key=keys.certify("detector", "detector-ca"))
    keys.allow("detector-alias", "detector")
    _approve(w, "detector-alias", keys.key("detector"))
    _refused(w, "approver_differs_from_author")


# --- authorship is signed ----------------------------------------------------------------------------------------

def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _cli_world(tmp_path: Path, *, author: str = "someone-else") -> tuple[World, tuple[str, str], Path, Keyring]:
    """A signed world whose plan file claims ``created_by: author``; ``mallory`` holds a listed key."""
    w = build_world(tmp_path, approve_plan=False)
    keys = keyring_of(w.config)
    keys.key("mallory")
    keys.allow("mallory", "mallory")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(w.plan.model_copy(update={"created_by": author}).with_hash().to_json())
    return w, ("--config", str(cfg)), plan_file, keys


def test_a_registrant_whose_plan_names_someone_else_cannot_approve_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    w, c, plan_file, keys = _cli_world(tmp_path)  # the file says created_by: someone-else
    mallory = str(keys.key("mallory"))
    code, _, err = _cli(capsys, "plans", "register", str(plan_file), "--by", "mallory", *c)
    assert code == 0 and "[author_unsigned]" in err  # registered, warned: nobody signed it
    code, _, err = _cli(capsys, "plans", "approve", "plan-1", "--by", "mallory", "--key", mallory, *c)
    assert code == exit_codes.POLICY and "[approver_differs_from_author]" in err and len(err.splitlines()) == 1
    assert approval.get_plan(w.store, "plan-1").approvals == ()  # the workflow knows its registrant
    _approve(w, "mallory", keys.key("mallory"))  # she writes the warehouse: her signed approval, status approved
    code, _, err = _cli(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.POLICY and "[author_unsigned]" in err and len(err.splitlines()) == 1
    # the only proposal she can sign names herself: then she is the author and her approval is not counted
    registered = approval.get_plan(w.store, "plan-1").plan()
    proposal = sign(statement_for(registered, "propose", "mallory", w.config.policy, now=NOW), key=mallory)
    store_signature(w.store, "plan-1", datetime.now(timezone.utc), proposal)
    code, _, err = _cli(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.POLICY and "[approver_differs_from_author]" in err and len(err.splitlines()) == 1
    assert all(p.exists() for p in w.garbage.values())


def test_register_with_a_key_signs_the_proposal_and_the_plan_applies(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    w, c, plan_file, keys = _cli_world(tmp_path, author="detector")
    code, out, _ = _cli(capsys, "plans", "register", str(plan_file), "--key", str(keys.key("detector")), *c, "--json")
    assert code == 0 and (json.loads(out)["signature"]["signer"], json.loads(out)["signature"]["action"]) == (
        "detector", "propose")
    code, _, _ = _cli(capsys, "plans", "approve", "plan-1", "--by", "reviewer", "--key", str(keys.key("reviewer")), *c)
    assert code == 0
    code, _, err = _cli(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == 0, err
    assert not any(p.exists() for p in w.garbage.values())


def test_a_plan_without_a_signed_proposal_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c, plan_file, keys = _cli_world(tmp_path, author="detector")
    code, _, err = _cli(capsys, "plans", "register", str(plan_file), *c)
    assert code == 0 and "without a signed proposal" in err
    code, _, _ = _cli(capsys, "plans", "approve", "plan-1", "--by", "reviewer", "--key", str(keys.key("reviewer")), *c)
    assert code == 0
    code, _, err = _cli(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.POLICY and "[author_unsigned]" in err and len(err.splitlines()) == 1
    assert "created_by 'detector' is not signed" in err
    assert all(p.exists() for p in w.garbage.values())


def test_a_proposal_signed_by_a_key_not_listed_for_its_author_names_no_author(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c, plan_file, keys = _cli_world(tmp_path)
    code, _, _ = _cli(capsys, "plans", "register", str(plan_file), "--key", str(keys.key("mallory")), *c)
    assert code == 0  # signed as someone-else (the plan's created_by) with mallory's key
    _approve(w, "mallory", keys.key("mallory"))
    with pytest.raises(PolicyViolation, match=r"^\[author_unsigned\] .*someone-else \[signer_not_allowed\]"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)


# --- the property: count == distinct keys ------------------------------------------------------------------------

PRINCIPALS = ("p0", "p1", "p2", "p3")
KEY_KINDS = ("ed25519", "ed25519", "rsa", "ecdsa")
#: how an approval presents its key: plainly, a certificate for its principal alone, one for every principal, or
#: (RSA) plainly with its integers re-encoded
PRESENTATIONS = ("plain", "own_cert", "shared_cert", "reencoded")


@dataclasses.dataclass(repr=False)
class CertWorld:
    plan: GcPlan
    trust: object
    proposal: SignatureRow
    signed: dict[tuple[str, int, str], SignedStatement]


@pytest.fixture(scope="module")
def cert_world(tmp_path_factory: pytest.TempPathFactory) -> CertWorld:
    """Keys, certificates and signed approvals made once (ssh-keygen is slow): every principal's approval with
    every key in every presentation."""
    require_openssh()
    keys = Keyring(tmp_path_factory.mktemp("one-key-one-vote"))
    everyone = ",".join(PRINCIPALS)
    keys.allow_ca(everyone, "ca")
    keys.key("author")
    keys.allow("author", "author")
    item = PlanItem.model_validate({
        "item_id": "i1", "broker_id": 1, "log_dir": "/data/kafka-logs", "dir_name": "orders-0", "topic": "orders",
        "partition": 0, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "class": "recreated_topic", "bytes": 100,
        "fingerprint": "sha256:" + "0" * 64})
    plan = GcPlan(plan_id="p1", cluster="c1", cluster_id="MkU3OEVBNTcwNTJENDM2Qg", created_at=NOW,
                  created_by="author", run_id="r1", items=(item,)).with_hash()
    policy = PolicyConfig()
    signed: dict[tuple[str, int, str], SignedStatement] = {}
    for k, kind in enumerate(KEY_KINDS):
        name = f"k{k}"
        keys.key(name, kind)
        keys.allow(everyone, name)
        shared = keys.certify(name, everyone, serial=1)
        for p in PRINCIPALS:
            statement = statement_for(plan, "approve", p, policy, now=NOW)
            signed[(p, k, "plain")] = sign(statement, key=keys.key(name))
            signed[(p, k, "own_cert")] = sign(statement, key=keys.certify(name, p))
            signed[(p, k, "shared_cert")] = sign(statement, key=shared)
            if kind == "rsa":
                plain = signed[(p, k, "plain")]
                signed[(p, k, "reencoded")] = dataclasses.replace(plain, signature=_rsa_reencoded(plain.signature))
    proposal = sign(statement_for(plan, "propose", "author", policy, now=NOW), key=keys.key("author"))
    trust = load_host_trust(ExecutorConfig(allowed_signers=str(keys.allowed_signers)))
    return CertWorld(plan, trust, _row(plan, proposal, 0), signed)


def _row(plan: GcPlan, signed: SignedStatement, i: int) -> SignatureRow:
    st_ = signed.statement
    return SignatureRow(plan.plan_id, NOW + timedelta(seconds=i), st_.action, st_.signer, st_.content_hash,
                        signed.key_fingerprint, signed.text, signed.signature)


def _presentation(k: int) -> st.SearchStrategy[str]:
    return st.sampled_from(PRESENTATIONS if KEY_KINDS[k] == "rsa" else PRESENTATIONS[:3])


approvals = st.lists(st.integers(0, len(KEY_KINDS) - 1).flatmap(lambda k: st.tuples(st.just(k), _presentation(k))),
                     min_size=1, max_size=len(PRINCIPALS))


@settings(max_examples=30, deadline=None)
@given(chosen=approvals)
def test_approvals_count_once_per_distinct_key_whatever_the_certificates(cert_world: CertWorld,
                                                                         chosen: list[tuple[int, str]]) -> None:
    rows = [cert_world.proposal] + [_row(cert_world.plan, cert_world.signed[(p, k, how)], i + 1)
                                    for i, (p, (k, how)) in enumerate(zip(PRINCIPALS, chosen, strict=False))]
    verdict = judge(cert_world.plan, rows, cert_world.trust, HostFacts("c1", None, None),  # type: ignore[arg-type]
                    PolicyConfig(approvals_required=len(KEY_KINDS)), NOW)
    assert all(v.valid or v.rule == "distinct_approvers" for v in verdict.signatures), [
        (v.who, v.rule, v.reason) for v in verdict.signatures]
    assert sum(v.status == COUNTED for v in verdict.signatures) == len({k for k, _ in chosen})


# --- the certificate parser is bounded ---------------------------------------------------------------------------

def test_every_truncation_of_a_certificate_is_refused(cert_world: CertWorld) -> None:
    envelope = read_envelope(cert_world.signed[("p0", 0, "own_cert")].signature)
    blob = envelope.public_key
    assert envelope.certificate is not None and envelope.certificate.principals == ("p0",)
    assert envelope.key == read_envelope(cert_world.signed[("p0", 0, "plain")].signature).key
    for cut in range(len(blob)):
        with pytest.raises(KeyBlobError):
            parse_key_blob(blob[:cut])
    plain = read_envelope(cert_world.signed[("p0", 0, "plain")].signature).public_key
    for whole in (blob, plain):  # a certificate, a plain key: nothing may follow the last field
        with pytest.raises(KeyBlobError, match="unexpected bytes"):
            parse_key_blob(whole + b"\x00")
    huge = blob[:4 + 32] + struct.pack(">I", 2**32 - 1) + blob[4 + 32 + 4:]  # the nonce's length past the end
    with pytest.raises(KeyBlobError, match="truncated"):
        parse_key_blob(huge)
