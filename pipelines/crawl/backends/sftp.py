"""``sftp://`` log dirs: ONE remote command per log dir over SSH, served as a pre-listed filesystem.

The command (POSIX sh on the broker host, GNU ``find``/``tar``/``stat``) writes to stdout, in order:

1. ``find -L . -mindepth 1 -maxdepth 2 -printf '<link>\\t%y\\t%s\\t%T@\\t%P\\0'`` — every entry to depth 2,
   links followed (``<link>`` is 1 for a symbolic link, from ``-xtype l``), NUL-terminated;
2. an empty record (one extra NUL) ending the listing;
3. ``stat -f -c '%S %b %f %a' .`` — block size, blocks, free, available — then a NUL;
4. a ``tar`` stream of just the small files the inventory reads (``partition.metadata``, ``meta.properties``,
   checkpoints, ``.kafka_cleanshutdown``), each under 1 MiB.

The whole stream goes through ``gzip -1`` when the host has it (a tenth of the bytes: a tar header is 512 bytes
for a 60-byte ``partition.metadata``; less to encrypt, send and decrypt); the reader knows it by gzip's magic.

``find``/``tar`` complaints on stderr (``Permission denied`` and the like) become listing or read errors. A file
the scan reads that was not prefetched is read lazily over SFTP on the same connection. When the remote ``find``
has no ``-printf`` (BusyBox), :class:`NoGnuFind` is raised and the registry falls back to the generic fsspec
backend over ``sshfs``.

Not guaranteed: the listing is one consistent pass of ``find``, not a snapshot; a file rewritten between the
listing and the ``tar`` may show a size that differs from its prefetched content.
"""

from __future__ import annotations

import io
import re
import select
import shlex
import tarfile
import zlib
from collections.abc import Collection, Mapping
from typing import Any

from pipelines.crawl.backends.ssh_options import SshTarget, ssh_target
from pipelines.crawl.listing import (
    BROKEN_LINK,
    PARTITION_SMALL_FILES,
    ROOT_SMALL_FILES,
    SMALL_FILE_LIMIT,
    FsTotals,
    ListedEntry,
    Listing,
    ListingError,
    error_class_for_reason,
)
from pipelines.crawl.tar_stream import read_small_files
from pipelines.errors import PipelinesError
from pipelines.kafka.dir_summary import summarize_entries
from pipelines.kafka.fast_init import fast_constructor
from pipelines.kafka.listing import FileEntry

SCHEMES: tuple[str, ...] = ("sftp", "ssh")
_CD_FAILED = 97
_KINDS = {"f": "file", "d": "directory"}
_GZIP_MAGIC = b"\x1f\x8b"
_new_listed = fast_constructor(ListedEntry)
_new_file = fast_constructor(FileEntry)
_STDERR = re.compile(r"^(find|tar): (?:'(.*?)'|(\S.*?)): (.+)$")


class NoGnuFind(PipelinesError):
    """The remote ``find`` does not support ``-printf``; use the generic SFTP listing instead."""


def remote_command(root: str) -> str:
    """The shell command listing ``root`` (see module docstring)."""
    wanted = [f"-path ./{shlex.quote(n)}" for n in ROOT_SMALL_FILES]
    wanted += [f"-path './*/{n}'" for n in PARTITION_SMALL_FILES]
    select_expr = " -o ".join(wanted)
    kib = SMALL_FILE_LIMIT // 1024
    return (
        f"cd -- {shlex.quote(root)} || exit {_CD_FAILED}; LC_ALL=C; export LC_ALL; "
        "if command -v gzip >/dev/null 2>&1; then z='gzip -1'; else z=cat; fi; { "
        r"find -L . -mindepth 1 -maxdepth 2 \( -xtype l -printf '1\t%y\t%s\t%T@\t%P\0' -o "
        r"-printf '0\t%y\t%s\t%T@\t%P\0' \); printf '\0'; "
        r"stat -f -c '%S %b %f %a' . 2>/dev/null; printf '\0'; "
        f"find -L . -mindepth 1 -maxdepth 2 -type f -size -{kib + 1}k \\( {select_expr} \\) -print0 2>/dev/null"
        " | tar -c -h --hard-dereference --null --no-recursion -T - -f -; } | $z"
    )


