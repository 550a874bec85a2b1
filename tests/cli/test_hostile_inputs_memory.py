"""Hostile inputs cost bounded memory and give one line with a documented exit code (issue 27 point 4).

On a synthetic broker host (``tests/execute/exec_world``: log dir, KRaft metadata log, an approved, signed plan in a
delta-rs warehouse) each hostile input is planted in turn, and ``metadata show``, ``inspect``, ``apply`` (dry run)
and ``prestart`` run as child processes under an address-space limit (``RLIMIT_AS``, a safety net for the machine);
each child's peak RSS (``wait4``) must stay below 512 MiB, with no traceback, no ``MemoryError`` or
``RecursionError``, and no echo of the input. The hostile inputs:

- a metadata-log batch of a few KiB (zstd, gzip) or MiB (lz4) expanding to GiBs of zeros, and a snappy batch whose
  length header declares 4 GiB (the attack: a 32 KiB batch took these commands to 2.1-2.3 GB);
- an 8 GiB sparse ``meta.properties`` / ``partition.metadata`` (the attack: a MemoryError traceback), and a 100 MiB
  real one (the attack: echoed into 200 MB of output);
- an 8 GiB sparse ``allowed_signers`` (exit 3: a file above its size limit);
- a config whose YAML aliases expand to 9^9 nodes, and one nested 10,000 levels deep.
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from crc32c import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kafka"))

from exec_world import World, build_world
from test_bounded_decompression import _zeros_bomb

from pipelines.kafka.compression import Compression
from pipelines.kafka.record_batch import HEADER, HEADER_SIZE, LOG_OVERHEAD

REPO = Path(__file__).resolve().parents[2]
PEAK_RSS_LIMIT_MIB = 512
ADDRESS_SPACE_LIMIT = 6 << 30  # Python + pyarrow + delta-rs reserve far more address space than they touch
MIB = 1 << 20


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    peak_mib: int


def run_limited(args: list[str], cwd: Path) -> Run:
    """``logdir-gc ARGS`` as a child under ``RLIMIT_AS``; its peak RSS (and its own children's) from ``wait4``."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PYTHONPATH"] = str(REPO)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli.main", *args], cwd=cwd, env=env,
                                stdout=out, stderr=err, preexec_fn=limit)  # fmt: skip
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                   usage.ru_maxrss // 1024)  # fmt: skip


def hostile_batch(codec: Compression, payload: bytes, base_offset: int, count: int = 1000) -> bytes:
    """A v2 batch with a valid CRC whose compressed records are ``payload``, as given."""
    out = bytearray(HEADER.pack(base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload), 1, 2, 0, int(codec),
                                count - 1, 0, 0, -1, -1, -1, count))  # fmt: skip
    out += payload
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def _segment(w: World) -> Path:
    return Path(w.config.metadata.source) / f"{0:020d}.log"


def _append_bomb(codec: Compression, size: int) -> Callable[[World], None]:
    def plant(w: World) -> None:
        with open(_segment(w), "ab") as f:
            f.write(hostile_batch(codec, _zeros_bomb(codec, size), 11))

    return plant


def _snappy_declaring_4_gib(w: World) -> None:
    raw = b"\xff\xff\xff\xff\x0f" + b"\x00" * 32 * 1024  # a raw snappy block whose length header says 4 GiB - 1
    with open(_segment(w), "ab") as f:
        f.write(hostile_batch(Compression.SNAPPY, raw, 11))


def _sparse(path: Path, size: int, head: bytes) -> None:
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.seek(0)
        f.write(head)
        f.truncate(size)


def _meta_properties(size: int, sparse: bool) -> Callable[[World], None]:
    def plant(w: World) -> None:
        path = w.log_dir / "meta.properties"
        head = path.read_bytes() + b"cluster.id="
        if sparse:
            _sparse(path, size, head)
        else:
            path.write_bytes(head + b"Q" * (size - len(head)))

    return plant


def _partition_metadata(size: int, sparse: bool) -> Callable[[World], None]:
    def plant(w: World) -> None:
        path = w.log_dir / "gone-0" / "partition.metadata"
        head = b"version: 0\ntopic_id: "
        if sparse:
            _sparse(path, size, head)
        else:
            path.write_bytes(head + b"Q" * (size - len(head)))

    return plant


def _config(body: str) -> Callable[[World], None]:
    def plant(w: World) -> None:
        cfg = w.root.parent / "config.yaml"
        cfg.write_text(cfg.read_text() + body)

    return plant


def _allowed_signers_8_gib(w: World) -> None:
    path = Path(w.config.executor.allowed_signers)
    _sparse(path, 8 << 30, path.read_bytes())


