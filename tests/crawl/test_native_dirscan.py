"""The compiled partition-dir lister (``crawl/_native_dirscan.c``) against its pure-Python twin.

Both run on the same trees: the local backend's ``_scan`` + ``summarize_entries`` (pure) and ``scan_dir``
(compiled, ``summarize=True``). Equal means: every summary, the listing's errors / failed dirs / kept entries, the
inventory, and every crawl table row. Trees: hypothesis-generated (odd names incl. non-UTF-8 bytes, symbolic links
to files and dirs, broken links, FIFOs, empty and sparse files, subdirectories, odd times, malformed
``partition.metadata``), the project's fixtures, and the real log dirs under ../shared/real-logdirs.

Not covered: an entry vanishing between ``readdir`` and ``stat`` (a race no test can stage without a mock).
Permission-denied dirs only deny when the tests do not run as root (root reads a mode-000 dir).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.crawl.backends import local
from pipelines.crawl.inventory_file import write_inventory
from pipelines.crawl.listing import Listing
from pipelines.crawl.local_crawl import CrawlResult, crawl_local
from pipelines.crawl.rows import scan_listing
from pipelines.kafka.dir_summary import summarize_entries
from pipelines.kafka.listing import FileEntry
from pipelines.kafka.partition_metadata import write_partition_metadata
from pipelines.kafka.uuid import Uuid
from pipelines.native import load
from tests.crawl.conftest import Broker

NATIVE = load("pipelines.crawl._native_dirscan")
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(NATIVE is None, reason="compiled lister not built, or KLGC_PURE_PYTHON is set"),
]
REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "real-logdirs"
AT = datetime(2026, 1, 2, tzinfo=timezone.utc)


@contextlib.contextmanager
def _pure() -> Iterator[None]:
    saved, local._native = local._native, None
    try:
        yield
    finally:
        local._native = saved


def _listings(root: str) -> tuple[Listing, Listing]:
    """(pure, compiled) listings of one log dir, both asked to summarize."""
    with _pure():
        pure = local.list_log_dir(root, summarize=True)
    return pure, local.list_log_dir(root, summarize=True)


def _error_view(listing: Listing) -> tuple[object, ...]:
    failed = {rel: (type(e), str(e)) for rel, e in listing.failed_dirs.items()}
    return listing.errors, failed


def assert_same_everywhere(root: str) -> None:
    """Listings, summaries, inventories and crawl rows of ``root``: pure == compiled."""
    pure, compiled = _listings(root)
    assert not pure.summaries  # the pure backend lists; the scan sums up
    assert _error_view(compiled) == _error_view(pure)
    for rel, summary in compiled.summaries.items():
        prefix = rel + "/"
        entries = [
            FileEntry(e.rel[len(prefix) :], e.size, e.mtime_ns, e.kind == "directory", e.islink)
            for e in pure.entries.values()
            if e.rel.startswith(prefix)
        ]
        assert replace(summary, contents={}) == summarize_entries(entries), rel
        kept = {f"{prefix}{o.name}" for o in summary.others}
        assert {r: e for r, e in compiled.entries.items() if r.startswith(prefix)} == {
            r: e for r, e in pure.entries.items() if r in kept
        }
        read_here = {r[len(prefix) :]: data for r, data in compiled.contents.items() if r.startswith(prefix)}
        assert summary.contents == read_here  # what the scan takes from the summary instead of reading
        for name, data in read_here.items():  # read on the way: what Python reads
            assert data == Path(root, prefix + name).read_bytes()
    for keep in (False,):
        inv_pure, failed_pure = scan_listing(pure, keep_entries=keep)
        inv_comp, failed_comp = scan_listing(compiled, keep_entries=keep)
        assert inv_comp == inv_pure
        assert {r: (type(e), str(e)) for r, e in failed_comp.items()} == {
            r: (type(e), str(e)) for r, e in failed_pure.items()
        }
    for fanout in (None, 1):
        assert _rows(root, fanout, compiled=True) == _rows(root, fanout, compiled=False)
    direct = _rows(root, None, compiled=True)
    for compiled in (True, False):  # a format-2 inventory written either way is read back to the same rows
        assert _inventory_rows(root, compiled=compiled) == direct


def _inventory_rows(root: str, *, compiled: bool) -> dict[str, list[tuple[object, ...]]]:
    """``_rows`` of the crawl that ingests a format-2 inventory of ``root`` (written with or without the compiled
    lister) instead of listing it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "inv.parquet")
        if compiled:
            write_inventory([root], out, broker_id=1)
        else:
            with _pure():
                write_inventory([root], out, broker_id=1)
        return _rows(root, None, compiled=True, inventory=out)


