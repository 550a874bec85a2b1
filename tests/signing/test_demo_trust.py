"""``logdir-gc demo``'s keys: the approver key signs what the demo's executor then trusts, and nothing else."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ssh_keys import Keyring, require_openssh

from pipelines.config.models import ExecutorConfig
from pipelines.signing.demo_trust import write_demo_trust
from pipelines.signing.signer import sign
from pipelines.signing.statement import Statement
from pipelines.signing.trust import load_host_trust
from pipelines.signing.verify import verify_signature

NOW = datetime.now(timezone.utc).replace(microsecond=0)


def test_the_demo_key_is_trusted_by_the_demo_executor_only_for_alice(tmp_path: Path) -> None:
    require_openssh()
    executor = write_demo_trust(tmp_path / "demo-out")
    trust = load_host_trust(ExecutorConfig(**executor))
    statement = Statement(action="approve", cluster="demo", cluster_id="MkU3OEVBNTcwNTJENDM2Qg", plan_id="p",
                          content_hash="sha256:" + "1" * 64, brokers=(1,), expires_at=NOW.replace(year=NOW.year + 1),
                          signer="alice", signed_at=NOW)
    signed = sign(statement, key=tmp_path / "demo-out" / "keys" / "alice")
    assert verify_signature(statement.to_bytes(), signed.signature, "alice", trust, NOW).ok
    other = sign(statement, key=Keyring(tmp_path / "other").key("alice"))  # a key merely named alice
    assert verify_signature(statement.to_bytes(), other.signature, "alice", trust, NOW).rule == "signer_not_allowed"
    assert write_demo_trust(tmp_path / "demo-out") == executor  # a rerun keeps the key
