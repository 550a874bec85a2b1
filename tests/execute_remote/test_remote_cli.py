"""``apply --remote``, ``restore --remote``, ``purge --remote`` through the CLI, on a plan holding local AND remote
items: ``apply --broker N`` takes only broker N's dirs, ``apply --remote`` only the remote segments, and the plan's
status says which parts are done."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from remote_world import GONE_ID, OWNED, Topic, build_remote_world, make_plan

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.config.models import AppConfig
from pipelines.errors import PolicyViolation
from pipelines.execute_remote.apply import apply_remote
from pipelines.plan import approval
from pipelines.signing.workflow import approve_signed, propose_signed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
from exec_world import approve, build_world, keyring_of, topics_of, tree_digest, write_metadata_log

pytestmark = pytest.mark.skipif("remote_tier" not in AppConfig.model_fields,
                                reason="the remote_tier: config section is not in this tree yet")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _mixed(tmp_path: Path):
    """A broker host's world and a file:// tier under one config; one plan with both kinds of items, approved."""
    w = build_world(tmp_path, approve_plan=False)
    r = build_remote_world(tmp_path / "remote", approve_plan=False, topic=("vanished", GONE_ID))
    log = write_metadata_log(tmp_path / "meta2" / "__cluster_metadata-0",
                             [*topics_of(), Topic("vanished", str(GONE_ID), (0,), removed=True)])
    body = w.config.model_dump(mode="json")
    body["metadata"]["source"] = str(log)
    body["remote_tier"] = {"layout": "aiven", "location": r.tools.target.location, "prefix": OWNED,
                           "owned_prefix": OWNED}
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(body))
    config = AppConfig.model_validate(body)
    plan = make_plan((*w.plan.items, *r.plan.items), plan_id="plan-mixed")
    approve(w.store, plan, config)
    return w, r, plan, ("--config", str(cfg))


def test_local_and_remote_parts_are_applied_each_by_its_own_command(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    w, r, plan, c = _mixed(tmp_path)
    tier_before = r.tier.objects()
    code, _, err = run(capsys, "apply", plan.plan_id, "--broker", "1", "--remote", *c)
    assert code == 2 and "exactly one" in err
    code, out, _ = run(capsys, "apply", plan.plan_id, "--broker", "1", "--execute", *c, "--json")
    assert code == 0, out
    assert {i["action"] for i in json.loads(out)["items"]} == {"quarantined"}
    assert len(json.loads(out)["items"]) == len(w.plan.items)
    assert r.tier.objects() == tier_before and not any(p.exists() for p in w.garbage.values())
    code, out, _ = run(capsys, "plans", "show", plan.plan_id, *c, "--format", "json")
    assert json.loads(out)["status"] == "partially_applied"

    code, out, _ = run(capsys, "apply", plan.plan_id, "--remote", *c)  # a dry run
    assert code == 0 and "DRY RUN plan plan-mixed on the remote tier" in out and r.tier.objects() == tier_before
    local_after = tree_digest(w.log_dir)
    code, out, _ = run(capsys, "apply", plan.plan_id, "--remote", "--execute", *c, "--json")
    assert code == 0 and {i["action"] for i in json.loads(out)["items"]} == {"quarantined"}
    assert tree_digest(w.log_dir) == local_after
    assert not [k for k in r.tier.objects() if k.startswith(OWNED)]
    code, out, _ = run(capsys, "plans", "show", plan.plan_id, *c, "--format", "json")
    assert json.loads(out)["status"] == "applied"

    code, out, _ = run(capsys, "restore", plan.plan_id, "--remote", "--execute", *c, "--json")
    assert code == 0 and len(json.loads(out)[0]["restored"]) == len(r.plan.items)
    assert r.tier.objects() == tier_before
    code, out, _ = run(capsys, "plans", "show", plan.plan_id, *c, "--format", "json")
    assert json.loads(out)["status"] == "partially_restored"  # the local part is still quarantined

    code, _, err = run(capsys, "purge", "--remote", "--older-than", "0s", "--execute", *c)
    assert code == exit_codes.POLICY and "[purge_retention_floor]" in err and len(err.splitlines()) == 1


def test_a_skipped_segment_exits_6_and_a_missing_owned_prefix_is_a_config_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, r, plan, c = _mixed(tmp_path)
    victim = sorted(r.originals)[0]
    r.tier.put(victim, b"changed")
    code, out, _ = run(capsys, "apply", plan.plan_id, "--remote", "--execute", *c)
    assert code == exit_codes.PRECONDITION and "changed since the crawl" in out
    body = yaml.safe_load(Path(c[1]).read_text())
    del body["remote_tier"]["owned_prefix"]
    Path(c[1]).write_text(yaml.safe_dump(body))
    code, _, err = run(capsys, "apply", plan.plan_id, "--remote", "--execute", *c)
    assert code == exit_codes.CONFIG and "[owned_prefix]" in err and len(err.splitlines()) == 1
    assert r.tier.read(victim) == b"changed"


def test_an_approval_signed_for_broker_1_only_does_not_authorise_the_remote_part(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path, approve_plan=False)
    r = build_remote_world(tmp_path / "remote", approve_plan=False, topic=("vanished", GONE_ID))
    plan = make_plan((*w.plan.items, *r.plan.items), plan_id="plan-scoped")
    approval.register_plan(w.store, plan, actor=plan.created_by, policy=w.config.policy)
    keys = keyring_of(w.config)
    propose_signed(w.store, plan.plan_id, policy=w.config.policy, key=keys.key("detector"))
    approve_signed(w.store, plan.plan_id, by="reviewer", policy=w.config.policy, key=keys.key("reviewer"),
                   brokers=[1])
    before = r.tier.objects()
    with pytest.raises(PolicyViolation, match=r"\[signature_brokers\]"):
        apply_remote(w.config, w.store, plan.plan_id, execute=True, tools=r.tools)
    assert r.tier.objects() == before