def _rows(root: str, fanout: int | None, *, compiled: bool, inventory: str | None = None
          ) -> dict[str, list[tuple[object, ...]]]:  # fmt: skip
    brokers = [Broker(1, (root,), {}, inventory)]

    def run() -> CrawlResult:
        return crawl_local(brokers, run_id="r", cluster="c", crawled_at=AT, fanout_dirs=fanout)

    if compiled:
        result = run()
    else:
        with _pure():
            result = run()
    drop = {"fs_used_bytes", "fs_free_bytes"}
    out = {}
    for table in ("log_dirs", "partition_dirs", "errors"):
        rows = [tuple((k, repr(v)) for k, v in r.items() if k not in drop) for r in getattr(result, table)]
        out[table] = sorted(rows)
    return out


# -- generated trees ---------------------------------------------------------------------------------------------

SEGMENT_NAMES = st.builds(
    lambda off, tail: f"{off:020d}{tail}",
    st.one_of(st.integers(0, 10**6), st.integers(2**63 - 2, 2**63 + 2), st.just(10**20 - 1)),
    st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".log.deleted", ".index.swap",
                     ".timeindex.cleaned", ".log.tmp", ".LOG", ".checkpoint", "", ".log\n"]),
)  # fmt: skip
NAMES = st.one_of(
    SEGMENT_NAMES,
    st.sampled_from(["partition.metadata", "leader-epoch-checkpoint", "quorum-state", "x.tmp",
                     "00000000000000000100-0000000001.checkpoint", "00000000000000000100-0000000001.checkpoint.deleted",
                     "00000000000000000100-0000000001-abc.checkpoint.part", "\u00e9t\u00e9", "a b", "A", "a"]),
    st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=12),
    st.binary(min_size=1, max_size=6).map(lambda b: os.fsdecode(b.replace(b"/", b"_").replace(b"\0", b"_"))),
).filter(lambda name: name not in (".", ".."))  # fmt: skip
KINDS = st.sampled_from(["file", "empty", "sparse", "dir", "link_file", "link_dir", "broken_link", "fifo"])
MTIMES = st.one_of(st.none(), st.integers(-(10**10), 4 * 10**18), st.just(0))
PM_CONTENT = st.one_of(
    st.builds(lambda i: write_partition_metadata(Uuid.from_hex(f"{i:032x}")), st.integers(1, 2**64)),
    st.sampled_from([b"", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", b"version: 0\ntopic_id: \xff\xfe",
                     b"version: x\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
                     b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAB\n"]),
)  # fmt: skip
DIR_NAMES = st.one_of(
    st.sampled_from(["orders-0", "orders-1", "__cluster_metadata-0", "t-0.abc-delete", "bad", ".hidden-0"]),
    st.builds(lambda t, p: f"{t}-{p}", st.text("abc._-", min_size=1, max_size=5), st.integers(0, 3)),
    st.binary(min_size=1, max_size=5).map(lambda b: os.fsdecode(b"t\xff" + b.replace(b"/", b"_").replace(b"\0", b"_"))
                                          + "-0"),
)  # fmt: skip
PARTITION = st.tuples(
    DIR_NAMES,
    st.lists(st.tuples(NAMES, KINDS, MTIMES), max_size=12, unique_by=lambda t: t[0]),
    PM_CONTENT,
    st.sampled_from(["file", "none", "fifo", "dir", "link"]),
)


def _make(path: Path, kind: str, mtime_ns: int | None, target_dir: Path) -> None:
    if kind in ("file", "empty", "sparse"):
        with open(path, "wb") as fh:
            if kind == "file":
                fh.write(b"x" * 17)
            elif kind == "sparse":
                fh.truncate(1 << 20)
    elif kind == "dir":
        path.mkdir()
    elif kind == "link_file":
        target = target_dir / f"target-{abs(hash(path.name))}"
        target.write_bytes(b"abc")
        path.symlink_to(target)
    elif kind == "link_dir":
        path.symlink_to(target_dir)
    elif kind == "broken_link":
        path.symlink_to(target_dir / "missing" / "nowhere")
    else:
        os.mkfifo(path)
    if mtime_ns is not None and kind not in ("link_file", "link_dir", "broken_link"):
        with contextlib.suppress(OSError, OverflowError, ValueError):
            os.utime(path, ns=(mtime_ns, mtime_ns))


def build_tree(root: Path, partitions: list[tuple[str, list[tuple[str, str, int | None]], bytes, str]]) -> None:
    outside = root / "outside"
    outside.mkdir()
    log_dir = root / "logdir"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text("version=1\ncluster.id=c\nnode.id=1\n")
    for dir_name, files, pm, pm_kind in partitions:
        pdir = log_dir / dir_name
        if pdir.exists():
            continue
        pdir.mkdir()
        for name, kind, mtime in files:
            if name == "partition.metadata" and pm_kind != "none":
                continue
            _make(pdir / name, kind, mtime, outside)
        pm_path = pdir / "partition.metadata"
        if pm_kind == "file":
            pm_path.write_bytes(pm)
        elif pm_kind == "fifo":
            os.mkfifo(pm_path)
        elif pm_kind == "dir":
            pm_path.mkdir()
        elif pm_kind == "link":
            (outside / f"pm-{len(dir_name)}").write_bytes(pm)
            pm_path.symlink_to(outside / f"pm-{len(dir_name)}")
    (log_dir / "linked-0").symlink_to(outside)  # a symlinked partition dir
    (log_dir / "broken-0").symlink_to(outside / "missing")
    if len(partitions) % 2:  # a root checkpoint that is a FIFO: neither lister may block on it
        os.mkfifo(log_dir / "recovery-point-offset-checkpoint")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PARTITION, min_size=1, max_size=4))
