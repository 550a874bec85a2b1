"""``logdir-gc inventory LOGDIR... --out URL``: write the log dirs' listing as a file the crawl can ingest.

For brokers the crawler cannot reach: run this on the broker host (no JVM, no Spark), ship the file anywhere
fsspec can read, and point the broker's ``inventory:`` config at it.
"""

from __future__ import annotations

import sys

import click

from pipelines.cli.exit_codes import UNREADABLE


@click.command("inventory")
@click.argument("logdirs", nargs=-1, required=True, metavar="LOGDIR...")
@click.option("--out", "out_url", required=True, help="Output file URL or path (JSON Lines; .gz/.zst compress).")
@click.option("--broker-id", type=click.IntRange(min=0), default=None, help="Broker id recorded in the file.")
def inventory(logdirs: tuple[str, ...], out_url: str, broker_id: int | None) -> None:
    """List each LOGDIR once (sizes, times, small metadata files) and write the inventory to --out.

    A LOGDIR that cannot be listed is recorded in the file (the crawl reports it as an error) and makes the
    command exit 3 after the file is written.
    """
    from pipelines.crawl.inventory_file import read_inventory, write_inventory

    try:
        records = write_inventory(logdirs, out_url, broker_id=broker_id)
    except OSError as exc:
        click.echo(f"logdir-gc inventory: cannot write {out_url}: {exc.strerror or exc}", err=True)
        sys.exit(UNREADABLE)  # not ctx.exit: the group runs click with standalone_mode=False, which swallows it
    failed = [s for s in read_inventory(out_url).sections if s.error is not None]
    click.echo(f"wrote {records} records for {len(logdirs)} log dir(s) to {out_url}")
    for section in failed:
        assert section.error is not None
        click.echo(f"logdir-gc inventory: cannot list {section.root}: {section.error[1]}", err=True)
    if failed:
        sys.exit(UNREADABLE)
