"""Identity, not names: the executor moves, restores and purges the very directory it checked.

A name is only where a directory was when it was looked at. Apply verifies a partition dir through one descriptor
and keeps its identity (device, inode); the rename happens only if the name still points at it, and what arrives in
the quarantine must be it, else it goes straight back. Restore and purge re-read the quarantined copy (identity,
``partition.metadata``, name, fingerprint) and refuse any difference from the manifest. Every path under the
quarantine is opened from the descriptor of the area validated at the start, one component at a time, so a root or
a component swapped for a symlink to a live log dir afterwards sends nothing there.

The swaps happen in-process at the executor's fault points (``fault_point`` patched with a hook that swaps, then
passes the point on), i.e. exactly between the check and the use they attack.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from exec_world import LIVE, World, backdate_journal, build_world, tree_digest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logdir_factory import PartitionSpec, make_log_dir, uuid_for

import pipelines.execute.apply as apply_mod
import pipelines.execute.journal as journal_mod
from pipelines.execute.apply import apply_plan
from pipelines.execute.observe import observe_dir
from pipelines.execute.purge import purge
from pipelines.execute.restore import restore
from pipelines.execute.safe_fs import list_entries_at, open_dir
from pipelines.kafka.listing import LocalLister
from pipelines.kafka.logdir import fingerprint_dir, scan_log_dir
from pipelines.kafka.partition_metadata import write_partition_metadata

T0 = 1_700_000_000 * 10**9  # one mtime for every file of the idle partitions: equal names, sizes and times
IDLE = (PartitionSpec("gone", 0, mtime_ns=T0), PartitionSpec("gone", 1, mtime_ns=T0))
LATER = datetime.now(timezone.utc) + timedelta(days=8)  # past the default 7-day retention
QROOT = ".logdir-gc-quarantine"


def _area(w: World) -> Path:
    return w.root / QROOT / "kafka-logs" / "plan-1"


def _copy(w: World, item_id: str) -> Path:
    return _area(w) / item_id / w.garbage[item_id].name


def _at_point(monkeypatch: pytest.MonkeyPatch, point: str, action: Callable[[], None]) -> list[str]:
    """Run ``action`` the first time the executor passes ``point`` (journal boundaries and apply's own points);
    returns the list of points passed, for the test to check the swap really happened."""
    passed: list[str] = []

    def hook(name: str) -> None:
        passed.append(name)
        if name == point and passed.count(name) == 1:
            action()

    monkeypatch.setattr(apply_mod, "fault_point", hook)
    monkeypatch.setattr(journal_mod, "fault_point", hook)
    return passed


def _journal(w: World) -> list[dict]:
    return [json.loads(line) for line in (w.state_dir / "journal-broker-1.jsonl").read_text().splitlines()]


# --- apply moves the very directory it verified -------------------------------------------------------------------


@pytest.mark.parametrize("point", ["rename.intent", "rename.checked"])
def test_a_live_dir_swapped_in_between_verify_and_rename_is_never_quarantined(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """The honest race of the attack: the verified garbage dir and a live replica exchanged under the garbage
    dir's name after the checks. ``rename.intent``: before the executor's last look at the name (nothing moves);
    ``rename.checked``: between that look and the rename (the live dir arrives in the quarantine and is moved back
    at once). Either way the live replica ends up in its log dir, byte for byte, and the item fails."""
    w = build_world(tmp_path, signed=False)
    victim = w.garbage["gone-0"]
    live = w.log_dir / "orders-1"
    live_digest = tree_digest(live)
    aside = tmp_path / "aside"

    def swap() -> None:
        os.rename(victim, aside)
        os.rename(live, victim)  # the live replica now sits under the verified name

    passed = _at_point(monkeypatch, point, swap)
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert point in passed and aside.exists()
    outcome = next(i for i in report.items if i.item_id == "gone-0")
    assert (outcome.action, outcome.rule) == ("failed", "identity_changed"), outcome
    assert tree_digest(victim) == live_digest  # back in its log dir (under the name it was given), untouched
    assert not _copy(w, "gone-0").exists()
    records = [r for r in _journal(w) if r["item_id"] == "gone-0"]
    assert any(r["step"] == "rename" and r["state"] == "failed" and r["detail"]["rule"] == "identity_changed"
               for r in records)
    assert not any(r["step"] == "rename" and r["state"] == "done" for r in records)
    assert next(i for i in report.items if i.item_id == "gone-1").action == "quarantined"  # the rest go on


def test_a_rerun_after_a_crash_moves_back_a_swapped_in_dir_it_finds_in_the_quarantine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the rename of a swapped-in dir (before the check of what arrived): the next run finds the
    destination occupied, sees it is not the directory the manifest recorded, moves it back and fails the item."""
    w = build_world(tmp_path, signed=False)
    victim = w.garbage["gone-0"]
    live = w.log_dir / "orders-1"
    live_digest = tree_digest(live)

    class Killed(BaseException):
        pass

    def swap() -> None:
        os.rename(victim, tmp_path / "aside")
        os.rename(live, victim)

    def die() -> None:
        raise Killed

    hooks = {"rename.checked": swap, "rename.performed": die}

    def hook(name: str) -> None:
        if name in hooks:
            hooks.pop(name)()

    monkeypatch.setattr(apply_mod, "fault_point", hook)
    with pytest.raises(Killed):
        apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert tree_digest(_copy(w, "gone-0")) == live_digest  # the crash left the live dir in the quarantine
    monkeypatch.undo()
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    outcome = next(i for i in report.items if i.item_id == "gone-0")
    assert (outcome.action, outcome.rule) == ("failed", "identity_changed"), outcome
    assert tree_digest(victim) == live_digest and not _copy(w, "gone-0").exists()


# --- restore and purge refuse a copy that is not what the manifest recorded ---------------------------------------


def _swap_quarantined_copies(w: World) -> None:
    """The rename trick: two idle partitions of one topic, quarantined, exchanged under each other's names."""
    a, b = _copy(w, "gone-0"), _copy(w, "gone-1")
    tmp = a.parent / "tmp-swap"
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)


