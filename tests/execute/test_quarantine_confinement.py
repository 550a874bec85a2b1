"""The quarantine is confined as strictly as apply: a bad quarantine root is refused, and restore and purge act only
on what the executor itself put there, found by walking the area, never by a path a manifest names."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from exec_world import build_world, tree_digest

from pipelines.config.load import config_from_dict
from pipelines.errors import ConfigError, PolicyViolation
from pipelines.execute.apply import apply_plan
from pipelines.execute.purge import purge
from pipelines.execute.quarantine import QuarantineError
from pipelines.execute.restore import restore
from pipelines.execute.safe_fs import open_dir, remove_tree_at, rename_noreplace

LATER = datetime.now(timezone.utc) + timedelta(days=8)  # past the default 7-day retention


def _applied(tmp_path: Path):
    w = build_world(tmp_path)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == len(w.garbage)
    return w


def _area(w) -> Path:
    return w.root / ".logdir-gc-quarantine" / "kafka-logs" / "plan-1"


def _manifest(w, item_id: str) -> Path:
    return _area(w) / item_id / "manifest.json"


def _edit_manifest(w, item_id: str, **fields) -> None:
    path = _manifest(w, item_id)
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


# --- the quarantine root ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".", "..", "a/b", "", " x"])
def test_a_quarantine_dir_name_that_is_not_a_plain_name_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError, match="quarantine_dir_name"):
        config_from_dict({"cluster": "c", "warehouse": "w", "executor": {"quarantine_dir_name": name}})


def test_a_symlinked_quarantine_root_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (w.root / ".logdir-gc-quarantine").symlink_to(elsewhere)
    with pytest.raises(QuarantineError, match="is a symlink"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values()) and not any(elsewhere.iterdir())


def test_a_quarantine_root_that_is_or_holds_a_registered_log_dir_is_refused(tmp_path: Path) -> None:
    """``quarantine_dir_name`` equal to a sibling log dir's name would move items into that live log dir."""
    w = build_world(tmp_path)
    sibling = w.root / "kafka-logs-2"
    sibling.mkdir()
    brokers = [{"broker_id": 1, "log_dirs": [str(w.log_dir), str(sibling)]}]
    config = w.config.model_copy(update={
        "brokers": tuple(config_from_dict({"cluster": "c", "warehouse": "w", "brokers": brokers}).brokers),
        "executor": w.config.executor.model_copy(update={"quarantine_dir_name": "kafka-logs-2"})})
    with pytest.raises(QuarantineError, match="contains the registered log dir"):
        apply_plan(config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values()) and not any(sibling.iterdir())