def _mtime_ns(text: str) -> int:
    """``%T@`` (``1700000000.1234567890``) to integer nanoseconds without float rounding."""
    whole, _, frac = text.partition(".")
    if len(frac) >= 9 and whole.isdigit():  # GNU find's usual form: ten fractional digits
        return int(whole + frac[:9])
    sign = -1 if whole.startswith("-") else 1
    return int(whole) * 1_000_000_000 + sign * int((frac + "000000000")[:9])


def parse_output(root: str, stdout: bytes, stderr: str, *, summarize: bool = False) -> Listing:
    """Turn the command's output into a Listing (pure; tested without SSH). Gzip'd output is unpacked first.

    ``summarize``: sum each partition dir up while parsing (``Listing.summaries``; ``entries`` then holds only the
    summaries' ``others``), as the local backend's compiled lister does: no per-file entries for segment files.
    """
    if stdout.startswith(_GZIP_MAGIC):
        stdout = _gunzip(stdout, root)
    listing = Listing(root=root)
    children: dict[str, list[FileEntry]] | None = {} if summarize else None
    odd_parents: set[str] = set()
    if stdout.startswith(b"\0"):
        pos = 1  # nothing listed: the end marker comes first
    else:
        end = stdout.find(b"\0\0")  # the last record's NUL, then the empty record's
        if end < 0:
            raise OSError(f"truncated listing from remote find under {root}")
        _add_records(listing, stdout[:end].decode("utf-8", "surrogateescape").split("\0"), children, odd_parents)
        pos = end + 2
    end = stdout.find(b"\0", pos)
    stat_text = stdout[pos:end if end >= 0 else len(stdout)].decode("ascii", "replace").split()
    if len(stat_text) == 4 and all(t.isdigit() for t in stat_text):
        listing.totals = FsTotals.from_blocks(*(int(t) for t in stat_text))
    else:
        listing.errors.append(ListingError("", "statvfs", "OSError", "remote stat -f gave no totals"))
    if end >= 0 and end + 1 < len(stdout):
        _read_tar(listing, stdout[end + 1 :])
    _read_stderr(listing, stderr)
    if children is not None:
        _summarize(listing, children, odd_parents)
    return listing


def _gunzip(data: bytes, root: str) -> bytes:
    """Whatever decompresses; a cut stream keeps its whole part (the parser then reports what is missing)."""
    unpacker = zlib.decompressobj(wbits=31)
    try:
        return unpacker.decompress(data) + unpacker.flush()
    except zlib.error as exc:
        raise OSError(f"corrupt gzip stream from the remote listing under {root}: {exc}") from None


def _add_records(
    listing: Listing, records: list[str], children: dict[str, list[FileEntry]] | None, odd_parents: set[str]
) -> None:
    """One ``<link>\\t%y\\t%s\\t%T@\\t%P`` record a listed entry; this loop runs once per remote file.

    With ``children``, an entry inside a partition dir goes to its dir's ``FileEntry`` list instead; a non-regular
    one also waits in ``listing.entries`` (its dir in ``odd_parents``) until ``_summarize`` decides whether the
    listing keeps it.
    """
    entries = listing.entries
    for record in records:
        link, type_char, size, mtime, rel = record.split("\t", 4)
        if type_char == "f":
            if children is not None:
                parent, slash, name = rel.partition("/")
                if slash:
                    kid = _new_file(name, int(size), _mtime_ns(mtime), False, link == "1")
                    kids = children.get(parent)
                    if kids is None:
                        children[parent] = [kid]
                    else:
                        kids.append(kid)
                    continue
            entry = _new_listed(rel, "file", int(size), _mtime_ns(mtime), link == "1")
        elif type_char == "l":  # under -L only a broken (or looping) link is still a link
            listing.errors.append(ListingError(rel, "list", "FileNotFoundError", BROKEN_LINK))
            entry = _new_listed(rel, "other", 0, 0, True)
        else:
            entry = _new_listed(rel, _KINDS.get(type_char, "other"), 0, _mtime_ns(mtime), link == "1")
        entries[rel] = entry
        if children is not None and "/" in rel:
            parent, _, name = rel.partition("/")
            odd_parents.add(parent)
            children.setdefault(parent, []).append(
                _new_file(name, entry.size, entry.mtime_ns, entry.kind == "directory", entry.islink)
            )