def test_two_idle_partitions_exchanged_in_the_quarantine_are_refused_by_restore_and_purge(tmp_path: Path) -> None:
    w = build_world(tmp_path, garbage=IDLE, signed=False)
    assert fingerprint_dir(str(w.garbage["gone-0"])) == fingerprint_dir(str(w.garbage["gone-1"]))  # the premise
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == 2
    _swap_quarantined_copies(w)
    copies = {i: tree_digest(_copy(w, i)) for i in w.garbage}

    restored = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert restored.restored == []
    assert all("[identity_changed]" in restored.failed[i] for i in w.garbage), restored.failed
    assert not any(p.exists() for p in w.garbage.values())

    backdate_journal(w.state_dir, hours=24 * 8)
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert purged.items == [], purged.items
    assert all("[identity_changed]" in purged.failed[f"plan-1/{i}"] for i in w.garbage), purged.failed
    assert {i: tree_digest(_copy(w, i)) for i in w.garbage} == copies


def test_restore_puts_back_only_the_copy_it_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two idle copies exchanged between restore's check of one and its rename back: what arrived in the log
    dir is not what was checked, so it goes back into the quarantine and the item fails."""
    restore_mod = importlib.import_module("pipelines.execute.restore")
    w = build_world(tmp_path, garbage=IDLE, signed=False)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == 2
    copies = {i: tree_digest(_copy(w, i)) for i in w.garbage}
    swapped: list[str] = []

    def hook(name: str) -> None:
        if name == "restore.checked" and not swapped:
            swapped.append(name)
            _swap_quarantined_copies(w)

    monkeypatch.setattr(restore_mod, "fault_point", hook)
    report = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert swapped and "[identity_changed]" in report.failed["gone-0"], report.failed
    assert report.restored == [] and not any(p.exists() for p in w.garbage.values())
    assert {i: tree_digest(_copy(w, i)) for i in w.garbage} == copies  # both still in the quarantine


def _edit_topic_id_keeping_size_and_time(copy: Path) -> None:
    pm = copy / "partition.metadata"
    st = pm.stat()
    other = write_partition_metadata(uuid_for("orders"))
    assert len(other) == st.st_size
    pm.write_bytes(other)
    os.utime(pm, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_quarantined_copy_whose_partition_metadata_names_another_topic_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path, signed=False)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == len(w.garbage)
    _edit_topic_id_keeping_size_and_time(_copy(w, "gone-0"))

    restored = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "[topic_id_changed]" in restored.failed["gone-0"], restored.failed
    assert not w.garbage["gone-0"].exists() and "gone-1" in restored.restored

    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True)  # nothing to do; the rest stays restored
    backdate_journal(w.state_dir, hours=24 * 8)
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert "[topic_id_changed]" in purged.failed["plan-1/gone-0"], purged.failed
    assert _copy(w, "gone-0").is_dir()


def test_a_manifest_whose_partition_disagrees_with_the_name_is_refused(tmp_path: Path) -> None:
    w = build_world(tmp_path, signed=False)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == len(w.garbage)
    path = _area(w) / "gone-0" / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "partition": 1}))
    restored = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert "[partition_changed]" in restored.failed["gone-0"], restored.failed
    backdate_journal(w.state_dir, hours=24 * 8)
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert "[partition_changed]" in purged.failed["plan-1/gone-0"] and _copy(w, "gone-0").is_dir()


def test_a_manifest_identity_that_disagrees_with_the_journal_is_refused(tmp_path: Path) -> None:
    """Whoever rewrites a manifest to the identity of a dir they swapped in still disagrees with the journal."""
    w = build_world(tmp_path, garbage=IDLE, signed=False)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == 2
    _swap_quarantined_copies(w)
    for item_id in w.garbage:
        path = _area(w) / item_id / "manifest.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "inode": _copy(w, item_id).stat().st_ino}))
    restored = restore(w.config, w.store, "plan-1", 1, execute=True)
    assert restored.restored == [] and all("the journal recorded" in r for r in restored.failed.values())
    backdate_journal(w.state_dir, hours=24 * 8)
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert purged.items == [] and all("the journal recorded" in r for r in purged.failed.values())


def test_purge_refuses_a_version_1_manifest_that_records_no_identity(tmp_path: Path) -> None:
    """Contract change: a manifest written before identities were recorded is never purged (fail closed)."""
    w = build_world(tmp_path, signed=False)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == len(w.garbage)
    path = _area(w) / "gone-0" / "manifest.json"
    old = {k: v for k, v in json.loads(path.read_text()).items() if k not in ("device", "inode")}
    path.write_text(json.dumps({**old, "version": 1}))
    backdate_journal(w.state_dir, hours=24 * 8)
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert "[manifest_without_identity]" in purged.failed["plan-1/gone-0"], purged.failed
    assert _copy(w, "gone-0").is_dir()
    assert {p.item_id for p in purged.items} == set(w.garbage) - {"gone-0"}


def test_purge_deletes_only_the_directory_it_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy exchanged between purge's check and its removal is not deleted."""
    purge_mod = importlib.import_module("pipelines.execute.purge")  # the package exports the function as ``purge``

    w = build_world(tmp_path, garbage=IDLE, signed=False)
    assert apply_plan(w.config, w.store, "plan-1", 1, execute=True).count("quarantined") == 2
    backdate_journal(w.state_dir, hours=24 * 8)
    real = purge_mod.Pacer

    def swapping_pacer(*args, **kwargs):  # type: ignore[no-untyped-def]
        _swap_quarantined_copies(w)  # after every check, before the first removal
        return real(*args, **kwargs)

    monkeypatch.setattr(purge_mod, "Pacer", swapping_pacer)
    copies = {i: tree_digest(_copy(w, i)) for i in w.garbage}
    purged = purge(w.config, 1, execute=True, now=LATER)
    assert all("identity_changed" in purged.failed[f"plan-1/{i}"] for i in w.garbage), purged.failed
    assert {i: tree_digest(_copy(w, i)) for i in w.garbage} == copies


