"""The host's trust files are refused when anyone but root or the Kafka user could change them (the tests run as
root; other owners are made with chown)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import build_world, keyring_of
from ssh_keys import require_openssh

from pipelines.config.models import ExecutorConfig
from pipelines.errors import ConfigError, PolicyViolation
from pipelines.execute.apply import apply_plan
from pipelines.signing.trust import check_trust_file, kafka_uid, load_host_trust

ROOT_ONLY = frozenset({0})
OTHER_UID = 4242


@pytest.fixture(autouse=True)
def _as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown files to another user")


def _trust_dir(tmp_path: Path) -> Path:
    d = tmp_path / "etc-kafka"
    d.mkdir(mode=0o755)
    (d / "allowed_signers").write_text("")
    (d / "allowed_signers").chmod(0o644)
    return d


def _check(path: Path, trusted: frozenset[int] = ROOT_ONLY) -> Path:
    return check_trust_file(path, key="allowed_signers", rule="allowed_signers_permissions", trusted=trusted)


def _refused(path: Path, match: str, trusted: frozenset[int] = ROOT_ONLY) -> None:
    with pytest.raises(PolicyViolation, match=r"^\[allowed_signers_permissions\] .*" + match):
        _check(path, trusted)


def test_a_root_owned_file_in_root_owned_dirs_is_accepted(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    assert _check(d / "allowed_signers") == (d / "allowed_signers").resolve()


@pytest.mark.parametrize(("mode", "who"), [(0o646, "others"), (0o664, "its group"), (0o666, "group and others")])
def test_a_file_writable_by_group_or_others_is_refused(tmp_path: Path, mode: int, who: str) -> None:
    d = _trust_dir(tmp_path)
    (d / "allowed_signers").chmod(mode)
    _refused(d / "allowed_signers", f"writable by {who}")


def test_a_directory_writable_by_others_is_refused(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    d.chmod(0o757)
    _refused(d / "allowed_signers", f"{d} is writable by others")


def test_a_writable_directory_further_up_is_refused(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    tmp_path.chmod(0o775)  # whoever can write here can rename etc-kafka away and put their own in its place
    _refused(d / "allowed_signers", f"{tmp_path} is writable by its group")


def test_a_sticky_world_writable_directory_is_accepted(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    tmp_path.chmod(0o1777)  # like /tmp: nobody else can replace etc-kafka (root's) in it
    assert _check(d / "allowed_signers")


def test_a_file_owned_by_someone_else_is_refused_unless_they_are_the_kafka_user(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    os.chown(d / "allowed_signers", OTHER_UID, -1)
    _refused(d / "allowed_signers", f"owned by uid {OTHER_UID}")
    assert _check(d / "allowed_signers", frozenset({0, kafka_uid(str(OTHER_UID))}))


def test_a_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    os.chown(d, OTHER_UID, -1)
    _refused(d / "allowed_signers", f"{d} is owned by uid {OTHER_UID}")


def test_a_symlink_is_judged_by_both_the_link_and_its_target(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o757)
    (open_dir / "as").symlink_to(d / "allowed_signers")  # a link others could re-point
    _refused(open_dir / "as", f"{open_dir} is writable by others")
    (open_dir / "real").write_text("")
    (d / "link").symlink_to(open_dir / "real")  # a safe link to a file in an unsafe dir
    _refused(d / "link", f"{open_dir} is writable by others")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    os.mkfifo(d / "fifo", 0o644)
    _refused(d / "fifo", "not a regular file")


def test_a_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        _check(tmp_path / "nope")


def test_revoked_keys_are_vetted_the_same_way(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    (d / "revoked_keys").write_text("")
    (d / "revoked_keys").chmod(0o666)
    executor = ExecutorConfig(allowed_signers=str(d / "allowed_signers"), revoked_keys=str(d / "revoked_keys"))
    with pytest.raises(PolicyViolation, match=r"^\[revoked_keys_permissions\]"):
        load_host_trust(executor)


def test_an_unknown_kafka_user_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="no user"):
        kafka_uid("no-such-user-here")


def test_the_executor_refuses_to_apply_with_a_writable_allowed_signers(tmp_path: Path) -> None:
    require_openssh()
    w = build_world(tmp_path)
    assert apply_plan(w.config, w.store, "plan-1", 1).count("would_quarantine") == 3
    keyring_of(w.config).allowed_signers.chmod(0o666)  # anyone could now add their key as an approver
    with pytest.raises(PolicyViolation, match=r"^\[allowed_signers_permissions\]"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())
