"""The host's trust files are refused when anyone but root or the Kafka user could change them (the tests run as
root; other owners are made with chown)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import build_world, keyring_of
from ssh_keys import Keyring, require_openssh

from pipelines.config.models import ExecutorConfig
from pipelines.errors import ConfigError, PolicyViolation
from pipelines.execute.apply import apply_plan
from pipelines.signing.openssh import DEFAULT_SSH_KEYGEN, SigningError, run, tool
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


# --- links: every link on the way is judged by its owner, and the walk follows it by hand ----------------------


def test_a_link_to_the_trust_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    (d / "current").symlink_to(d / "allowed_signers")
    assert _check(d / "current") == (d / "allowed_signers").resolve()
    os.lchown(d / "current", OTHER_UID, -1)
    _refused(d / "current", f"{d / 'current'} is owned by uid {OTHER_UID}")


def test_a_directory_link_on_the_way_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    (tmp_path / "etc").symlink_to(d)
    os.lchown(tmp_path / "etc", OTHER_UID, -1)
    _refused(tmp_path / "etc" / "allowed_signers", f"{tmp_path / 'etc'} is owned by uid {OTHER_UID}")


def test_a_link_chain_through_a_writable_directory_is_refused(tmp_path: Path) -> None:
    """x/first -> hop/second -> etc-kafka/allowed_signers: ``hop`` is neither above the name given nor above the
    file reached, yet whoever can write it can re-point ``second``."""
    d = _trust_dir(tmp_path)
    hop, x = tmp_path / "hop", tmp_path / "x"
    hop.mkdir(mode=0o755)
    x.mkdir(mode=0o755)
    (hop / "second").symlink_to(d / "allowed_signers")
    (x / "first").symlink_to(hop / "second")
    assert _check(x / "first") == (d / "allowed_signers").resolve()
    hop.chmod(0o757)
    _refused(x / "first", f"{hop} is writable by others")


def test_dot_dot_after_a_link_is_resolved_as_the_kernel_does(tmp_path: Path) -> None:
    """``d/away/../allowed_signers`` with ``away`` a link into an open directory names the file THERE (the kernel
    follows the link before ``..``), not ``d/allowed_signers``: the path is never shortened by hand."""
    d = _trust_dir(tmp_path)
    open_dir = tmp_path / "open"
    (open_dir / "sub").mkdir(parents=True)
    (open_dir / "allowed_signers").write_text("")
    open_dir.chmod(0o777)
    (d / "away").symlink_to(open_dir / "sub")
    _refused(Path(f"{d}/away/../allowed_signers"), f"{open_dir} is writable by group and others")


def test_a_link_loop_is_refused(tmp_path: Path) -> None:
    d = _trust_dir(tmp_path)
    (d / "a").symlink_to(d / "b")
    (d / "b").symlink_to(d / "a")
    _refused(d / "a", "symbolic links")


# --- content: a damaged trust file fails closed --------------------------------------------------------------


def _signed_trust(tmp_path: Path) -> tuple[Keyring, ExecutorConfig]:
    require_openssh()
    keys = Keyring(tmp_path / "trust")
    keys.key("alice")
    keys.allow("alice", "alice")
    return keys, ExecutorConfig(allowed_signers=str(keys.allowed_signers))


def _content_refused(executor: ExecutorConfig, rule: str, match: str) -> None:
    with pytest.raises(PolicyViolation, match=rf"^\[{rule}\] .*{match}"):
        load_host_trust(executor)


@pytest.mark.parametrize(("damage", "match"), [
    (b"\0" * 512, "NUL bytes"),
    (b"\0\0\0\0\n", "NUL bytes"),
    (b"\xff\xfe garbage\n", "not UTF-8"),
])
def test_a_zero_filled_or_binary_revoked_keys_is_refused(tmp_path: Path, damage: bytes, match: str) -> None:
    """ssh-keygen skips a line that starts with NUL: a revoked_keys file zero-filled by a crash revokes nothing."""
    keys, executor = _signed_trust(tmp_path)
    revoked = keys.revoke("alice")
    executor = executor.model_copy(update={"revoked_keys": str(revoked)})
    assert load_host_trust(executor).revoked_keys == revoked
    revoked.write_bytes(damage)
    _content_refused(executor, "revoked_keys_invalid", match)


def test_a_revoked_key_line_garbled_on_disk_is_refused(tmp_path: Path) -> None:
    keys, executor = _signed_trust(tmp_path)
    revoked = keys.revoke("alice")
    revoked.write_text(revoked.read_text().replace("AAAA", "AAA!", 1))
    _content_refused(executor.model_copy(update={"revoked_keys": str(revoked)}), "revoked_keys_invalid",
                     "line 1: the ssh-ed25519 key is not valid base64")


def test_a_krl_is_accepted_and_a_truncated_one_refused(tmp_path: Path) -> None:
    keys, executor = _signed_trust(tmp_path)
    krl = tmp_path / "trust" / "revoked.krl"
    subprocess.run(["/usr/bin/ssh-keygen", "-k", "-f", str(krl), str(keys.key("alice")) + ".pub"], check=True,
                   capture_output=True)
    executor = executor.model_copy(update={"revoked_keys": str(krl)})
    assert load_host_trust(executor).revoked_keys == krl
    krl.write_bytes(krl.read_bytes()[:20])  # the magic, then a cut
    _content_refused(executor, "revoked_keys_invalid", "damaged KRL")


@pytest.mark.parametrize(("line", "match"), [
    ("garbage line here", "line 2: unknown option"),
    ("garbage", "line 2: expected: principals"),
    ("bob ssh-ed25519", "line 2: expected: principals"),
    ("bob ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ", "line 2: the ssh-ed25519 key is not valid base64"),
    ("bob ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOt+zTW+zCgFKKXjNCpgYd6cvcO2kAFliJlZeUr5Ct25", "not a ssh-rsa key"),
    ("bob ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAQ==", "line 2: ssh-keygen cannot read the key"),
    ('bob trusted="yes" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOt+zTW+zCgFKKXjNCpgYd6cvcO2kAFliJlZeUr5Ct25',
     "unknown option"),
    ('bob valid-before="tomorrow" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOt+zTW+zCgFKKXjNCpgYd6cvcO2kAFliJlZeUr5Ct25',
     "not a time"),
    ('bob namespaces="x ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOt+zTW+zCgFKKXjNCpgYd6cvcO2kAFliJlZeUr5Ct25',
     "unclosed double quote"),
])
def test_an_allowed_signers_line_ssh_keygen_would_skip_is_refused(tmp_path: Path, line: str, match: str) -> None:
    keys, executor = _signed_trust(tmp_path)
    with keys.allowed_signers.open("a") as f:
        f.write(line + "\n")
    _content_refused(executor, "allowed_signers_invalid", match)


def test_an_allowed_signers_with_nul_bytes_is_refused(tmp_path: Path) -> None:
    keys, executor = _signed_trust(tmp_path)
    with keys.allowed_signers.open("ab") as f:
        f.write(b"\0" * 64)
    _content_refused(executor, "allowed_signers_invalid", "NUL bytes")


def test_comments_blank_lines_and_every_option_ssh_keygen_reads_are_accepted(tmp_path: Path) -> None:
    keys, executor = _signed_trust(tmp_path)
    keys.key("bob", "rsa")
    keys.key("carol", "ecdsa")
    with keys.allowed_signers.open("a") as f:
        f.write("\n# approvers\n   \n")
    keys.allow("bob,b*", "bob", 'namespaces="logdir-gc@example,x",valid-after="20240101",valid-before="20990101Z"')
    keys.allow('"carol"', "carol", "cert-authority")
    trust = load_host_trust(executor)
    assert trust.allowed_signers == keys.allowed_signers


def test_the_executor_refuses_to_apply_with_a_zero_filled_revoked_keys(tmp_path: Path) -> None:
    require_openssh()
    w = build_world(tmp_path)
    revoked = keyring_of(w.config).revoke("reviewer")  # the approver's key is revoked ...
    config = w.config.model_copy(update={"executor": w.config.executor.model_copy(
        update={"revoked_keys": str(revoked)})})
    with pytest.raises(PolicyViolation, match=r"^\[key_revoked\]|\[approvals_required\]|revoked"):
        apply_plan(config, w.store, "plan-1", 1, execute=True)
    revoked.write_bytes(b"\0" * revoked.stat().st_size)  # ... then a crash zero-fills the file
    with pytest.raises(PolicyViolation, match=r"^\[revoked_keys_invalid\]"):
        apply_plan(config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


# --- ssh-keygen: an absolute path, vetted like a trust file -----------------------------------------------------


def _own_ssh_keygen(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(mode=0o755)
    shutil.copy2("/usr/bin/ssh-keygen", bin_dir / "ssh-keygen")
    (bin_dir / "ssh-keygen").chmod(0o755)
    return bin_dir / "ssh-keygen"


@pytest.mark.parametrize("loosen", ["file", "dir", "owner"])
def test_an_ssh_keygen_others_could_replace_is_refused(tmp_path: Path, loosen: str) -> None:
    _, executor = _signed_trust(tmp_path)
    tool = _own_ssh_keygen(tmp_path)
    executor = executor.model_copy(update={"ssh_keygen": str(tool)})
    assert load_host_trust(executor).ssh_keygen == tool
    if loosen == "file":
        tool.chmod(0o777)
    elif loosen == "dir":
        tool.parent.chmod(0o777)
    else:
        os.chown(tool, OTHER_UID, -1)
    with pytest.raises(PolicyViolation, match=r"^\[ssh_keygen_permissions\]"):
        load_host_trust(executor)


def test_ssh_keygen_must_be_an_absolute_path() -> None:
    with pytest.raises(ValueError, match="absolute path"):
        ExecutorConfig(ssh_keygen="ssh-keygen")


def test_the_configured_ssh_keygen_is_the_one_that_verifies(tmp_path: Path) -> None:
    """A host whose executor.ssh_keygen exits 0 on anything would count any signature: the path is what decides,
    so it is vetted. Here a vetted wrapper whose ``-Y verify`` refuses everything makes a good approval not count."""
    require_openssh()
    w = build_world(tmp_path)
    stub = tmp_path / "bin" / "ssh-keygen"
    stub.parent.mkdir(mode=0o755)
    stub.write_text('#!/bin/sh\ncase "$1 $2" in "-Y verify") exit 1;; esac\nexec /usr/bin/ssh-keygen "$@"\n')
    stub.chmod(0o755)
    config = w.config.model_copy(update={"executor": w.config.executor.model_copy(update={"ssh_keygen": str(stub)})})
    with pytest.raises(PolicyViolation):
        apply_plan(config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


def test_openssh_tools_are_never_looked_up_through_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    fake = tmp_path / "bin" / "ssh-keygen"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ.get('PATH', '')}")
    assert tool("ssh-keygen") == DEFAULT_SSH_KEYGEN
    run("ssh-keygen", ["-l", "-f", "/dev/null"])
    assert not marker.exists()
    with pytest.raises(SigningError, match="never looked up through PATH"):
        tool("ssh-keyscan")