# --- the quarantine is used through the descriptor that was validated ---------------------------------------------


def _other_host(tmp: Path) -> Path:
    """A directory whose ``kafka-logs`` is a live log dir (what a swapped-in link would point at)."""
    make_log_dir(tmp / "other" / "kafka-logs", node_id=2, partitions=LIVE)
    return tmp / "other"


COMPONENTS = ("root", "area", "plan", "item")


def _link_component(w: World, component: str, other: Path) -> None:
    """Replace one component of the quarantine path by a symlink into the live log dir (moved aside if it exists;
    planted if not yet made)."""
    root = w.root / QROOT
    path, target = {
        "root": (root, other),
        "area": (root / "kafka-logs", other / "kafka-logs"),
        "plan": (root / "kafka-logs" / "plan-1", other / "kafka-logs"),
        "item": (root / "kafka-logs" / "plan-1" / "gone-0", other / "kafka-logs"),
    }[component]
    if not path.parent.is_dir() or path.parent.is_symlink():
        return  # an earlier component is not there yet: nothing to swap
    if os.path.lexists(path):
        os.rename(path, path.with_name(path.name + ".aside"))
    os.symlink(target, path)


def _check_nothing_landed(w: World, other: Path, before: dict[str, str], untouched: dict[str, str]) -> None:
    assert tree_digest(other) == before
    garbage = {p.name for p in w.garbage.values()}
    now = {k: v for k, v in tree_digest(w.log_dir).items() if k.split(os.sep)[0] not in garbage}
    assert now == untouched