def _summarize(listing: Listing, children: dict[str, list[FileEntry]], odd_parents: set[str]) -> None:
    """Sum up every listed partition dir and keep in ``listing.entries`` only its entries that are not segment
    files, as the local backend's compiled lister does.

    A dir ``find`` could not list (in ``failed_dirs``) keeps all its entries and gets no summary: the scan then
    reports it unreadable, as it does without summaries."""
    entries, summaries = listing.entries, listing.summaries
    for parent, kids in children.items():
        if parent in listing.failed_dirs:
            kept = kids
        else:
            summary = summaries[parent] = summarize_entries(kids)
            kept = summary.others
            if parent in odd_parents:  # drop the waiting non-regular entries that were summed up (segment names)
                names = {e.name for e in kept}
                for e in kids:
                    if e.name not in names:
                        entries.pop(f"{parent}/{e.name}", None)
        for e in kept:
            rel = f"{parent}/{e.name}"
            if rel not in entries:  # a regular file
                entries[rel] = _new_listed(rel, "file", e.size, e.mtime_ns, e.is_symlink)


def _read_tar(listing: Listing, data: bytes) -> None:
    files = read_small_files(data)
    if files is not None:
        listing.contents.update(files)
        return
    try:  # a header the fast reader does not handle: the standard library's reader
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                if member.islnk():  # a hard link to an earlier member (older tar without --hard-dereference)
                    target = listing.contents.get(member.linkname.removeprefix("./"))
                    if target is not None:
                        listing.contents[name] = target
                    continue
                fh = tar.extractfile(member) if member.isfile() else None
                if fh is not None:
                    listing.contents[name] = fh.read()
    except (tarfile.TarError, EOFError):
        pass  # whatever came through is kept; the rest is read lazily


def _os_error(error_class: str, reason: str, path: str) -> OSError:
    cls: type[OSError] = {
        "PermissionError": PermissionError,
        "FileNotFoundError": FileNotFoundError,
        "NotADirectoryError": NotADirectoryError,
        "IsADirectoryError": IsADirectoryError,
    }.get(error_class, OSError)
    return cls(reason, path)


def _read_stderr(listing: Listing, stderr: str) -> None:
    for line in stderr.splitlines():
        match = _STDERR.match(line.strip())
        if not match:
            continue
        tool, path = match.group(1), (match.group(2) or match.group(3) or "")
        reason = match.group(4)
        rel = path.removeprefix("./").removeprefix(".")
        if tool == "tar":
            reason = reason.removeprefix("Cannot open: ")
            if reason.startswith("Exiting") or rel not in listing.entries:
                continue
            listing.read_errors[rel] = _os_error(error_class_for_reason(reason), reason, listing.abs_path(rel))
        else:
            error_class = error_class_for_reason(reason)
            listing.errors.append(ListingError(rel, "list", error_class, reason))
            entry = listing.entries.get(rel)
            if entry is not None and entry.kind == "directory":
                listing.failed_dirs[rel] = _os_error(error_class, reason, listing.abs_path(rel))


