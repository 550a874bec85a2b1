"""``logdir-gc plans propose|approve|reject|verify`` and ``apply`` with signatures, through ``main`` (exit codes
and one-line errors included); ``plans verify`` in a fresh interpreter proves it loads no Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import build_world, keyring_of
from ssh_keys import require_openssh, ssh_add, ssh_agent

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.plan import approval


@pytest.fixture(autouse=True)
def _openssh() -> None:
    require_openssh()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _world(tmp_path: Path):
    w = build_world(tmp_path, approve_plan=False)
    approval.register_plan(w.store, w.plan, actor="detector", policy=w.config.policy)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    return w, ("--config", str(cfg))


def test_propose_approve_verify_and_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    w, c = _world(tmp_path)
    keys = keyring_of(w.config)
    code, out, _ = run(capsys, "plans", "propose", "plan-1", "--key", str(keys.key("detector")), *c, "--json")
    assert code == 0 and json.loads(out)["signature"]["action"] == "propose"

    code, out, err = run(capsys, "plans", "verify", "plan-1", "--broker", "1", *c)
    assert code == exit_codes.POLICY and err.startswith("logdir-gc: error: [not_approved]")
    assert len(err.splitlines()) == 1
    assert "propose  detector" in out and "AUTHOR" in out

    with ssh_agent(tmp_path) as env:  # the approver signs with the agent's key: no --key
        ssh_add(env, keys.key("reviewer"))
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        code, out, _ = run(capsys, "plans", "approve", "plan-1", "--by", "reviewer", *c)
    assert code == 0 and "approved" in out and "signed by reviewer with SHA256:" in out

    code, out, err = run(capsys, "plans", "verify", "plan-1", "--broker", "1", *c, "--json")
    data = json.loads(out)
    assert code == 0 and err == "" and data["would_apply"] is True and data["approvers"] == ["reviewer"]
    assert data["host"] == {"cluster": "c1", "cluster_id": w.plan.cluster_id, "cluster_id_from": "meta.properties",
                            "broker_id": 1, "allowed_signers": w.config.executor.allowed_signers}
    by_action = {s["action"]: s for s in data["signatures"]}
    assert by_action["approve"]["accepted"] is True and by_action["approve"]["statement"]["brokers"] == [1]
    assert by_action["propose"]["status"] == "author" and by_action["propose"]["accepted"] is False

    code, out, _ = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c, "--json")
    assert code == 0 and json.loads(out)["status"] == "applied"


def test_refusals_are_exit_5_and_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c = _world(tmp_path)
    keys = keyring_of(w.config)
    keys.key("mallory")
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "mallory", "--key", str(keys.key("mallory")), *c)
    assert code == 0  # the workflow records it; only the broker host's allowed_signers decides
    code, out, err = run(capsys, "plans", "verify", "plan-1", *c)
    assert code == exit_codes.POLICY and "[signer_not_allowed]" in err and len(err.splitlines()) == 1
    assert "NOT COUNTED [signer_not_allowed]" in out and "any broker" in out
    code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.POLICY and err.startswith("logdir-gc: error: [signer_not_allowed]")
    assert len(err.splitlines()) == 1 and all(p.exists() for p in w.garbage.values())


def test_reject_is_signed_and_vetoes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c = _world(tmp_path)
    key = str(keyring_of(w.config).key("reviewer"))
    code, out, _ = run(capsys, "plans", "reject", "plan-1", "--by", "reviewer", "--reason", "no", "--key", key, *c)
    assert code == 0 and "rejected; signed by reviewer" in out
    code, out, _ = run(capsys, "plans", "verify", "plan-1", *c, "--json")
    assert code == exit_codes.POLICY and json.loads(out)["signatures"][0]["status"] == "veto"


def test_without_a_key_a_signed_config_refuses_and_an_unsigned_one_warns(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    w, c = _world(tmp_path)
    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "reviewer", *c)
    assert code == exit_codes.CONFIG and "no key to sign with" in err and len(err.splitlines()) == 1
    unsigned = tmp_path / "unsigned.yaml"
    data = w.config.model_dump(mode="json")
    data["executor"]["require_signatures"] = False
    unsigned.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "plans", "approve", "plan-1", "--by", "reviewer", "--config", str(unsigned))
    assert code == 0 and "approved" in out and "warning: unsigned decision" in err


def test_verify_loads_no_spark(tmp_path: Path) -> None:
    _, c = _world(tmp_path)
    probe = ("import sys\nfrom pipelines.cli.main import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
             "print('SPARK' if any(m.startswith('pyspark') or m == 'py4j' for m in sys.modules) else 'NO-SPARK', code)")
    done = subprocess.run([sys.executable, "-c", probe, "plans", "verify", "plan-1", *c, "--json"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("NO-SPARK 5")  # refused: not approved, no signature


def test_propose_after_a_decision_and_a_missing_allowed_signers_flag_say_what_is_wrong(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, c = _world(tmp_path)
    keys = keyring_of(w.config)
    code, _, err = run(capsys, "plans", "reject", "plan-1", "--by", "reviewer", "--reason", "no",
                       "--key", str(keys.key("reviewer")), *c)
    assert code == 0
    code, _, err = run(capsys, "plans", "propose", "plan-1", "--key", str(keys.key("detector")), *c)
    assert code == exit_codes.POLICY and len(err.splitlines()) == 1
    assert "plan plan-1 is rejected: its author signs it only while it is proposed" in err
    missing = tmp_path / "no-such-allowed-signers"
    code, _, err = run(capsys, "plans", "verify", "plan-1", "--allowed-signers", str(missing), *c)
    assert code == 2 and "--allowed-signers" in err and "does not exist" in err and "executor." not in err
