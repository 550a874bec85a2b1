"""The CLI end to end, in-process through ``main`` (exit codes included): register → approve → dry-run → apply
→ purge, and the one-line refusals with their exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from exec_world import backdate_journal, build_world, keyring_of, tree_digest

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.execute.locks import kafka_dir_lock


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_plans_workflow_and_apply_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path, approve_plan=False)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(w.plan.to_json())
    c = ("--config", str(cfg))

    author_key = str(keyring_of(w.config).key("detector"))  # the author signs the proposal
    code, out, _ = run(capsys, "plans", "register", str(plan_file), "--key", author_key, *c, "--json")
    assert code == 0 and json.loads(out)["status"] == "proposed"
    code, out, _ = run(capsys, "plans", "list", *c, "--json")
    (listed,) = json.loads(out)
    assert (listed["plan_id"], listed["status"], listed["content_hash"], listed["items"], listed["bytes"]) == (
        "plan-1", "proposed", w.plan.content_hash, 3, w.plan.total_bytes)
    assert listed["created_at"]

    code, _, err = run(capsys, "plans", "approve", "plan-1", "--by", "detector", *c)
    assert code == exit_codes.POLICY and "[approver_differs_from_author]" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)
    assert code == exit_codes.POLICY and "[not_approved]" in err

    key = str(keyring_of(w.config).key("reviewer"))
    code, out, _ = run(capsys, "plans", "approve", "plan-1", "--by", "reviewer", "--comment", "ok", "--key", key, *c)
    assert code == 0 and "approved" in out
    code, out, _ = run(capsys, "plans", "show", "plan-1", *c)
    assert "| `gone-0` |" in out and "- status: **approved**" in out
    assert "reviewer: approve (proposed → approved) ok" in out
    code, out, _ = run(capsys, "plans", "show", "plan-1", *c, "--format", "json")
    assert [a["action"] for a in json.loads(out)["audit"]] == ["register", "propose", "approve_refused", "approve"]

    before = tree_digest(w.log_dir)
    code, out, _ = run(capsys, "apply", "plan-1", "--broker", "1", *c, "--json")  # dry run is the default
    assert code == 0 and json.loads(out)["executed"] is False and tree_digest(w.log_dir) == before
    code, out, _ = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c, "--json")
    assert code == 0 and json.loads(out)["status"] == "applied"
    assert not any(p.exists() for p in w.garbage.values())

    code, _, err = run(capsys, "purge", "--older-than", "0s", "--execute", *c)
    assert code == exit_codes.POLICY and "[purge_retention_floor]" in err and len(err.splitlines()) == 1
    backdate_journal(w.state_dir, hours=2)  # as if the apply had run two hours ago (the journal dates each move)
    code, out, _ = run(capsys, "purge", "--older-than", "1h", *c, "--json")
    assert code == 0 and len(json.loads(out)[0]["items"]) == 3 and json.loads(out)[0]["executed"] is False
    code, out, _ = run(capsys, "purge", "--older-than", "1h", "--execute", *c, "--json")
    assert code == 0 and json.loads(out)[0]["expected_bytes"] == w.plan.total_bytes
    code, out, _ = run(capsys, "plans", "show", "plan-1", *c, "--format", "json")
    assert json.loads(out)["status"] == "purged"


def test_executor_refusals_map_to_their_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path, node_id=7)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", "--config", str(cfg))
    assert code == exit_codes.PRECONDITION and "another broker" in err
    code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--warehouse", str(tmp_path / "warehouse"))
    assert code == exit_codes.CONFIG and "--config" in err
    code, _, err = run(capsys, "apply", "nope", "--broker", "1", "--config", str(cfg))
    assert code == exit_codes.POLICY and "no plan" in err


def test_prestart_applies_approved_items_and_never_fails_the_broker_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    with kafka_dir_lock(w.log_dir):  # as if the broker were already up: reported, exit 0, nothing touched
        code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(cfg), "--json")
    assert code == 0 and "broker is running" in json.loads(out)[0]["refused"]
    assert all(p.exists() for p in w.garbage.values())
    code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(cfg), "--budget", "0s", "--json")
    assert code == 0 and "time budget of 0 ms spent" in json.loads(out)[-1]["error"]
    assert all(p.exists() for p in w.garbage.values())
    code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(cfg), "--json")
    assert code == 0 and json.loads(out)[0]["status"] == "applied"
    assert not any(p.exists() for p in w.garbage.values())
    # a broken config does not stop the broker's start either: reported, exit 0
    code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(tmp_path / "missing.yaml"), "--json")
    assert code == 0 and "cannot read config" in json.loads(out)[0]["error"]


def test_restore_reports_like_apply_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    c = ("--config", str(cfg))
    code, out, _ = run(capsys, "restore", "plan-1", *c)
    assert (code, out.splitlines()) == (0, ["DRY RUN restore plan plan-1 on broker 1",
                                            "  nothing quarantined for this plan"])
    assert run(capsys, "apply", "plan-1", "--broker", "1", "--execute", *c)[0] == 0
    quarantined = tree_digest(w.log_dir)
    originals = sorted(str(p) for p in w.garbage.values())

    code, out, _ = run(capsys, "restore", "plan-1", *c)  # dry run is the default
    header, *rows = out.splitlines()
    assert code == 0 and header == "DRY RUN restore plan plan-1 on broker 1"
    assert sorted(r.split() for r in rows) == [["would_restore", p] for p in originals]
    code, out, _ = run(capsys, "restore", "plan-1", *c, "--json")
    [report] = json.loads(out)
    assert (report["executed"], sorted(report["restored"]), report["skipped"]) == (False, sorted(w.garbage), {})
    assert sorted(report["paths"].values()) == originals
    assert tree_digest(w.log_dir) == quarantined

    first = next(iter(w.garbage))
    w.garbage[first].mkdir()  # something re-created one original path: that item is skipped, the run fails
    code, out, _ = run(capsys, "restore", "plan-1", "--execute", *c)
    header, *rows, status = out.splitlines()
    assert code == exit_codes.FAILED and header == "RESTORE plan plan-1 on broker 1"
    assert f"  skipped          {w.garbage[first]}  (original path {w.garbage[first]} is taken)" in rows
    assert sorted(r.split()[1] for r in rows if r.split()[0] == "restored") == sorted(
        str(p) for i, p in w.garbage.items() if i != first)
    assert status == f"  status: {len(w.garbage) - 1} restored, 1 skipped, 0 failed"
    w.garbage[first].rmdir()
    code, out, _ = run(capsys, "restore", "plan-1", "--execute", *c, "--json")
    [report] = json.loads(out)
    assert code == 0 and (report["executed"], report["restored"], report["skipped"]) == (True, [first], {})
    code, out, _ = run(capsys, "plans", "show", "plan-1", *c, "--format", "json")
    assert json.loads(out)["status"] == "restored"
