"""``logdir-gc simulate``: write a simulated KRaft cluster (log dirs + metadata log) with known anomalies."""

from __future__ import annotations

import sys

import click

from pipelines.cli.exit_codes import USAGE


@click.command("simulate")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Directory to write into.")
@click.option("--brokers", default=3, show_default=True, type=int, help="Number of brokers (ids 1..N).")
@click.option("--topics", default=4, show_default=True, type=int, help="Number of regular topics.")
@click.option("--partitions", default=6, show_default=True, type=int, help="Partitions per regular topic.")
@click.option("--replication", default=3, show_default=True, type=int, help="Replication factor (capped at N).")
@click.option("--jbod", default=1, show_default=True, type=int, help="Log dirs per broker (KIP-858 JBOD when > 1).")
@click.option("--files-per-partition", default=5, show_default=True, type=int,
              help="Files in each partition dir, partition.metadata included.")
@click.option("--segment-bytes", default=64 * 1024 * 1024, show_default=True, type=int,
              help="Apparent size of a full .log segment (sparse, no data written).")
@click.option("--no-sparse", is_flag=True, help="Write empty segment files instead of sparse ones.")
@click.option("--seed", default=1, show_default=True, type=int, help="Same seed and --now-ms: same bytes.")
@click.option("--anomalies", type=click.Choice(["none", "small", "all"]), default="small", show_default=True,
              help="none: a clean cluster; small: one case of each anomaly; all: three of each.")
@click.option("--internal-partitions", default=10, show_default=True, type=int,
              help="Partitions of __consumer_offsets.")
@click.option("--separate-controller", is_flag=True,
              help="Put __cluster_metadata-0 on a controller-only node instead of broker 1's first log dir.")
@click.option("--warehouse", default=None, help="Warehouse URL written into cluster.yaml [default: <out>/warehouse].")
@click.option("--now-ms", default=None, type=int, help="Fix the clock (epoch ms) for reproducible output.")
@click.option("--workers", default=8, show_default=True, type=int, help="Threads creating partition dirs.")
@click.option("--force", is_flag=True, help="Replace a previous simulation in --out.")
def simulate(out: str, brokers: int, topics: int, partitions: int, replication: int, jbod: int,
             files_per_partition: int, segment_bytes: int, no_sparse: bool, seed: int, anomalies: str,
             internal_partitions: int, separate_controller: bool, warehouse: str | None, now_ms: int | None,
             workers: int, force: bool) -> None:
    """Write N brokers' log dirs and the controller's metadata log in Kafka's formats, plus truth.json (the
    expected class of every partition dir) and cluster.yaml (for ``logdir-gc run --config``)."""
    from pipelines.simulate import PRESETS, ClusterSpec, OutputNotEmpty, generate, summarize

    try:
        spec = ClusterSpec(brokers=brokers, topics=topics, partitions_per_topic=partitions, replication=replication,
                           jbod_dirs=jbod, seed=seed, anomalies=PRESETS[anomalies],
                           files_per_partition=files_per_partition, segment_bytes=segment_bytes,
                           sparse=not no_sparse, internal_partitions=internal_partitions,
                           separate_controller=separate_controller, now_ms=now_ms)
    except ValueError as exc:
        click.echo(f"logdir-gc simulate: {exc}", err=True)
        sys.exit(USAGE)
    try:
        result = generate(spec, out, warehouse=warehouse, force=force, workers=workers)
    except OutputNotEmpty as exc:
        click.echo(f"logdir-gc simulate: {exc}", err=True)
        sys.exit(USAGE)
    click.echo(summarize(result))
