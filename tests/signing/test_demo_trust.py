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


def test_the_demo_config_signs_its_plans_proposal_and_alice_approval_applies(tmp_path: Path) -> None:
    """What the demo's plan step and walkthrough do, without Spark: the plan job's proposal (signing.service_key, as
    the plan's created_by) and alice's approval let the demo's executor apply; without the proposal it refuses."""
    import getpass

    import yaml

    from pipelines.cli.run_cmd import _demo_signing
    from pipelines.config import load_config
    from pipelines.plan import approval
    from pipelines.plan.model import GcPlan, PlanItem
    from pipelines.signing.decision import HostFacts, judge
    from pipelines.signing.records import read_signatures
    from pipelines.signing.workflow import approve_signed, propose_signed
    from pipelines.tables.rust_engine import RustTableStore

    require_openssh()
    out = tmp_path / "demo-out"
    config_path = tmp_path / "cluster.yaml"
    config_path.write_text("# demo\n" + yaml.safe_dump({"cluster": "demo", "warehouse": str(tmp_path / "wh")}))
    _demo_signing(config_path, out)
    config = load_config(str(config_path))
    assert config.signing.service_key == str(out / "keys" / "plan-job")
    item = PlanItem.model_validate({
        "item_id": "i1", "broker_id": 1, "log_dir": "/data/kafka-logs", "dir_name": "orders-0", "topic": "orders",
        "partition": 0, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "class": "recreated_topic", "bytes": 100,
        "fingerprint": "sha256:" + "0" * 64})
    plan = GcPlan(plan_id="p1", cluster="demo", cluster_id="MkU3OEVBNTcwNTJENDM2Qg", created_at=NOW,
                  created_by=getpass.getuser(), run_id="r1", items=(item,)).with_hash()
    store = RustTableStore(config.warehouse)
    approval.register_plan(store, plan, actor=plan.created_by, policy=config.policy)
    trust = load_host_trust(config.executor)

    def refusal(*actions: str) -> str | None:
        rows = [r for r in read_signatures(store, "p1") if r.action in actions]
        return judge(plan, rows, trust, HostFacts("demo", None, 1), config.policy, NOW).refusal

    propose_signed(store, "p1", policy=config.policy, key=config.signing.service_key)  # as plan_step does
    approve_signed(store, "p1", by="alice", policy=config.policy, key=out / "keys" / "alice")
    assert refusal("propose", "approve") is None
    assert (refusal("approve") or "").startswith("[author_unsigned] ")
