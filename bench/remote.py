"""The remote tier's listing at scale: an S3 Inventory (Parquet) of N objects, read, parsed and classified.

    .venv/bin/python bench/remote.py --objects 100000 [--no-metadata] [--keep DIR]
    .venv/bin/python bench/remote.py --list-s3 --objects 20000

Default mode, in two child processes (so the reader's peak RSS is its own):

1. generate: an inventory report in AWS's Parquet form (``manifest.json`` + data files of 250k rows) of N objects
   in the Aiven layout (3 objects per segment: ``.log``, ``.indexes``, ``.rsm-manifest``; ~30k objects per topic,
   10 partitions per topic), and a matching ``__remote_log_metadata`` replica (50 partitions) written with
   ``metadata_writer``: 85% of segments copied, 5% copy started only, 5% delete finished (leaked), 5% unrecorded;
   one topic in ten deleted from the controller;
2. read, through the pipeline's Spark path (``pipelines.orchestrate.remote_tier_step``, ``local[2]``): one task per
   inventory data file -> ``remote_objects``; one task per metadata replica; replay + ``classify_remote`` per
   (topic id, partition) in co-grouped tasks -> ``remote_log_segments`` and ``remote_findings`` (Delta tables in a
   scratch warehouse). ``--pure`` reads in one Python process instead (the first layer's path:
   :func:`pipelines.remote_tier.s3_inventory.read_inventory` -> ``listing_rows`` -> ``classify_remote`` per topic
   partition, the metadata read and replayed first).

It prints each phase's time and the classes found; the last line is JSON
``{"objects": N, "wall_s": ..., "driver_rss_mib": ...}``: the read process's wall time (Spark start included) and
the peak RSS of the driver's Python process (sampled; with Spark, the driver JVM's peak, which also runs the local
tasks' JVM side, is printed on the line before).

``--list-s3``: puts N objects in a moto server (started here, as the tests start it) and times the fsspec listing
(:func:`pipelines.remote_tier.object_listing.list_location`) against a bare boto3 ``list_objects_v2`` paginator over
the same keys, interleaved (A B, B A, ... for ``--repeat`` turns); prints the median ratio (issue goal: <= 1.2).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipelines.kafka.uuid import Uuid  # noqa: E402

BUCKET = "bench-tier"
ROOT = "tier"
DAY = 86_400_000
NOW = 1_790_000_000_000
OLD = NOW - 30 * DAY
ROWS_PER_FILE = 250_000
METADATA_PARTITIONS = 50
KINDS = ("log", "indexes", "rsm-manifest")


def _uid(n: int, salt: int) -> Uuid:
    return Uuid(0x0123_4567_0000_0000 | salt << 24 | (n >> 32), 0x89AB_0000_0000_0000 | (n & 0xFFFF_FFFF))


def _segments(objects: int):
    """``(topic, topic_id, partition, segment_id, start_offset, fate)`` for ceil(N / 3) segments."""
    per_topic = 10_000
    for s in range((objects + 2) // 3):
        t, rest = divmod(s, per_topic)
        partition, nth = rest % 10, rest // 10
        fate = ("copied",) * 17 + ("started", "leaked", "unrecorded")
        yield f"topic-{t}", _uid(t, 1), partition, _uid(s, 2), nth * 1000, fate[s % 20]


def generate(out: Path, objects: int, metadata: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("bucket", pa.string()), ("key", pa.string()), ("size", pa.int64()),
                        ("last_modified_date", pa.timestamp("ms", tz="UTC")), ("e_tag", pa.string()),
                        ("storage_class", pa.string())])
    data = out / "report" / "data"
    data.mkdir(parents=True)
    files: list[str] = []
    writer = None
    written = 0
    cols: dict[str, list] = {name: [] for name in schema.names}
    events: dict[int, list] = {}
    from pipelines.remote_tier.events import SegmentEvent, SegmentState
    from pipelines.remote_tier.partitioner import metadata_partition

    def flush() -> None:
        nonlocal writer
        if not cols["key"]:
            return
        if writer is None:
            files.append(f"report/data/part-{len(files):05d}.parquet")
            writer = pq.ParquetWriter(out / files[-1], schema)
        writer.write_table(pa.Table.from_pydict(cols, schema=schema))
        for c in cols.values():
            c.clear()

    for topic, tid, partition, sid, start, fate in _segments(objects):
        for kind in KINDS:
            if written == objects:
                break
            cols["bucket"].append(BUCKET)
            cols["key"].append(f"{ROOT}/{topic}-{tid}/{partition}/{start:020d}-{sid}.{kind}")
            cols["size"].append(1 << 20 if kind == "log" else 4096)
            cols["last_modified_date"].append(OLD)
            cols["e_tag"].append(f"{written:032x}")
            cols["storage_class"].append("STANDARD")
            written += 1
            if written % 50_000 == 0:
                flush()
            if written % ROWS_PER_FILE == 0:
                writer.close()
                writer = None
        if metadata and fate != "unrecorded":
            mp = metadata_partition(tid, partition, METADATA_PARTITIONS)
            at = OLD - DAY
            evs = events.setdefault(mp, [])
            evs.append(SegmentEvent(topic, tid, partition, sid, SegmentState.COPY_SEGMENT_STARTED, 1, at, True,
                                    start_offset=start, end_offset=start + 999, size=1 << 20,
                                    max_timestamp_ms=at, leader_epochs=((0, start),)))
            if fate != "started":
                evs.append(SegmentEvent(topic, tid, partition, sid, SegmentState.COPY_SEGMENT_FINISHED, 1, at + 1,
                                        False))
            if fate == "leaked":
                for state, dt in ((SegmentState.DELETE_SEGMENT_STARTED, 2), (SegmentState.DELETE_SEGMENT_FINISHED, 3)):
                    evs.append(SegmentEvent(topic, tid, partition, sid, state, 1, at + dt, False))
    flush()
    if writer is not None:
        writer.close()
    manifest = {"sourceBucket": BUCKET, "destinationBucket": f"arn:aws:s3:::{BUCKET}-inventory",
                "version": "2016-11-30", "creationTimestamp": str(NOW), "fileFormat": "Parquet",
                "fileSchema": "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); "
                              "optional int64 size; optional int64 last_modified_date (TIMESTAMP_MILLIS); "
                              "optional binary e_tag (UTF8); optional binary storage_class (UTF8); }",
                "files": [{"key": f, "size": (out / f).stat().st_size, "MD5checksum": "0" * 32} for f in files]}
    (out / "report" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    if metadata:
        from pipelines.remote_tier.metadata_writer import write_metadata_replica

        for mp in range(METADATA_PARTITIONS):
            write_metadata_replica(out / "metadata", mp, events.get(mp, []), batch_records=50, segment_batches=2000)


def read(out: Path, metadata: bool) -> dict:
    from pipelines.remote_tier.classify import ControllerTopics, classify_remote
    from pipelines.remote_tier.metadata_topic import MetadataCoverage, read_replica
    from pipelines.remote_tier.object_listing import listing_rows
    from pipelines.remote_tier.replay import replay
    from pipelines.remote_tier.s3_inventory import InventoryStats, read_inventory

    t0 = time.perf_counter()
    reads = [read_replica(d, as_of_ms=NOW) for d in sorted((out / "metadata").iterdir())] if metadata else []
    coverage = MetadataCoverage.from_replicas(reads, METADATA_PARTITIONS, True)
    image = replay(coverage.events())
    del reads
    t_meta = time.perf_counter() - t0
    topics = {topic: tid for topic, tid, *_ in _segments_by_topic(out)}
    deleted = {tid for i, (_, tid) in enumerate(sorted(topics.items())) if i % 10 == 9}
    controller = ControllerTopics(frozenset(set(topics.values()) - deleted), True, dict.fromkeys(deleted, OLD))

    stats = InventoryStats()
    items = read_inventory(str(out / "report" / "manifest.json"), f"s3://{BUCKET}/{ROOT}", "aiven",
                           data_root=str(out), stats=stats)
    classes: dict[str, int] = {}
    rows = errors = plannable = 0
    t1 = time.perf_counter()
    for _, group in itertools.groupby(listing_rows(items, "aiven"), key=lambda r: (r.topic_id, r.partition)):
        part = list(group)
        rows += len(part)
        errors += sum(r.error is not None for r in part)
        for finding in classify_remote(image, part, controller, coverage, now_ms=NOW, grace_ms=DAY):
            classes[finding.class_name] = classes.get(finding.class_name, 0) + 1
            plannable += finding.plannable
    t_rows = time.perf_counter() - t1
    return {"metadata_s": round(t_meta, 2), "segments_in_image": len(image.segments) if hasattr(image, "segments")
            else None, "list_parse_classify_s": round(t_rows, 2), "rows": rows, "error_rows": errors,
            "kept": stats.kept, "classes": classes, "plannable": plannable}


def _rss_mib(pid: int | str = "self") -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class _PeakRss:
    """Samples the RSS of this process and of ``pids()`` every 0.2 s; keeps the peaks."""

    def __init__(self) -> None:
        import threading

        self.own = self.jvm = 0.0
        self.jvm_pid: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.own = max(self.own, _rss_mib())
            if self.jvm_pid is not None:
                self.jvm = max(self.jvm, _rss_mib(self.jvm_pid))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def read_spark(out: Path, metadata: bool) -> dict:
    """The pipeline's remote tier step over the generated report and replica (see the module docstring)."""
    from datetime import datetime, timezone

    from pipelines.config.load import config_from_dict
    from pipelines.metadata.image import ConfigsImage, MetadataImage, PartitionImage, TopicImage, TopicsImage
    from pipelines.metadata.source import ControllerView
    from pipelines.orchestrate.remote_tier_step import remote_tier_step
    from pipelines.tables.schemas import ALL_TABLES
    from pipelines.tables.spark_session import build_spark
    from pipelines.tables.warehouse_store import warehouse_store

    peak = _PeakRss()
    t0 = time.perf_counter()
    spark = build_spark("bench-remote", master="local[2]", conf={
        "spark.sql.shuffle.partitions": "16", "spark.default.parallelism": "2", "spark.driver.memory": "768m"})
    peak.jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    t_spark = time.perf_counter() - t0
    meta_dir = out / "metadata"
    if not metadata:
        meta_dir.mkdir(exist_ok=True)
    config = config_from_dict({
        "cluster": "bench", "warehouse": str(out / "warehouse"),
        "remote_tier": {"layout": "aiven", "location": f"s3://{BUCKET}", "prefix": f"{ROOT}/",
                        "owned_prefix": f"{ROOT}/",
                        "inventory_manifest": str(out / "report" / "manifest.json"),
                        "inventory_data_root": str(out), "metadata": {"source": str(meta_dir)},
                        "read_manifests": False}})  # the bench has the bucket's inventory, not its objects
    store = warehouse_store(config.warehouse, engine="spark", spark=spark)
    for name in ("metadata_events", "remote_objects", "remote_log_segments", "remote_findings"):
        store.create_if_missing(ALL_TABLES[name])
    topics = dict(_segments_by_topic(out))
    deleted = {tid for i, (_, tid) in enumerate(sorted(topics.items())) if i % 10 == 9}
    at = datetime.fromtimestamp(OLD / 1000, tz=timezone.utc)
    if deleted:
        store.append("metadata_events", [{"cluster": "bench", "offset": i, "event": "topic_removed", "timestamp": at,
                                          "topic_id": str(tid), "source": "bench", "run_id": "bench"}
                                         for i, tid in enumerate(sorted(deleted))])
    images = [TopicImage(tid, name, {}) for name, tid in topics.items() if tid not in deleted]
    meta = {p: PartitionImage(p, (1,), (1,), (), (), 1, 0, 0, ()) for p in range(METADATA_PARTITIONS)}
    images.append(TopicImage(_uid(0, 9), "__remote_log_metadata", meta))
    image = MetadataImage(topics=TopicsImage({t.topic_id: t for t in images}, {t.name: t for t in images}),
                          configs=ConfigsImage({(2, "__remote_log_metadata"): {"retention.ms": "-1"}}),
                          complete=True, incomplete_reasons=())
    t1 = time.perf_counter()
    report = remote_tier_step(spark, store, config, "bench-run", ControllerView(image, (), "bench"),
                              now=datetime.fromtimestamp(NOW / 1000, tz=timezone.utc))
    t_step = time.perf_counter() - t1
    peak.stop()
    by_class = report.counts["by_class"]
    return {"spark_start_s": round(t_spark, 2), "step_s": round(t_step, 2), "rows": report.counts["objects"],
            "error_rows": report.counts["error_rows"], "classes": {k: v["segments"] for k, v in by_class.items()},
            "plannable": report.counts["plannable"], "python_peak_rss_mib": round(peak.own, 1),
            "jvm_peak_rss_mib": round(peak.jvm, 1)}


