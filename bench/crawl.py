"""Crawl speed against ``find``: local listing vs ``find -printf``, SFTP crawl vs ``ssh host find -printf``.

    .venv/bin/python bench/crawl.py [--log-dirs 2] [--partitions 5000] [--files 10] [--kafka-like] [--keep DIR]
        [--no-sftp]

Builds a synthetic tree (empty or sparse files, a partition.metadata in each partition dir; ``--kafka-like``: also
a leader-epoch-checkpoint, and segments in sets as a broker keeps them), then times in one
run: the listing backend alone and the crawl (listing + inventory scan + rows) against GNU find, each both with
the compiled lister (``pipelines/crawl/_native_dirscan.c``, when built) and in pure Python (what
``KLGC_PURE_PYTHON=1`` runs), and, when an OpenSSH server can be started on 127.0.0.1, the SFTP crawl against
``ssh 127.0.0.1 find``.
Goals: local <= 1.5x find, sftp <= 2x. ``--keep DIR`` reuses a tree already built there (same sizes).

Each figure is the best of ``--repeat`` runs, as wall time and (local only) CPU time: on a shared machine the
CPU ratio (our process vs find's) is the steadier of the two.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipelines.crawl.backends import backend_for  # noqa: E402
from pipelines.crawl.backends import local as local_backend  # noqa: E402
from pipelines.crawl.local_crawl import crawl_local  # noqa: E402
from pipelines.kafka.partition_metadata import write_partition_metadata  # noqa: E402
from pipelines.kafka.uuid import Uuid  # noqa: E402
from pipelines.native import PURE_PYTHON_ENV, load  # noqa: E402

SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")


@dataclass(frozen=True)
class Broker:
    broker_id: int
    log_dirs: tuple[str, ...]
    storage_options: dict
    inventory: str | None = None


def segment_names(files: int, kafka_like: bool) -> list[str]:
    """``files`` names after partition.metadata: every suffix in turn, one offset each; or, ``kafka_like``, what a
    broker keeps: leader-epoch-checkpoint and segment sets (.log, .index, .timeindex, .snapshot) by offset."""
    if not kafka_like:
        return [f"{i * 1000:020d}{SUFFIXES[i % len(SUFFIXES)]}" for i in range(files)]
    names = ["leader-epoch-checkpoint"]
    for i in range(files):
        names += [f"{i * 1000:020d}{suffix}" for suffix in (".log", ".index", ".timeindex", ".snapshot")]
    return names[:files]


def build_tree(root: Path, log_dirs: int, partitions: int, files: int, kafka_like: bool = False) -> list[Path]:
    dirs = []
    names = segment_names(files - 1, kafka_like)
    for d in range(log_dirs):
        logdir = root / f"data-{d}"
        logdir.mkdir(parents=True)
        (logdir / "meta.properties").write_text("version=1\ncluster.id=bench\nnode.id=1\n")
        for p in range(partitions):
            pdir = logdir / f"topic{p % 500}-{p // 500 + d * 1000}"
            pdir.mkdir()
            (pdir / "partition.metadata").write_bytes(write_partition_metadata(Uuid.from_hex(f"{p + 1:032x}")))
            for i, name in enumerate(names):
                with open(pdir / name, "wb") as fh:
                    if name == "leader-epoch-checkpoint":
                        fh.write(b"0\n1\n0 0\n")
                    elif i % 3 == 0:
                        fh.truncate(1 << 20)  # sparse: size without disk
        dirs.append(logdir)
    return dirs


def best_of(n: int, fn: Callable[[], object]) -> float:
    return best_of_both(n, fn)[0]


def best_of_both(n: int, fn: Callable[[], object]) -> tuple[float, float]:
    """Best wall time and best CPU time (this process plus finished children) over ``n`` runs."""
    walls, cpus = [], []
    for _ in range(n):
        c0, t = _cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c0)
    return min(walls), min(cpus)


def _cpu() -> float:
    own = time.process_time()
    try:
        import resource

        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    except ImportError:  # not on Unix: own CPU only
        return own
    return own + kids.ru_utime + kids.ru_stime


def use_compiled(compiled: bool) -> bool:
    """Switch the local backend between the compiled lister and pure Python; False when asked for the compiled
    lister and it is not built."""
    os.environ[PURE_PYTHON_ENV] = "0" if compiled else "1"
    local_backend._native = load("pipelines.crawl._native_dirscan")
    return (local_backend._native is not None) == compiled


def run_find(argv_prefix: list[str], dirs: list[Path]) -> None:
    for d in dirs:
        argv = ["find", str(d), "-printf", r"%p %s %T@\n"]
        if argv_prefix:  # through ssh: one remote command line
            argv = [shlex.join(argv)]
        subprocess.run([*argv_prefix, *argv], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-dirs", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--files", type=int, default=10, help="files per partition dir, partition.metadata included")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kafka-like", action="store_true",
                    help="partition dirs as a broker keeps them: leader-epoch-checkpoint, segment sets by offset")
    ap.add_argument("--keep", help="build the tree here and keep it (or reuse the tree already there)")
    ap.add_argument("--no-sftp", action="store_true", help="local figures only")
    args = ap.parse_args()

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="crawl-bench-"))
    try:
        t = time.perf_counter()
        n_files = args.log_dirs * args.partitions * args.files
        if (base / "tree").is_dir():
            dirs = sorted((base / "tree").iterdir())
            print(f"tree: reusing {base / 'tree'} ({len(dirs)} log dirs)")
        else:
            dirs = build_tree(base / "tree", args.log_dirs, args.partitions, args.files, args.kafka_like)
            print(f"tree: {args.log_dirs} log dirs x {args.partitions} partition dirs x {args.files} files"
                  f" = {n_files} files, built in {time.perf_counter() - t:.1f}s")  # fmt: skip
        brokers = [Broker(1, tuple(map(str, dirs)), {})]

        def local() -> None:
            result = crawl_local(brokers, run_id="bench", cluster="bench", fanout_dirs=None)
            assert result.run_row["partition_dirs"] == args.log_dirs * args.partitions, result.run_row

        def listing_only(summarize: bool) -> None:
            for d in dirs:
                local_backend.list_log_dir(str(d), summarize=summarize).close()

        run_find([], dirs)  # warm the dentry cache for both sides
        t_find, c_find = best_of_both(args.repeat, lambda: run_find([], dirs))
        figures: list[tuple[str, float, float]] = []
        for compiled in (False, True):
            if not use_compiled(compiled):
                print("compiled lister: not built (pip install -e . with a C compiler), pure Python only")
                continue
            how = "compiled" if compiled else "pure Python"
            figures.append((f"listing, {how}", *best_of_both(args.repeat, lambda c=compiled: listing_only(c))))
            figures.append((f"crawl_local, {how}", *best_of_both(args.repeat, local)))
        use_compiled(True)
        print(f"local (best of {args.repeat}; goal: crawl_local <= 1.5x find, wall and CPU)")
        print(f"  {'find -printf':28s} wall {t_find:6.3f}s  CPU {c_find:6.3f}s")
        for label, wall, cpu in figures:
            print(f"  {label:28s} wall {wall:6.3f}s ({wall / t_find:4.2f}x)  CPU {cpu:6.3f}s ({cpu / c_find:4.2f}x)")
        if args.no_sftp:
            return 0

        sys.path.insert(0, str(REPO / "tests" / "crawl"))
        from tests.crawl.conftest import start_sshd

        started = start_sshd(base / "sshd")
        if isinstance(started, str):
            print(f"sftp: skipped ({started})")
            return 0
        proc, server = started
        try:
            remote = [Broker(1, tuple(server.url(d) for d in dirs), server.storage_options)]

            def sftp() -> None:
                result = crawl_local(remote, run_id="bench", cluster="bench")
                assert result.run_row["partition_dirs"] == args.log_dirs * args.partitions, result.run_row

            def sftp_listing_only() -> None:
                for url in remote[0].log_dirs:
                    backend_for(url)(url, server.storage_options).close()

            t_ssh = best_of(args.repeat, lambda: run_find(server.ssh_argv(), dirs))
            t_sftp_list = best_of(args.repeat, sftp_listing_only)
            t_sftp = best_of(args.repeat, sftp)
            print(f"sftp:  ssh find -printf {t_ssh:.3f}s | listing backend alone {t_sftp_list:.3f}s (ratio"
                  f" {t_sftp_list / t_ssh:.2f}) | crawl_local(sftp://) {t_sftp:.3f}s (ratio {t_sftp / t_ssh:.2f};"
                  " goal <= 2)")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