def _connect(target: SshTarget) -> Any:
    import paramiko

    client = paramiko.SSHClient()
    if target.known_hosts:
        client.load_host_keys(target.known_hosts)
    else:
        client.load_system_host_keys()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(**target.paramiko_kwargs())
    return client


def run_command(client: Any, command: str, timeout: float) -> tuple[int, bytes, bytes]:
    """Run one command, draining stdout and stderr together (no window stall on a chatty stderr)."""
    chan = client.get_transport().open_session()
    try:
        chan.exec_command(command)
        out, err = bytearray(), bytearray()
        while True:
            got = False
            while chan.recv_ready():
                out += chan.recv(1 << 20)
                got = True
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(1 << 16)
                got = True
            drained = not chan.recv_ready() and not chan.recv_stderr_ready()
            if chan.exit_status_ready() and drained and (chan.eof_received or chan.closed):
                break
            if not got:
                ready, _, _ = select.select([chan], [], [], timeout)
                if not ready and not chan.exit_status_ready():
                    raise TimeoutError(f"remote command silent for {timeout}s")
        return chan.recv_exit_status(), bytes(out), bytes(err)
    finally:
        chan.close()


class _LazySftpReader:
    """Reads files the listing did not prefetch over SFTP on the listing's SSH connection."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._sftp: Any = None

    def __call__(self, path: str) -> bytes:
        if self._sftp is None:
            self._sftp = self._client.open_sftp()
        with self._sftp.open(path, "rb") as fh:
            return fh.read()

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
        self._client.close()


def list_log_dir(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    only: Collection[str] | None = None,
    fanout_above: int | None = None,
    summarize: bool = False,
) -> Listing:
    """List one remote log dir with one SSH command; call ``listing.close()`` when done reading.

    ``summarize``: partition dirs come summed up (``listing.summaries``, see ``parse_output``).

    Raises:
        NoGnuFind: the remote find lacks ``-printf``.
        OSError: the log dir cannot be entered or the connection failed (one crawl error for the log dir).
    """
    target = ssh_target(url, storage_options)
    client = _connect(target)
    try:
        status, stdout, stderr_bytes = run_command(client, remote_command(target.path), target.timeout)
        stderr = stderr_bytes.decode("utf-8", "replace")
        if status == _CD_FAILED:
            reason = stderr.strip().splitlines()[-1] if stderr.strip() else "cannot enter directory"
            raise _os_error(error_class_for_reason(reason), reason, target.path)
        if stdout.startswith(_GZIP_MAGIC):
            stdout = _gunzip(stdout, target.path)
        if not stdout.startswith((b"0\t", b"1\t", b"\0")) or "printf" in stderr or "xtype" in stderr:
            raise NoGnuFind(f"remote find cannot -printf: {stderr.strip()[:200]}")
        listing = parse_output(target.path, stdout, stderr, summarize=summarize)
    except BaseException:
        client.close()
        raise
    reader = _LazySftpReader(client)
    listing.reader = reader
    listing.closers.append(reader.close)
    if only is not None:
        listing.descend_only(frozenset(only))
    return listing


def list_log_dir_any(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    only: Collection[str] | None = None,
    fanout_above: int | None = None,
    summarize: bool = False,
) -> Listing:
    """The registry entry: the one-command fast path, or a plain SFTP listing (sshfs) when find lacks -printf.

    ``fanout_above`` is ignored: one command lists the whole log dir anyway. ``summarize`` applies to the fast path.
    """
    try:
        return list_log_dir(url, storage_options, only=only, summarize=summarize)
    except NoGnuFind:
        from sshfs import SSHFileSystem

        from pipelines.crawl.backends import generic

        target = ssh_target(url, storage_options)
        fs = SSHFileSystem(**target.sshfs_kwargs())
        listing = generic.list_log_dir(target.path, fs=fs, only=only, fanout_above=fanout_above)
        listing.errors.append(ListingError("", "list", "NoGnuFind", "remote find lacks -printf; listed over SFTP"))
        return listing
