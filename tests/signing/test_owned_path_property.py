"""Property: a path is accepted exactly when no component could be changed by an untrusted user, whatever the
owners and modes of its directories, its file and an optional link on the way (the tests run as root; the
untrusted user is an unused uid given nodes with chown)."""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import PolicyViolation
from pipelines.signing.owned_path import vet_path

TRUSTED = frozenset({0, 4141})
UIDS = (0, 4141, 4242)  # root, the Kafka user, someone else
DIR_MODES = (0o755, 0o700, 0o775, 0o757, 0o777, 0o1777, 0o1757, 0o1775)
FILE_MODES = (0o644, 0o600, 0o664, 0o646, 0o666, 0o1666)


@dataclass(frozen=True)
class Node:
    uid: int
    mode: int


@dataclass(frozen=True)
class Layout:
    dirs: tuple[Node, ...]  # d0/d1/.../dn-1, each inside the previous
    file: Node
    link: tuple[int, int] | None  # (directory index holding a link to the file, the link's owner)


layouts = st.builds(
    Layout,
    dirs=st.lists(st.builds(Node, st.sampled_from(UIDS), st.sampled_from(DIR_MODES)), min_size=1, max_size=4)
    .map(tuple),
    file=st.builds(Node, st.sampled_from(UIDS), st.sampled_from(FILE_MODES)),
    link=st.none() | st.tuples(st.integers(0, 3), st.sampled_from(UIDS)),
)


def safe(node: Node, *, directory: bool) -> bool:
    writable = node.mode & (stat.S_IWGRP | stat.S_IWOTH)
    return node.uid in TRUSTED and (not writable or (directory and bool(node.mode & stat.S_ISVTX)))


def expected(layout: Layout) -> bool:
    """The oracle: every directory down to the file, the file, and the link's owner when the file is named through
    a link (the link sits in one of those directories)."""
    ok = all(safe(d, directory=True) for d in layout.dirs) and safe(layout.file, directory=False)
    return ok and (layout.link is None or layout.link[1] in TRUSTED)


def build(base: Path, layout: Layout) -> Path:
    """The layout under ``base`` (root-owned, 0755); the path to vet: the file, or the link to it."""
    path = base
    dirs = []
    for i, _ in enumerate(layout.dirs):
        path = path / f"d{i}"
        path.mkdir()
        dirs.append(path)
    target = path / "file"
    target.write_text("x")
    named = target
    if layout.link is not None:
        at, owner = layout.link
        named = dirs[min(at, len(dirs) - 1)] / "link"
        named.symlink_to(target)
        os.lchown(named, owner, -1)
    for d, node in zip(dirs, layout.dirs, strict=True):
        os.chown(d, node.uid, -1)
        d.chmod(node.mode)
    os.chown(target, layout.file.uid, -1)
    target.chmod(layout.file.mode)
    return named


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown files to other users")
@settings(max_examples=150, deadline=None)
@given(layouts)
def test_a_path_is_accepted_exactly_when_no_component_is_open_to_others(layout: Layout) -> None:
    with tempfile.TemporaryDirectory(prefix="owned-path-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        named = build(base, layout)
        try:
            vetted = vet_path(named, key="test", rule="test_rule", trusted=TRUSTED)
        except PolicyViolation as exc:
            assert not expected(layout), f"refused a safe layout: {exc}"
        else:
            assert expected(layout), f"accepted {layout}"
            assert vetted.real == (base / "/".join(f"d{i}" for i in range(len(layout.dirs))) / "file")