def test_generated_trees_give_equal_results(partitions: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build_tree(Path(tmp), partitions)
        assert_same_everywhere(str(Path(tmp) / "logdir"))


def test_odd_tree_by_hand(tmp_path: Path) -> None:
    """One of everything, so the common odd cases do not depend on what hypothesis draws."""
    files = [
        (f"{2**63:020d}.log", "file", None),  # offset beyond int64: the compiled lister hands the dir to Python
        ("00000000000000000000.log", "file", 1_700_000_000_123_456_789),
        ("00000000000000000000.index", "sparse", None),
        ("00000000000000000007.index", "empty", -1_500_000_000),
        ("00000000000000000009.log", "broken_link", None),
        ("00000000000000000003.snapshot", "fifo", None),
        ("x.tmp", "file", None),
        ("sub", "dir", None),
        ("lnk", "link_dir", None),
        ("\u00e9", "link_file", None),
    ]
    pm = write_partition_metadata(Uuid.from_hex("1" * 32))
    build_tree(tmp_path, [("orders-0", files[1:], b"", "fifo"), ("orders-1", files, b"", "none"),
                          ("t\udcff-0", [*files[1:3], ("\udcfe.log", "file", None)], pm, "file")])  # fmt: skip
    root = str(tmp_path / "logdir")
    _, compiled = _listings(root)
    assert set(compiled.summaries) == {"orders-0", "linked-0"}  # orders-1: big offset; t\udcff-0: not UTF-8
    assert any(e.reason == "broken symbolic link" for e in compiled.errors)
    assert_same_everywhere(root)


def test_log_dir_missing_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for root in (tmp_path / "missing", tmp_path / "file"):
        with _pure(), pytest.raises(OSError) as pure:
            local.list_log_dir(str(root), summarize=True)
        with pytest.raises(OSError) as compiled:
            local.list_log_dir(str(root), summarize=True)
        assert (type(compiled.value), str(compiled.value)) == (type(pure.value), str(pure.value))
        assert _rows(str(root), None, compiled=True) == _rows(str(root), None, compiled=False)
        assert _inventory_rows(str(root), compiled=True) == _rows(str(root), None, compiled=True)


def test_unreadable_partition_dir(tmp_path: Path) -> None:
    build_tree(tmp_path, [("orders-0", [("00000000000000000000.log", "file", None)], b"", "none")])
    locked = tmp_path / "logdir" / "orders-0"
    locked.chmod(0)
    try:
        root = str(tmp_path / "logdir")
        if os.geteuid() != 0:
            _, compiled = _listings(root)
            assert "orders-0" in compiled.failed_dirs and "orders-0" not in compiled.summaries
        assert_same_everywhere(root)  # as root the dir is readable: still equal, just not a denial
    finally:
        locked.chmod(0o755)


# -- fixtures and real log dirs --------------------------------------------------------------------------------------


def test_project_fixtures(cluster: dict[str, Path]) -> None:
    for path in sorted(cluster.values()):
        assert_same_everywhere(str(path))
    kraft = REPO / "tests" / "fixtures" / "kraft-cluster"
    for log_dir in sorted(p for p in kraft.glob("*/*") if p.is_dir()):
        assert_same_everywhere(str(log_dir))


def _real_roots() -> list[object]:
    manifest = CORPUS / "MANIFEST.json"
    if not manifest.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"real log dirs not available at {CORPUS}"))]
    repos = json.loads(manifest.read_text())["repos"]
    return [str(CORPUS / snap["corpus_path"] / root["path"]) for repo in repos for snap in repo["snapshots"]
            for root in snap["roots"]]  # fmt: skip


def test_real_log_dirs() -> None:
    roots = _real_roots()
    if roots and not isinstance(roots[0], str):
        pytest.skip(f"real log dirs not available at {CORPUS}")
    for root in roots:
        assert_same_everywhere(str(root))