def test_a_quarantine_root_inside_a_registered_log_dir_is_refused(tmp_path: Path) -> None:
    """Log dirs nested in one another (``/data`` and ``/data/kafka-logs``): the nested one's quarantine would sit
    inside the outer live log dir."""
    w = build_world(tmp_path)
    brokers = [{"broker_id": 1, "log_dirs": [str(w.log_dir)]}, {"broker_id": 2, "log_dirs": [str(w.root)]}]
    config = w.config.model_copy(update={
        "brokers": tuple(config_from_dict({"cluster": "c", "warehouse": "w", "brokers": brokers}).brokers)})
    with pytest.raises(QuarantineError, match="inside the registered log dir"):
        apply_plan(config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


@pytest.mark.parametrize("mode", [0o770, 0o707])
def test_a_quarantine_root_writable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    w = build_world(tmp_path)
    root = w.root / ".logdir-gc-quarantine"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(QuarantineError, match="writable by group or others"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the quarantine root to another user")
def test_a_quarantine_root_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path)
    root = w.root / ".logdir-gc-quarantine"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    with pytest.raises(QuarantineError, match="owned by uid 65534"):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert all(p.exists() for p in w.garbage.values())


# --- purge --------------------------------------------------------------------------------------------------------


def test_purge_never_follows_a_symlink_planted_as_an_item(tmp_path: Path) -> None:
    """The trial's attack: a symlink in the quarantine pointing at a live partition dir."""
    w = _applied(tmp_path)
    item_id = next(iter(w.garbage))
    data = _area(w) / item_id / w.garbage[item_id].name
    os.rename(data, tmp_path / "moved-away")
    live = w.log_dir / "orders-0"
    data.symlink_to(live)
    before = tree_digest(live)
    report = purge(w.config, 1, execute=True, now=LATER)
    assert "not a directory" in report.failed[f"plan-1/{item_id}"]
    assert tree_digest(live) == before and data.is_symlink()
    assert len(report.items) == len(w.garbage) - 1


@pytest.mark.parametrize("field,value", [("dir_name", "../../kafka-logs"), ("dir_name", ".."),
                                          ("original_path", "/"), ("log_dir", "/tmp")])
def test_a_manifest_whose_paths_escape_is_refused_by_purge_and_restore(tmp_path: Path, field: str,
                                                                     value: str) -> None:
    w = _applied(tmp_path)
    item_id = next(iter(w.garbage))
    _edit_manifest(w, item_id, **{field: value})
    before = tree_digest(w.log_dir)
    restored = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert item_id in restored.failed and "manifest" in restored.failed[item_id]
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert "manifest" in purged.failed[f"plan-1/{item_id}"]
    assert (_area(w) / item_id / w.garbage[item_id].name).is_dir()  # still there, untouched
    live_now = tree_digest(w.log_dir)
    assert {k: v for k, v in before.items() if k.startswith("orders")} == \
        {k: v for k, v in live_now.items() if k.startswith("orders")}


def test_purge_deletes_only_what_this_brokers_journal_moved(tmp_path: Path) -> None:
    """An item dir planted in the quarantine with a well-formed manifest (copied from a real item) is not ours."""
    w = _applied(tmp_path)
    real_id = next(iter(w.garbage))
    planted = _area(w) / "planted"
    planted.mkdir()
    victim = planted / w.garbage[real_id].name
    victim.mkdir()
    (victim / "precious.log").write_bytes(b"not the executor's")
    manifest = json.loads(_manifest(w, real_id).read_text())
    manifest.update(item_id="planted", quarantined_path=str(victim))
    (planted / "manifest.json").write_text(json.dumps(manifest))
    report = purge(w.config, 1, execute=True, now=LATER)
    assert "journal records no such move" in report.failed["plan-1/planted"]
    assert (victim / "precious.log").read_bytes() == b"not the executor's"


def test_purge_re_checks_the_fingerprint_of_each_item(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    item_id = next(iter(w.garbage))
    data = _area(w) / item_id / w.garbage[item_id].name
    (data / "added-later.log").write_bytes(b"x")
    report = purge(w.config, 1, execute=True, now=LATER)
    assert "no longer matches its manifest" in report.failed[f"plan-1/{item_id}"] and data.is_dir()


def test_older_than_cannot_go_below_the_hosts_retention_floor(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    with pytest.raises(PolicyViolation, match=r"^\[purge_retention_floor\]"):
        purge(w.config, 1, older_than_ms=59 * 60_000, execute=True, now=LATER)
    with pytest.raises(ConfigError, match="purge_retention_floor_ms"):
        config_from_dict({"cluster": "c", "warehouse": "w", "executor": {"purge_retention_floor_ms": "10m"}})
    with pytest.raises(ConfigError, match=r"below executor\.purge_retention_floor_ms"):
        config_from_dict({"cluster": "c", "warehouse": "w",
                          "executor": {"purge_retention_floor_ms": "2d", "purge_retention_ms": "1d"}})
    # the age is the journal's time of the move: one hour after it, an item is purgeable with --older-than 1h
    assert purge(w.config, 1, older_than_ms=3_600_000, now=datetime.now(timezone.utc)).items == []
    soon = datetime.now(timezone.utc) + timedelta(hours=1, minutes=1)
    assert len(purge(w.config, 1, older_than_ms=3_600_000, now=soon).items) == len(w.garbage)


def test_removal_never_follows_a_symlink_inside_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.log").write_bytes(b"keep")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.log").write_bytes(b"a")
    (tree / "link-to-dir").symlink_to(outside)
    (tree / "sub" / "link-to-file").symlink_to(outside / "keep.log")
    sizes: list[int] = []
    with open_dir(tmp_path) as fd:
        assert remove_tree_at(fd, "tree", sizes.append) == 3
    assert not tree.exists() and (outside / "keep.log").read_bytes() == b"keep"
    (tmp_path / "link").symlink_to(outside)
    with open_dir(tmp_path) as fd, pytest.raises(OSError):
        remove_tree_at(fd, "link", sizes.append)  # the top itself a symlink: refused, nothing removed
    assert (outside / "keep.log").exists()


# --- restore ------------------------------------------------------------------------------------------------------


def test_restore_needs_a_manifest_bound_to_the_plans_hash(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    item_id = next(iter(w.garbage))
    _edit_manifest(w, item_id, content_hash="sha256:" + "0" * 64)
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "bound to content" in report.failed[item_id] and not w.garbage[item_id].exists()
    assert len(report.restored) == len(w.garbage) - 1


def test_restore_needs_the_move_in_this_brokers_journal(tmp_path: Path) -> None:
    w = _applied(tmp_path)
    item_id = next(iter(w.garbage))
    journal = w.state_dir / "journal-broker-1.jsonl"
    kept = [line for line in journal.read_text().splitlines()
            if not (f'"item_id": "{item_id}"' in line and '"step": "rename"' in line)]
    journal.write_text("".join(f"{line}\n" for line in kept))
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "journal records no such move" in report.failed[item_id] and not w.garbage[item_id].exists()


def test_restore_goes_back_only_to_the_log_dir_the_item_came_from(tmp_path: Path) -> None:
    """A manifest edited to send the item into another directory is inconsistent with where it lies: refused."""
    w = _applied(tmp_path)
    item_id = next(iter(w.garbage))
    other = tmp_path / "other-log-dir"
    other.mkdir()
    name = w.garbage[item_id].name
    _edit_manifest(w, item_id, log_dir=str(other), original_path=str(other / name))
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "disagrees with its location" in report.failed[item_id]
    assert not any(other.iterdir()) and not w.garbage[item_id].exists()


def test_restore_never_replaces_even_an_empty_directory(tmp_path: Path) -> None:
    """``rename(2)`` would silently replace an empty directory; the executor's rename refuses."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data").write_bytes(b"d")
    (tmp_path / "dst").mkdir()
    with open_dir(tmp_path) as fd, pytest.raises(FileExistsError):
        rename_noreplace(fd, "src", fd, "dst")
    assert (tmp_path / "src" / "data").exists() and not any((tmp_path / "dst").iterdir())


def test_unknown_plan_is_refused_by_restore(tmp_path: Path) -> None:
    from pipelines.errors import PlanError

    w = _applied(tmp_path)
    with pytest.raises(PlanError, match="no plan 'nope'"):
        restore(w.config, w.store, "nope", 1, execute=True)


def test_restore_needs_the_item_in_the_plan_even_with_a_forged_journal(tmp_path: Path) -> None:
    """Defence in depth against someone who can write the state dir: a planted item dir with a manifest bound to the
    plan's hash AND a forged ``rename.done`` for it is still refused, because the plan lists no such item."""
    from pipelines.execute.journal import DONE, Journal

    w = _applied(tmp_path)
    real_id = next(iter(w.garbage))
    planted = _area(w) / "planted"
    planted.mkdir()
    name = "innocent-0"
    (planted / name).mkdir()
    (planted / name / "00000000000000000000.log").write_bytes(b"planted")
    manifest = json.loads(_manifest(w, real_id).read_text())
    from pipelines.kafka.logdir import fingerprint_dir

    fp = fingerprint_dir(str(planted / name))
    manifest.update(item_id="planted", dir_name=name, original_path=str(w.log_dir / name),
                    quarantined_path=str(planted / name), fingerprint=fp)
    (planted / "manifest.json").write_text(json.dumps(manifest))
    Journal(w.state_dir, "c1", 1).write("plan-1", "planted", "rename", DONE, src=str(w.log_dir / name),
                                        dst=str(planted / name), fingerprint=fp)
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "lists no such item" in report.failed["planted"] and not (w.log_dir / name).exists()


@pytest.mark.parametrize("made_meanwhile", ["dir", "symlink"])
def test_a_quarantine_root_made_between_the_check_and_the_mkdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                made_meanwhile: str) -> None:
    """Two brokers' executors on one host create the shared quarantine root at once: the one whose mkdir finds it
    made checks it as any existing root (accepted when it is a real dir of ours, refused when a symlink). The other
    executor is played by making the root just before our mkdir runs."""
    import pipelines.execute.quarantine as quarantine

    log_dir = tmp_path / "data-0"
    log_dir.mkdir()
    area = quarantine.QuarantineArea.of(log_dir, ".klgc-quarantine")
    real_mkdir = os.mkdir

    def racing_mkdir(path, mode=0o777, **kw):  # type: ignore[no-untyped-def]
        # the executor makes the root by name under its parent's descriptor
        if str(path) == area.root.name and not os.path.lexists(area.root):
            if made_meanwhile == "dir":
                real_mkdir(area.root, 0o700)
            else:
                os.symlink(tmp_path / "elsewhere", area.root)
        return real_mkdir(path, mode, **kw)

    monkeypatch.setattr(quarantine.os, "mkdir", racing_mkdir)
    if made_meanwhile == "dir":
        assert area.validate([str(log_dir)], create=True)
        assert area.path.is_dir()
        area.close()
    else:
        with pytest.raises(QuarantineError, match="symlink"):
            area.validate([str(log_dir)], create=True)