def _untouched(w: World) -> dict[str, str]:
    garbage = {p.name for p in w.garbage.values()}
    return {k: v for k, v in tree_digest(w.log_dir).items() if k.split(os.sep)[0] not in garbage}


@pytest.mark.parametrize("component", ["root", "area"])
def test_a_quarantine_component_linked_to_a_live_log_dir_after_validation_receives_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, component: str) -> None:
    """The attack's second finding: the root (or the area) replaced by a symlink to a live log dir's parent after
    validation. Everything goes through the validated descriptor, so the items land where it was validated."""
    w = build_world(tmp_path, signed=False)
    other = _other_host(tmp_path)
    before, untouched = tree_digest(other), _untouched(w)
    passed = _at_point(monkeypatch, "run.intent", lambda: _link_component(w, component, other))
    report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
    assert "run.intent" in passed and (w.root / QROOT / ("kafka-logs" if component == "area" else "")).is_symlink()
    _check_nothing_landed(w, other, before, untouched)
    aside = w.root / (QROOT + ".aside" if component == "root" else f"{QROOT}/kafka-logs.aside")
    kept = aside / ("kafka-logs" if component == "root" else "") / "plan-1"
    assert report.count("quarantined") == len(w.garbage)
    assert all((kept / i / p.name).is_dir() for i, p in w.garbage.items())


POINTS = ("run.intent", "item.intent", "manifest.done", "rename.intent", "rename.checked")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(component=st.sampled_from(COMPONENTS), point=st.sampled_from(POINTS))
def test_property_no_swapped_or_linked_quarantine_component_sends_anything_into_a_live_log_dir(
        monkeypatch: pytest.MonkeyPatch, component: str, point: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="klgc-identity-"))
    try:
        with monkeypatch.context() as m:
            w = build_world(tmp, signed=False)
            other = _other_host(tmp)
            before, untouched = tree_digest(other), _untouched(w)
            _at_point(m, point, lambda: _link_component(w, component, other))
            report = apply_plan(w.config, w.store, "plan-1", 1, execute=True)
            _check_nothing_landed(w, other, before, untouched)
            for outcome in report.items:  # each item is either quarantined (somewhere real) or still in place
                src = w.garbage[outcome.item_id]
                assert src.is_dir() != (outcome.action == "quarantined"), outcome
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- the fingerprint and the fd-based listing ----------------------------------------------------------------------


def test_the_fingerprint_binds_the_topic_id(tmp_path: Path) -> None:
    """Equal names, sizes and times: one fingerprint within a topic, two once the ids differ; the crawl's scan,
    ``fingerprint_dir`` and the executor's observation agree on each."""
    log = make_log_dir(tmp_path / "kafka-logs", partitions=IDLE)
    assert fingerprint_dir(str(log / "gone-0")) == fingerprint_dir(str(log / "gone-1"))
    _edit_topic_id_keeping_size_and_time(log / "gone-1")
    fps = {n: fingerprint_dir(str(log / n)) for n in ("gone-0", "gone-1")}
    assert fps["gone-0"] != fps["gone-1"]
    scanned = {d.name: d.fingerprint for d in scan_log_dir(str(log)).partition_dirs}
    observed = {n: observe_dir(str(log), n).fingerprint for n in fps}
    assert scanned == observed == fps


def test_the_descriptor_listing_is_the_pure_python_listers(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "f").write_bytes(b"abc")
    (d / "sub").mkdir()
    (d / "link").symlink_to(d / "f")
    (d / "dangling").symlink_to(tmp_path / "nowhere")
    with open_dir(d) as fd:
        got = list_entries_at(fd)
    assert sorted(got, key=repr) == sorted(LocalLister().list_dir(str(d)), key=repr) and len(got) == 4


def test_open_dir_refuses_a_symlink_at_any_component(tmp_path: Path) -> None:
    (tmp_path / "real" / "inner").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with open_dir(tmp_path / "real" / "inner"):
        pass
    with pytest.raises(OSError), open_dir(tmp_path / "link" / "inner"):
        pass
