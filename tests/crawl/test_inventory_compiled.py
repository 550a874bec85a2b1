"""Format 2 written by the compiled lister (``inventory_columns`` + ``inventory_compiled``) against the pyarrow writer.

Equal means: the same schema, the same rows (pyarrow reads both files; only the filesystem's used/free bytes may
move between the two writes), and the crawl that ingests either file gives the direct crawl's rows. The pure-Python
path (no compiled lister) and the pyarrow fallback (a name that is not UTF-8) keep writing the same file.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.crawl import inventory_compiled
from pipelines.crawl.backends import local
from pipelines.crawl.inventory_file import InventoryHeader, read_inventory, write_inventory
from pipelines.crawl.local_crawl import crawl_local
from pipelines.native import load
from tests.crawl.conftest import Broker

NATIVE = load("pipelines.crawl._native_dirscan")
compiled_only = pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "inventory_columns"),
                                   reason="compiled lister not built, or KLGC_PURE_PYTHON is set")  # fmt: skip
REPO = Path(__file__).resolve().parents[2]
_VOLATILE = {"fs_used_bytes", "fs_free_bytes"}


def test_literals_equal_their_sources() -> None:
    from pipelines.crawl.inventory_parquet import META_KEY
    from pipelines.crawl.listing import PARTITION_SMALL_FILES, ROOT_SMALL_FILES, SMALL_FILE_LIMIT
    from pipelines.kafka.dir_summary import SEGMENT_TAIL_CODES

    assert tuple(n.encode() for n in PARTITION_SMALL_FILES) == inventory_compiled.PARTITION_READS
    assert tuple(n.encode() for n in ROOT_SMALL_FILES) == inventory_compiled.ROOT_READS
    assert inventory_compiled.READ_LIMIT == SMALL_FILE_LIMIT
    assert inventory_compiled.SEGMENT_TAIL_CODES == SEGMENT_TAIL_CODES
    assert inventory_compiled.META_KEY == META_KEY


@compiled_only
@pytest.mark.parametrize("portable", [False, True])
def test_sha256_is_hashlibs(portable: bool) -> None:
    """The fingerprint's digest, with the SHA extensions where the CPU has them and in plain C."""
    assert NATIVE is not None
    for length in [*range(0, 260), 1000, 4096, 65_537]:
        data = os.urandom(length)
        assert NATIVE.sha256_hexdigest(data, portable) == hashlib.sha256(data).hexdigest(), length


@contextmanager
def _pyarrow_writer() -> Iterator[None]:
    """The compiled lister without ``inventory_columns``: write_inventory writes with pyarrow (as before)."""
    saved = local._native
    local._native = types.SimpleNamespace(scan_dir=saved.scan_dir) if saved is not None else None
    try:
        yield
    finally:
        local._native = saved


def _rows(path: Path) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in _VOLATILE} for row in pq.read_table(path).to_pylist()]


def _assert_same_file(log_dirs: list[str], tmp_path: Path) -> Path:
    compiled, reference = tmp_path / "compiled.parquet", tmp_path / "pyarrow.parquet"
    got = write_inventory(log_dirs, str(compiled), broker_id=7)
    with _pyarrow_writer():
        want = write_inventory(log_dirs, str(reference), broker_id=7)
    assert (got.format, got.records, got.failed) == (want.format, want.records, want.failed)
    assert pq.ParquetFile(compiled).metadata.created_by.startswith("kafka-logdir-gc")  # the compiled writer ran
    assert pq.read_schema(compiled).remove_metadata() == pq.read_schema(reference).remove_metadata()
    assert _rows(compiled) == _rows(reference)
    header = read_inventory(str(compiled)).header
    assert isinstance(header, InventoryHeader) and (header.version, header.broker_id) == (2, 7)
    assert header.log_dirs == tuple(log_dirs)
    return compiled


