"""The executor's trust base is root's (or the executor user's) files: a config another local user could change is
refused by every executor command, and so is every local file a config names that decides what is trusted or
compared (a metadata copy, the quarantine root's parent, the state dir). The tests run as root; "another local
user" is an unused uid given files with chown."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from exec_world import (
    LIVE,
    approve,
    build_world,
    keyring_of,
    make_plan,
    topics_of,
    tree_digest,
    write_metadata_log,
)
from ssh_keys import Keyring, require_openssh

from pipelines.cli import exit_codes
from pipelines.cli.main import main
from pipelines.config.models import AppConfig
from pipelines.errors import PolicyViolation
from pipelines.execute.host_files import vet_metadata_source
from pipelines.tables.rust_engine import RustTableStore

OTHER_UID = 4242


@pytest.fixture(autouse=True)
def _as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown files to another user")
    require_openssh()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def write_config(path: Path, config: dict, *, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    path.chmod(mode)
    return path


def config_of(w, **executor) -> dict:
    data = w.config.model_dump(mode="json")
    data["executor"].update(executor)
    return data


def refused(capsys: pytest.CaptureFixture[str], rule: str, *argv: str) -> str:
    """Run ``argv``; assert exit 5 and one stderr line naming ``rule``; that line."""
    code, _, err = run(capsys, *argv)
    assert (code, err.count("\n")) == (exit_codes.POLICY, 1), err
    assert err.startswith(f"logdir-gc: error: [{rule}] "), err
    return err


EXECUTOR_COMMANDS = (
    ("apply", "plan-1", "--broker", "1", "--execute"),
    ("restore", "plan-1", "--broker", "1", "--execute"),
    ("purge", "--broker", "1", "--execute"),
    ("plans", "verify", "plan-1"),
)


@pytest.mark.parametrize("command", EXECUTOR_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_world_writable_config_is_refused_by_every_executor_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w), mode=0o666)
    before = tree_digest(w.log_dir)
    err = refused(capsys, "host_config_permissions", *command, "--config", str(cfg))
    assert f"{cfg} is writable by group and others" in err
    assert tree_digest(w.log_dir) == before


def test_the_same_config_with_a_safe_mode_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    code, out, err = run(capsys, "apply", "plan-1", "--broker", "1", "--execute", "--config", str(cfg), "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "applied"


def test_prestart_reports_a_refused_config_and_applies_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w), mode=0o646)
    code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(cfg), "--json")
    assert code == 0  # the broker's start is never blocked
    assert "[host_config_permissions]" in json.loads(out)[0]["error"]
    assert all(p.exists() for p in w.garbage.values())


def test_a_group_writable_directory_above_the_config_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "kafka" / "config.yaml", config_of(w))
    (tmp_path / "etc").chmod(0o775)  # whoever is in its group can rename kafka/ away and put their own in its place
    err = refused(capsys, "host_config_permissions", "apply", "plan-1", "--broker", "1", "--config", str(cfg))
    assert f"{tmp_path / 'etc'} is writable by its group" in err


def test_a_config_owned_by_another_user_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    os.chown(cfg, OTHER_UID, -1)
    err = refused(capsys, "host_config_permissions", "purge", "--broker", "1", "--config", str(cfg))
    assert f"{cfg} is owned by uid {OTHER_UID}" in err


def test_the_kafka_user_a_config_names_does_not_vouch_for_that_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w, kafka_user=str(OTHER_UID)))
    os.chown(cfg, OTHER_UID, -1)
    err = refused(capsys, "host_config_permissions", "apply", "plan-1", "--broker", "1", "--config", str(cfg))
    assert f"owned by uid {OTHER_UID}, not by root" in err


def test_a_config_reached_through_a_link_another_user_owns_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    link = tmp_path / "etc" / "current.yaml"
    link.symlink_to(cfg)
    os.lchown(link, OTHER_UID, -1)
    err = refused(capsys, "host_config_permissions", "apply", "plan-1", "--broker", "1", "--config", str(link))
    assert f"{link} is owned by uid {OTHER_UID}" in err


def test_a_metadata_copy_owned_by_another_user_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    source = Path(w.config.metadata.source)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    (segment,) = source.glob("*.log")
    os.chown(segment, OTHER_UID, -1)  # they could rewrite what the controller "said"
    before = tree_digest(w.log_dir)
    err = refused(capsys, "metadata_source_permissions", "apply", "plan-1", "--broker", "1", "--execute",
                  "--config", str(cfg))
    assert f"{segment} is owned by uid {OTHER_UID}" in err
    assert tree_digest(w.log_dir) == before
    for url in (f"local://{source}", f"file://{source}"):  # every spelling the local backend reads is vetted
        document = config_of(w)
        document["metadata"]["source"] = url
        named = write_config(tmp_path / "etc" / "config.yaml", document)
        refused(capsys, "metadata_source_permissions", "apply", "plan-1", "--broker", "1", "--config", str(named))
    os.chown(segment, 0, -1)
    os.chown(source, OTHER_UID, -1)  # the directory: they could add a segment
    refused(capsys, "metadata_source_permissions", "apply", "plan-1", "--broker", "1", "--config", str(cfg))


def test_prestart_reports_a_metadata_copy_owned_by_another_user_and_applies_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    (segment,) = Path(w.config.metadata.source).glob("*.log")
    os.chown(segment, OTHER_UID, -1)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(cfg), "--json")
    assert code == 0 and "[metadata_source_permissions]" in json.loads(out)[-1]["error"]
    assert all(p.exists() for p in w.garbage.values())


def test_a_metadata_copy_the_kafka_user_owns_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    source = Path(w.config.metadata.source)
    for p in (source, *source.iterdir()):
        os.chown(p, OTHER_UID, -1)
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w, kafka_user=str(OTHER_UID)))
    code, _, err = run(capsys, "apply", "plan-1", "--broker", "1", "--config", str(cfg))
    assert code == 0, err


def test_a_metadata_copy_reached_through_a_writable_directory_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    source = Path(w.config.metadata.source)
    source.parent.chmod(0o777)  # not sticky: anyone can swap __cluster_metadata-0 for their own
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    err = refused(capsys, "metadata_source_permissions", "apply", "plan-1", "--broker", "1", "--config", str(cfg))
    assert f"{source.parent} is writable by group and others" in err


@pytest.mark.parametrize("command", EXECUTOR_COMMANDS[:3], ids=lambda c: c[0])
def test_a_quarantine_root_parent_writable_by_others_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]) -> None:
    meta = write_metadata_log(tmp_path / "meta" / "__cluster_metadata-0", topics_of())
    w = build_world(tmp_path, metadata={"kind": "metadata_log", "source": str(meta)})
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    w.log_dir.parent.chmod(0o757)  # others could swap the quarantine root between its check and a rename
    before = tree_digest(w.log_dir)
    err = refused(capsys, "quarantine_parent_permissions", *command, "--config", str(cfg))
    assert f"{w.log_dir.parent} is writable by others" in err
    assert tree_digest(w.log_dir) == before


def test_a_state_dir_writable_by_others_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = build_world(tmp_path)
    w.state_dir.mkdir(exist_ok=True)
    w.state_dir.chmod(0o777)  # they could forge the journal
    cfg = write_config(tmp_path / "etc" / "config.yaml", config_of(w))
    err = refused(capsys, "state_dir_permissions", "restore", "plan-1", "--broker", "1", "--config", str(cfg))
    assert f"{w.state_dir} is writable by group and others" in err


def _own(path: Path, uid: int) -> None:
    for dirpath, dirs, files in os.walk(path):
        os.chown(dirpath, uid, -1)
        for name in (*dirs, *files):
            os.lchown(os.path.join(dirpath, name), uid, -1)


def test_another_users_config_with_their_metadata_copy_and_trust_file_moves_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The attack of issue 27: a local user who can write a config root runs names their own warehouse, a metadata
    copy with one extra record (a RemoveTopicRecord for the live topic ``orders``), a trust file listing their own
    keys, and themselves as ``executor.kafka_user`` (so every file they own would be vouched for). They register
    and sign a plan to quarantine the live replica ``orders-0``; root's ``apply --execute`` must refuse."""
    w = build_world(tmp_path, approve_plan=False)
    attacker = tmp_path / "home" / "mallory"
    lying = [replace(t, removed=True) if t.name == "orders" else t for t in topics_of()]
    meta = write_metadata_log(attacker / "meta" / "__cluster_metadata-0", lying)
    keys = Keyring(attacker / "trust")
    for name in ("mallory", "mallory-too"):
        keys.key(name)
        keys.allow(name, name)
    config = config_of(w, allowed_signers=str(keys.allowed_signers), kafka_user=str(OTHER_UID))
    config["warehouse"] = str(attacker / "warehouse")
    config["metadata"]["source"] = str(meta)
    cfg = write_config(attacker / "logdir-gc.yaml", config)
    store = RustTableStore(config["warehouse"])
    plan = make_plan(w.log_dir, (LIVE[0],), plan_id="plan-x", author="mallory")
    from pipelines.config.load import load_config

    approve(store, plan, load_config(cfg), by="mallory-too")
    _own(attacker, OTHER_UID)
    assert keyring_of(load_config(cfg)).allowed_signers.stat().st_uid == OTHER_UID
    live = w.log_dir / LIVE[0].dir_name
    before = tree_digest(w.log_dir)

    err = refused(capsys, "host_config_permissions", "apply", "plan-x", "--broker", "1", "--execute",
                  "--config", str(cfg))
    assert f"owned by uid {OTHER_UID}, not by root" in err
    assert live.is_dir() and tree_digest(w.log_dir) == before
    code, out, _ = run(capsys, "prestart", "--broker", "1", "--config", str(cfg), "--json")
    assert code == 0 and "[host_config_permissions]" in json.loads(out)[0]["error"]
    assert live.is_dir() and tree_digest(w.log_dir) == before


def _zookeeper_config(tmp_path: Path, **metadata) -> AppConfig:
    return AppConfig.model_validate({"cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
                                     "metadata": {"kind": "zookeeper", **metadata}})


def test_a_zookeeper_dump_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    dump = tmp_path / "zk-dump.json"
    dump.write_text("{}")
    config = _zookeeper_config(tmp_path, source=str(dump))
    vet_metadata_source(config)
    os.chown(dump, OTHER_UID, -1)
    with pytest.raises(PolicyViolation, match=rf"^\[metadata_source_permissions\] {dump} is owned by uid {OTHER_UID}"):
        vet_metadata_source(config)


def test_the_zookeeper_ca_file_decides_which_ensemble_is_believed_and_is_vetted(tmp_path: Path) -> None:
    ca = tmp_path / "zk-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    config = _zookeeper_config(tmp_path, zookeeper_connect="zk1:2181", zookeeper_tls={"ca_file": str(ca)})
    vet_metadata_source(config)  # a live ensemble is not a file: only the CA file is judged
    ca.chmod(0o666)
    with pytest.raises(PolicyViolation, match=r"^\[metadata_source_permissions\] .* writable by group and others"):
        vet_metadata_source(config)
