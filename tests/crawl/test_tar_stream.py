"""The fast tar reader of the SFTP prefetch equals the standard library's ``tarfile`` on what tar writes."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.crawl.tar_stream import read_small_files


def with_tarfile(data: bytes) -> dict[str, bytes]:
    """What ``sftp._read_tar`` kept before the fast reader: regular members and hard links, until an error."""
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                if member.islnk():
                    target = out.get(member.linkname.removeprefix("./"))
                    if target is not None:
                        out[name] = target
                    continue
                fh = tar.extractfile(member) if member.isfile() else None
                if fh is not None:
                    out[name] = fh.read()
    except (tarfile.TarError, EOFError):
        pass
    return out


def build(members: list[tuple[str, bytes]], fmt: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


names = st.lists(
    st.text(st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)), min_size=1, max_size=130),
    min_size=1, max_size=6, unique=True,
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=names, sizes=st.lists(st.integers(0, 1500), min_size=6, max_size=6),
       fmt=st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT]))  # fmt: skip
def test_equals_tarfile_on_generated_archives(names: list[str], sizes: list[int], fmt: int) -> None:
    members = [(f"./d{i}/{n}", os.urandom(sizes[i])) for i, n in enumerate(names)]
    try:
        data = build(members, fmt)
    except ValueError:  # ustar cannot hold every name: nothing to compare
        return
    fast = read_small_files(data)
    assert fast == with_tarfile(data)
    assert fast == {name.removeprefix("./"): content for name, content in members}


@pytest.mark.parametrize("cut", [0, 100, 512, 700, 1024, 1536, 2048, 3000])
def test_truncated_stream_keeps_the_whole_members(cut: int) -> None:
    data = build([("./a/partition.metadata", b"x" * 600), ("./b/partition.metadata", b"y" * 10)], tarfile.GNU_FORMAT)
    assert read_small_files(data[:cut]) == with_tarfile(data[:cut])


def test_damaged_header_ends_the_stream_like_tarfile() -> None:
    data = bytearray(build([("./a/x", b"1"), ("./b/y", b"2"), ("./c/z", b"3")], tarfile.GNU_FORMAT))
    data[1024 + 10] ^= 0xFF  # inside the second member's name: its checksum no longer matches
    assert read_small_files(bytes(data)) == with_tarfile(bytes(data)) == {"a/x": b"1"}


def test_unknown_member_type_asks_for_the_fallback() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("./sparse")
        info.type = tarfile.GNUTYPE_SPARSE
        tar.addfile(info)
    assert read_small_files(buf.getvalue()) is None


@pytest.mark.skipif(shutil.which("tar") is None, reason="no tar binary")
@pytest.mark.parametrize("fmt", ["gnu", "pax", "ustar", "oldgnu"])
def test_equals_tarfile_on_what_gnu_tar_writes(tmp_path: Path, fmt: str) -> None:
    """Long names, a hard link (no --hard-dereference), a directory and a FIFO, as the remote command meets them."""
    root = tmp_path / "logdir"
    long_dir = root / (("t" * (90 if fmt == "ustar" else 200)) + "-0")  # ustar: the dir goes to the prefix field
    long_dir.mkdir(parents=True)
    (long_dir / "partition.metadata").write_bytes(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    (root / "meta.properties").write_bytes(b"node.id=1\n")
    os.link(root / "meta.properties", root / "recovery-point-offset-checkpoint")
    (root / "sub").mkdir()
    os.mkfifo(root / "fifo")
    listed = [p.relative_to(root) for p in sorted(root.rglob("*"))]
    files = b"".join(b"./" + str(p).encode() + b"\0" for p in listed)
    proc = subprocess.run(["tar", "-c", f"--format={fmt}", "--null", "--no-recursion", "-T", "-", "-f", "-"],
                          cwd=root, input=files, capture_output=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    fast = read_small_files(proc.stdout)
    assert fast == with_tarfile(proc.stdout)
    assert fast is not None and fast["meta.properties"] == fast["recovery-point-offset-checkpoint"] == b"node.id=1\n"
    assert fast[f"{long_dir.name}/partition.metadata"].startswith(b"version: 0")