@compiled_only
def test_same_file_as_pyarrow_on_the_fixtures(cluster: dict[str, Path], tmp_path: Path) -> None:
    roots = [str(p) for p in sorted(cluster.values())]
    kraft = sorted(str(p) for p in (REPO / "tests" / "fixtures" / "kraft-cluster").glob("*/*"))
    _assert_same_file([*roots, *kraft, str(tmp_path / "missing"), f"file://{roots[0]}"], tmp_path)
    out = _assert_same_file(roots[:2], tmp_path)
    _assert_crawl_rows(Broker(7, tuple(roots[:2]), {}), out)


@compiled_only
def test_odd_entries_and_reads(cluster: dict[str, Path], tmp_path: Path) -> None:
    """Broken links, FIFOs, subdirectories, a small file larger than the read limit (read by Python), an unreadable
    partition dir (when not root), an empty partition dir and an empty log dir."""
    d0 = cluster["b1-d0"]
    orders = d0 / "orders-0"
    os.symlink("nowhere", orders / "00000000000000000009.log")
    os.symlink("nowhere", d0 / "dangling")
    os.mkfifo(orders / "00000000000000000003.snapshot")
    (d0 / "cleaner-offset-checkpoint").unlink(missing_ok=True)
    os.mkfifo(d0 / "cleaner-offset-checkpoint")
    (orders / "sub").mkdir()
    (orders / "leader-epoch-checkpoint").write_bytes(b"0\n" * (inventory_compiled.READ_LIMIT // 2 + 1))
    (d0 / "empty-0").mkdir()
    (tmp_path / "empty-logdir").mkdir()
    locked = d0 / "locked-0"
    locked.mkdir()
    locked.chmod(0)
    try:
        out = _assert_same_file([str(d0), str(tmp_path / "empty-logdir")], tmp_path)
        _assert_crawl_rows(Broker(7, (str(d0), str(tmp_path / "empty-logdir")), {}), out)
    finally:
        locked.chmod(0o755)


@compiled_only
@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs /proc/self/mem")
def test_a_read_that_fails_is_recorded(cluster: dict[str, Path], tmp_path: Path) -> None:
    """A regular file whose read fails (EIO, even for root: /proc/self/mem) is recorded as the pyarrow writer
    records it: a partition dir's read_errors, a root entry's stage ``read``."""
    d0 = cluster["b1-d0"]
    for path in (d0 / "orders-1" / "partition.metadata", d0 / "replication-offset-checkpoint"):
        path.unlink(missing_ok=True)
        os.symlink("/proc/self/mem", path)
    rows = _rows(_assert_same_file([str(d0)], tmp_path))
    dirs = {r["name"]: r for r in rows if r["t"] == "dir"}
    assert [(e["name"], e["error_class"]) for e in dirs["orders-1"]["read_errors"]] == [
        ("partition.metadata", "OSError")
    ]
    entries = {r["name"]: r for r in rows if r["t"] == "entry"}
    assert (entries["replication-offset-checkpoint"]["stage"], entries["replication-offset-checkpoint"]["data"]) == (
        "read", None,
    )  # fmt: skip
    # read back, the dir keeps its summary (the reader once filed it under the unread file's name) and the crawl
    # gives the direct crawl's rows; only the error text differs: a failed read() names no file, the recorded
    # error (class and reason) is rebuilt with the file's path
    listing = read_inventory(str(tmp_path / "compiled.parquet")).sections[0].listing
    assert listing is not None and "orders-1" in listing.summaries
    broker = Broker(7, (str(d0),), {})
    direct = crawl_local([broker], run_id="r", cluster="c")
    ingested = crawl_local([replace(broker, inventory=str(tmp_path / "compiled.parquet"))], run_id="r", cluster="c")
    for table in ("log_dirs", "partition_dirs"):
        got, want = (sorted(map(repr, _drop(_unpathed(getattr(r, table), str(d0))))) for r in (ingested, direct))
        assert got == want, table


def _unpathed(rows: list[dict], root: str) -> list[dict]:
    """Rows with each problem's ``: '<path under root>'`` suffix (what a rebuilt error adds) cut."""
    import re

    pattern = re.compile(r": '" + re.escape(root) + r"/[^']*'")
    return [{**r, "problems": [pattern.sub("", p) for p in r.get("problems") or []]} for r in rows]


def _assert_crawl_rows(broker: Broker, inventory: Path) -> None:
    """The crawl that ingests ``inventory`` gives the rows of the crawl that lists the broker's log dirs."""
    direct = crawl_local([broker], run_id="r", cluster="c")
    ingested = crawl_local([replace(broker, inventory=str(inventory))], run_id="r", cluster="c")
    assert ingested.run_row["source"] == "inventory"
    assert direct.partition_dirs
    for table in ("log_dirs", "partition_dirs", "errors"):
        assert sorted(map(repr, _drop(getattr(ingested, table)))) == sorted(map(repr, _drop(getattr(direct, table))))


def _drop(rows: list[dict]) -> list[tuple]:
    return [tuple((k, v) for k, v in r.items() if k not in _VOLATILE | {"crawled_at", "at"}) for r in rows]


@compiled_only
def test_a_name_that_is_not_utf8_goes_to_the_pyarrow_writer(cluster: dict[str, Path], tmp_path: Path) -> None:
    root = cluster["b2-d0"]
    (root / "orders-0" / os.fsdecode(b"x\xfe.tmp")).write_bytes(b"")
    assert inventory_compiled.row_groups([str(root)]) is None
    out = tmp_path / "inv.parquet"
    result = write_inventory([str(root)], str(out), broker_id=2)
    assert result.format == 2 and pq.ParquetFile(out).metadata.created_by.startswith("parquet-cpp")


def test_without_the_compiled_lister_pyarrow_writes_it(cluster: dict[str, Path], tmp_path: Path) -> None:
    """Pure Python (what KLGC_PURE_PYTHON=1 or a host without a C compiler runs): the same rows as ever."""
    saved = local._native
    local._native = None
    try:
        assert inventory_compiled.compiled_lister() is None
        assert inventory_compiled.write([str(cluster["b1-d0"])], str(tmp_path / "x.parquet")) is None
        out = tmp_path / "pure.parquet"
        write_inventory([str(cluster["b1-d0"])], str(out), broker_id=1)
    finally:
        local._native = saved
    assert pq.ParquetFile(out).metadata.created_by.startswith("parquet-cpp")
    _assert_crawl_rows(Broker(1, (str(cluster["b1-d0"]),), {}), out)


def test_format_1_is_not_the_compiled_writers(cluster: dict[str, Path], tmp_path: Path) -> None:
    assert inventory_compiled.write([str(cluster["b1-d0"])], str(tmp_path / "x.jsonl")) is None
    assert inventory_compiled.write([str(cluster["b1-d0"])], str(tmp_path / "x.bin"), format=1) is None
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.bin").exists()


def _command_imports(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The modules ``logdir-gc inventory ARGS`` imports as the console command (``python -m``: fast exit armed)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipelines.cli.main", "inventory", *args],
                          capture_output=True, text=True, cwd=REPO, check=False, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time")}


@compiled_only
def test_the_command_imports_neither_pyarrow_nor_pydantic(cluster: dict[str, Path], tmp_path: Path) -> None:
    """The broker-side command's start-up: the compiled writer needs neither (0.3 s of imports between them)."""
    out = tmp_path / "inv.parquet"
    imported = _command_imports([str(cluster["b1-d0"]), "--out", str(out), "--broker-id", "1"])
    assert "pipelines.crawl.inventory_compiled" in imported
    assert not {m for m in imported if m.split(".")[0] in ("pyarrow", "pydantic", "numpy", "pandas")}
    assert read_inventory(str(out)).header.broker_id == 1


@pytest.mark.parametrize("name", ["inv.parquet", "inv.jsonl"])
def test_the_pure_python_command_writes_without_pandas(cluster: dict[str, Path], tmp_path: Path, name: str) -> None:
    """With the pyarrow writer (here: KLGC_PURE_PYTHON=1) the console command answers pyarrow's probe for pandas
    with "not installed" instead of importing it."""
    out = tmp_path / name
    imported = _command_imports([str(cluster["b1-d0"]), "--out", str(out)], {**os.environ, "KLGC_PURE_PYTHON": "1"})
    assert not {m for m in imported if m.startswith("pandas.")}
    if name.endswith(".parquet"):
        assert "pyarrow" in imported and pq.ParquetFile(out).metadata.created_by.startswith("parquet-cpp")
    assert read_inventory(str(out)).sections[0].listing is not None


@compiled_only
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_spark_reads_the_compiled_file(spark, cluster: dict[str, Path], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Spark's own Parquet reader (parquet-mr) reads the hand-framed file to the rows pyarrow reads."""
    out = _assert_same_file([str(p) for p in sorted(cluster.values())], tmp_path)

    def plain(v: object) -> object:
        if isinstance(v, list):
            return [plain(x) for x in v]
        if hasattr(v, "asDict"):
            return {k: plain(x) for k, x in v.asDict().items()}
        return bytes(v) if isinstance(v, bytearray) else v

    got = [{k: plain(v) for k, v in row.asDict().items()} for row in spark.read.parquet(str(out)).collect()]
    assert got == pq.read_table(out).to_pylist()


_FD_LIMITED = """
import io, os, resource, sys
import pyarrow.parquet as pq
from pipelines.crawl import inventory_compiled, inventory_parquet as v2
from pipelines.crawl.backends import local

root, extra = sys.argv[1], int(sys.argv[2])
free = os.open(os.devnull, os.O_RDONLY)
os.close(free)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)


def limited(fn):
    resource.setrlimit(resource.RLIMIT_NOFILE, (free + extra, hard))
    try:
        return fn()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def pyarrow_rows():
    cols = v2.new_columns()

    def rows():
        listing = local.list_log_dir(root, summarize=True)
        v2.add_listing(cols, 0, listing)

    limited(rows)
    out = io.BytesIO()
    v2.write_table(cols, "{}", out)
    return pq.read_table(io.BytesIO(out.getvalue())).to_pylist()


groups, failed = limited(lambda: inventory_compiled.row_groups([root]))
out = io.BytesIO()
inventory_compiled.write_file(groups, "{}", out)
compiled = pq.read_table(io.BytesIO(out.getvalue())).to_pylist()
reference = pyarrow_rows()
for rows in (compiled, reference):
    for row in rows:
        row.pop("fs_used_bytes"), row.pop("fs_free_bytes")
assert compiled == reference, [(a, b) for a, b in zip(compiled, reference) if a != b][:3]
print(sorted({(r["t"], r["stage"], r["error_class"]) for r in compiled if r["error_class"]}), flush=True)
os._exit(0)  # pyarrow's threads now and then abort a normal exit after the limit games ("terminate called")
"""


@compiled_only
@pytest.mark.parametrize("extra", [1, 2])
def test_out_of_file_descriptors_is_recorded_alike(cluster: dict[str, Path], extra: int) -> None:
    """A partition dir that cannot be opened and small files that cannot be read (the process at its open-file
    limit: EMFILE, which even root gets) are recorded by the compiled writer as by the pyarrow writer."""
    proc = subprocess.run([sys.executable, "-c", _FD_LIMITED, str(cluster["b1-d0"]), str(extra)], cwd=REPO,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    if extra == 1:  # no partition dir can be opened
        assert "('dir', 'list', 'OSError')" in proc.stdout and "('error', 'list', 'OSError')" in proc.stdout
