"""Write a whole simulated cluster: broker log dirs, the metadata dir, ``truth.json`` and ``cluster.yaml``.

Layout under ``out``::

    broker-<id>/data-<k>/            one per JBOD dir: root files + partition dirs
    broker-1/data-0/__cluster_metadata-0/    combined mode (default)
    controller-<id>/metadata/        with --separate-controller: meta.properties, bootstrap.checkpoint, the log
    truth.json  cluster.yaml
"""

from __future__ import annotations

import shutil
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.detect import classes as c
from pipelines.simulate import layout, truth
from pipelines.simulate.metadata_files import bootstrap_checkpoint_bytes, write_metadata_dir
from pipelines.simulate.scenario import DirPlan, Scenario, build_scenario
from pipelines.simulate.spec import ClusterSpec

DEFAULT_WORKERS = 8
CHUNK_DIRS = 256


class OutputNotEmpty(FileExistsError):
    """The output directory has content and ``force`` was not given (or it is not a previous simulation)."""


@dataclass(frozen=True, slots=True)
class GenerationResult:
    out: Path
    truth_path: Path
    config_path: Path
    files: int
    apparent_bytes: int
    dirs_per_class: dict[str, int]
    seconds: float
    skipped: tuple[str, ...] = ()
    protected_dirs: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def files_per_second(self) -> float:
        return self.files / self.seconds if self.seconds else 0.0


def prepare_output(out: Path, force: bool) -> None:
    """Make ``out`` an empty directory.

    Raises:
        OutputNotEmpty: ``out`` has content and ``force`` is false, or it has content but no ``truth.json``
            (only a previous simulation is ever deleted).
    """
    if out.exists() and any(out.iterdir()):
        if not force:
            raise OutputNotEmpty(f"{out} is not empty (use --force to replace a previous simulation)")
        if not (out / truth.TRUTH_FILE).is_file():
            raise OutputNotEmpty(f"{out} is not empty and holds no {truth.TRUTH_FILE}; refusing to delete it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def generate(
    spec: ClusterSpec,
    out: str | Path,
    *,
    warehouse: str | None = None,
    force: bool = False,
    cluster: str | None = None,
    workers: int = DEFAULT_WORKERS,
) -> GenerationResult:
    """Plan and write the cluster described by ``spec`` into ``out``.

    ``workers`` threads create partition dirs in parallel: creating files is bound by the filesystem (journal,
    metadata locks), not by Python, and ``os`` calls release the GIL.

    Raises:
        OutputNotEmpty: see ``prepare_output``.
        OSError: the filesystem refused a write.
    """
    started = time.perf_counter()
    out = Path(out).resolve()
    prepare_output(out, force)
    now = spec.now_ms if spec.now_ms is not None else int(time.time() * 1000)
    scenario = build_scenario(spec, now)
    planned = time.perf_counter()
    files, size = _write_brokers(scenario, out, workers)
    files += _write_metadata(scenario, out)
    name = cluster or f"simulated-{spec.seed}"
    t = truth.build_truth(scenario, out, name)
    truth_path, config_path = out / truth.TRUTH_FILE, out / truth.CONFIG_FILE
    truth.write_truth(t, truth_path)
    truth.write_cluster_config(t, warehouse or str(out / "warehouse"), config_path)
    seconds = time.perf_counter() - started
    return GenerationResult(out, truth_path, config_path, files, size, t.counts(), seconds, scenario.skipped,
                            sum(1 for d in scenario.dirs if d.protected),
                            {"plan_seconds": planned - started})


def _write_brokers(scenario: Scenario, out: Path, workers: int) -> tuple[int, int]:
    spec = scenario.spec
    template = layout.partition_template(spec.files_per_partition, spec.segment_bytes, spec.sparse)
    format_time = scenario.now_ms - spec.history_days * 86_400_000 - 5 * 60_000
    bootstrap = bootstrap_checkpoint_bytes(format_time)
    by_dir: dict[tuple[int, int], list[DirPlan]] = defaultdict(list)
    for d in scenario.dirs:
        if d.cls != c.METADATA_LOG:
            by_dir[(d.broker_id, d.log_dir)].append(d)
    files = size = 0
    jobs: list[tuple[Path, list[DirPlan]]] = []
    for broker in scenario.brokers:
        for ld in broker.log_dirs:
            path = truth.log_dir_path(out, broker.broker_id, ld.index)
            path.mkdir(parents=True)
            dirs = by_dir.get((broker.broker_id, ld.index), [])
            jobs += [(path, dirs[i : i + CHUNK_DIRS]) for i in range(0, len(dirs), CHUNK_DIRS)]
            files += layout.write_root_files(
                path, cluster_id=scenario.cluster_id, node_id=broker.broker_id, directory_id=ld.directory_id,
                format_time_ms=format_time, bootstrap=bootstrap,
                checkpoints=layout.checkpoint_files(dirs, template.log_end_offset),
                clean_shutdown_epoch=None if broker.down else broker.epoch)
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for n, b in pool.map(lambda job: layout.write_partition_dirs(job[0], job[1], template), jobs):
            files += n
            size += b
    return files, size


def _write_metadata(scenario: Scenario, out: Path) -> int:
    spec = scenario.spec
    target = truth.metadata_dir_path(out, scenario)
    files = 0
    if spec.separate_controller:
        root = target.parent
        root.mkdir(parents=True)
        format_time = scenario.now_ms - spec.history_days * 86_400_000 - 5 * 60_000
        files += layout.write_root_files(
            root, cluster_id=scenario.cluster_id, node_id=scenario.controller_id,
            directory_id=scenario.metadata_dir.directory_id, format_time_ms=format_time,
            bootstrap=bootstrap_checkpoint_bytes(format_time), checkpoints=None, clean_shutdown_epoch=None)
    written = write_metadata_dir(target, scenario.log.batches, scenario.snapshot, now_ms=scenario.now_ms,
                                 leader_id=scenario.controller_id, voters=[scenario.controller_id],
                                 sparse=spec.sparse)
    return files + len(written)


def summarize(result: GenerationResult) -> str:
    """Human summary: files, bytes, dirs per class."""
    lines = [
        f"wrote {result.files:,} files ({_human(result.apparent_bytes)} apparent) in {result.seconds:.1f}s "
        f"({result.files_per_second:,.0f} files/s) under {result.out}",
        "partition dirs per class:",
    ]
    counts = Counter(result.dirs_per_class)
    lines += [f"  {cls:<28} {counts[cls]:>9,}" for cls in c.ALL_CLASSES if counts.get(cls)]
    lines.append(f"  ({result.protected_dirs:,} of them protected)")
    if result.skipped:
        lines.append(f"skipped (need JBOD or more brokers/topics): {', '.join(result.skipped)}")
    lines += [f"truth:  {result.truth_path}", f"config: {result.config_path}"]
    return "\n".join(lines)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