def _alias_bomb() -> str:
    lines = ["extra_bomb:", '  l0: &l0 [' + ", ".join(['"lol"'] * 9) + "]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


HOSTILE: dict[str, Callable[[World], None]] = {
    "zstd-bomb": _append_bomb(Compression.ZSTD, 2048 * MIB),
    "gzip-bomb": _append_bomb(Compression.GZIP, 1024 * MIB),
    "lz4-bomb": _append_bomb(Compression.LZ4, 1024 * MIB),
    "snappy-declares-4GiB": _snappy_declaring_4_gib,
    "meta.properties-8GiB-sparse": _meta_properties(8 << 30, sparse=True),
    "meta.properties-100MiB": _meta_properties(100 * MIB, sparse=False),
    "partition.metadata-8GiB-sparse": _partition_metadata(8 << 30, sparse=True),
    "partition.metadata-100MiB": _partition_metadata(100 * MIB, sparse=False),
    "allowed_signers-8GiB-sparse": _allowed_signers_8_gib,
    "config-alias-bomb": _config(_alias_bomb()),
    "config-10k-deep": _config("extra_deep: " + "[" * 10_000 + "]" * 10_000 + "\n"),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_hostile_input_costs_bounded_memory_and_one_line(tmp_path: Path, hostile: str) -> None:
    w = build_world(tmp_path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(w.config.model_dump(mode="json")))
    HOSTILE[hostile](w)
    runs = {
        "metadata show": run_limited(["metadata", "show", w.config.metadata.source], tmp_path),
        "inspect": run_limited(["inspect", str(w.log_dir)], tmp_path),
        "apply": run_limited(["apply", "plan-1", "--broker", "1", "--config", str(cfg), "--dry-run"], tmp_path),
        "prestart": run_limited(["prestart", "--broker", "1", "--config", str(cfg), "--json"], tmp_path),
    }
    for name, run in runs.items():
        where = f"{hostile} / {name}: exit {run.code}, {run.peak_mib} MiB, stderr {run.err[-2000:]!r}"
        assert run.peak_mib < PEAK_RSS_LIMIT_MIB, where
        for bad in ("Traceback", "MemoryError", "RecursionError"):
            assert bad not in run.err and bad not in run.out, where
        assert len(run.out) + len(run.err) < 64 * 1024, where  # nothing of the input is echoed
        assert len(run.err.strip().splitlines()) <= 1, where
    expected = EXPECTED[hostile]
    assert {name: run.code for name, run in runs.items()} == expected
    SEEN[hostile](runs)


def _metadata_refused(runs: dict[str, Run]) -> None:
    """The batch is an error naming its segment and offset; the image is incomplete, so nothing is applied."""
    show = runs["metadata show"].out
    assert "INCOMPLETE" in show and f"{0:020d}.log" in show and "batch at offset 11" in show
    assert "would_quarantine" not in runs["apply"].out and '"quarantined_path": "' not in runs["prestart"].out


def _meta_refused(runs: dict[str, Run]) -> None:
    assert "limit for meta_properties" in runs["inspect"].out
    assert "65536-byte limit for a meta properties file" in runs["apply"].err


def _pm_refused(runs: dict[str, Run]) -> None:
    assert "limit for partition_metadata" in runs["inspect"].out
    skipped = [line for line in runs["apply"].out.splitlines() if "gone-0" in line]
    assert skipped and "skipped" in skipped[0] and "larger than" in skipped[0]


def _trust_refused(runs: dict[str, Run]) -> None:
    assert "larger than the 4194304-byte limit for a trust file" in runs["apply"].err
    assert "larger than the 4194304-byte limit for a trust file" in runs["prestart"].out


def _config_refused(runs: dict[str, Run]) -> None:
    assert "refused: YAML" in runs["apply"].err and "refused: YAML" in runs["prestart"].out


SEEN: dict[str, Callable[[dict[str, Run]], None]] = {
    "zstd-bomb": _metadata_refused,
    "gzip-bomb": _metadata_refused,
    "lz4-bomb": _metadata_refused,
    "snappy-declares-4GiB": _metadata_refused,
    "meta.properties-8GiB-sparse": _meta_refused,
    "meta.properties-100MiB": _meta_refused,
    "partition.metadata-8GiB-sparse": _pm_refused,
    "partition.metadata-100MiB": _pm_refused,
    "allowed_signers-8GiB-sparse": _trust_refused,
    "config-alias-bomb": _config_refused,
    "config-10k-deep": _config_refused,
}

_REFUSED_RUN = {"metadata show": 0, "inspect": 0, "apply": 6, "prestart": 0}
"""``metadata show`` and ``inspect`` report the problem and exit 0 (an incomplete image, an error row); ``apply`` skips
what it cannot prove (6); ``prestart`` always exits 0."""
_BAD_CONFIG = {"metadata show": 0, "inspect": 0, "apply": 4, "prestart": 0}
_BAD_TRUST = {"metadata show": 0, "inspect": 0, "apply": 3, "prestart": 0}
EXPECTED: dict[str, dict[str, int]] = {name: _BAD_CONFIG if name.startswith("config") else _REFUSED_RUN
                                       for name in HOSTILE} | {"allowed_signers-8GiB-sparse": _BAD_TRUST}
