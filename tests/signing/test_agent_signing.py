"""Signing through a real ssh-agent: no key file on disk, the agent's one key; several keys need --key."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from ssh_keys import Keyring, require_openssh, ssh_add, ssh_agent

from pipelines.signing.openssh import SigningError
from pipelines.signing.signer import sign
from pipelines.signing.statement import Statement
from pipelines.signing.trust import HostTrust
from pipelines.signing.verify import verify_signature

NOW = datetime.now(timezone.utc).replace(microsecond=0)
STATEMENT = Statement(action="approve", cluster="prod", cluster_id="MkU3OEVBNTcwNTJENDM2Qg", plan_id="p1",
                      content_hash="sha256:" + "cd" * 32, brokers=(3,), expires_at=NOW.replace(year=NOW.year + 1),
                      signer="alice", signed_at=NOW)


@pytest.fixture(autouse=True)
def _openssh() -> None:
    require_openssh()


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with ssh_agent(tmp_path) as env:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield env


def test_the_agents_only_key_signs_with_no_key_file_on_disk(tmp_path: Path, agent: dict[str, str]) -> None:
    keys = Keyring(tmp_path / "k")
    private = keys.key("alice")
    keys.allow("alice", "alice")
    ssh_add(agent, private)
    private.unlink()  # only the agent holds it now
    signed = sign(STATEMENT)
    trust = HostTrust(keys.allowed_signers, None, frozenset({os.geteuid()}))
    assert verify_signature(STATEMENT.to_bytes(), signed.signature, "alice", trust, NOW).ok


def test_a_public_key_file_selects_one_of_several_agent_keys(tmp_path: Path, agent: dict[str, str]) -> None:
    keys = Keyring(tmp_path / "k")
    for name in ("alice", "bob"):
        ssh_add(agent, keys.key(name))
        keys.allow(name, name)
    with pytest.raises(SigningError, match="holds 2 keys; choose one with --key"):
        sign(STATEMENT)
    keys.key("bob").unlink()
    signed = sign(STATEMENT, key=f"{keys.key('bob')}.pub")  # the .pub names bob's key; the agent signs
    trust = HostTrust(keys.allowed_signers, None, frozenset({os.geteuid()}))
    check = verify_signature(STATEMENT.to_bytes(), signed.signature, "alice", trust, NOW)
    assert (check.ok, check.rule) == (False, "signer_not_allowed")  # bob's key, claiming to be alice


def test_an_empty_agent_and_no_agent_are_one_line_errors(tmp_path: Path, agent: dict[str, str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SigningError, match="ssh-agent has no usable key"):
        sign(STATEMENT)
    monkeypatch.delenv("SSH_AUTH_SOCK")
    with pytest.raises(SigningError, match="no key to sign with: give --key PATH, or start ssh-agent"):
        sign(STATEMENT)


def test_a_missing_or_unusable_key_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(SigningError, match="no such key file"):
        sign(STATEMENT, key=tmp_path / "nope")
    (tmp_path / "junk").write_text("not a key\n")
    with pytest.raises(SigningError, match="ssh-keygen could not sign") as exc:
        sign(STATEMENT, key=tmp_path / "junk")
    assert "\n" not in str(exc.value)