def _segments_by_topic(out: Path):
    n = json.loads((out / "objects.json").read_text())
    seen = set()
    for topic, tid, *_ in _segments(n):
        if topic not in seen:
            seen.add(topic)
            yield topic, tid


def run_child(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: {' '.join(argv[2:])} failed")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, out


def list_s3(objects: int, repeat: int) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from objectstore.s3_servers import MotoServer, aws_env

    from pipelines.remote_tier.object_listing import list_location, open_location

    tmp = Path(tempfile.mkdtemp(prefix="klgc-bench-remote-"))
    server = MotoServer(tmp / "moto.log")
    try:
        client = server.client()
        server.create_bucket(BUCKET)
        keys = [f"{ROOT}/{topic}-{tid}/{partition}/{start:020d}-{sid}.{kind}"
                for topic, tid, partition, sid, start, _ in _segments(objects) for kind in KINDS][:objects]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:  # the fill is not timed against anything; threads only shorten it
            list(pool.map(lambda key: client.put_object(Bucket=BUCKET, Key=key, Body=b""), keys))
        print(f"filled {len(keys)} keys in {time.perf_counter() - t0:.1f}s")
        env = aws_env(server.endpoint)

        def fsspec_listing() -> int:
            loc = open_location(f"s3://{BUCKET}/{ROOT}", env=env)
            return sum(1 for _ in list_location(loc, "aiven"))

        def boto_listing() -> int:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{ROOT}/")
            return sum(len(p.get("Contents", [])) for p in pages)

        ratios = []
        def timed(listing: Callable[[], int]) -> float:
            t0 = time.perf_counter()
            assert listing() == objects
            return time.perf_counter() - t0

        for turn in range(repeat):  # A B, then B A: neither goes first every time
            if turn % 2:
                b, a = timed(boto_listing), timed(fsspec_listing)
            else:
                a, b = timed(fsspec_listing), timed(boto_listing)
            ratios.append(a / b)
            print(f"fsspec {a:.2f}s  boto3 paginator {b:.2f}s  ratio {ratios[-1]:.2f}")
        print(f"median ratio fsspec/boto3 over {repeat} turns: {statistics.median(ratios):.2f} (goal <= 1.2)")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=100_000)
    ap.add_argument("--no-metadata", action="store_true", help="skip the __remote_log_metadata replica")
    ap.add_argument("--keep", type=Path, help="generate into this directory and keep it")
    ap.add_argument("--list-s3", action="store_true")
    ap.add_argument("--pure", action="store_true", help="read in one Python process (no Spark)")
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--phase", choices=("generate", "read"), help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    metadata = not args.no_metadata
    if args.phase == "generate":
        (args.dir / "objects.json").write_text(str(args.objects))
        generate(args.dir, args.objects, metadata)
        return
    if args.phase == "read":
        print(json.dumps(read(args.dir, metadata) if args.pure else read_spark(args.dir, metadata)))
        return
    if args.list_s3:
        list_s3(args.objects, args.repeat)
        return
    out = args.keep or Path(tempfile.mkdtemp(prefix="klgc-bench-remote-"))
    out.mkdir(parents=True, exist_ok=True)
    flags = ["--objects", str(args.objects), "--dir", str(out)] + (["--no-metadata"] if not metadata else [])
    try:
        gen_s, gen_rss, _ = run_child([sys.executable, __file__, "--phase", "generate", *flags])
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"generate: {gen_s:.1f}s, peak RSS {gen_rss:.0f} MiB, {size / 2**20:.1f} MiB on disk")
        wall, rss, text = run_child([sys.executable, __file__, "--phase", "read", *flags,
                                     *(["--pure"] if args.pure else [])])
        figures = json.loads(text.strip().splitlines()[-1])
        if args.pure:
            rate = figures["rows"] / max(figures["list_parse_classify_s"], 1e-9)
            print(f"read: metadata read + replay {figures['metadata_s']}s, inventory -> rows -> classes "
                  f"{figures['list_parse_classify_s']}s ({rate:,.0f} rows/s), {figures['rows']} rows, "
                  f"{figures['error_rows']} error rows")
        else:
            rss = figures["python_peak_rss_mib"]
            print(f"read (Spark local[2]): start {figures['spark_start_s']}s, remote tier step {figures['step_s']}s "
                  f"({figures['rows'] / max(figures['step_s'], 1e-9):,.0f} objects/s), {figures['rows']} rows, "
                  f"{figures['error_rows']} error rows; driver JVM peak RSS {figures['jvm_peak_rss_mib']} MiB")
        print(f"classes: {json.dumps(figures['classes'], sort_keys=True)}, plannable {figures['plannable']}")
        print(json.dumps({"objects": args.objects, "wall_s": round(wall, 2), "driver_rss_mib": round(rss, 1)}))
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
