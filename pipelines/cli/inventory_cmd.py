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
@click.option("--out", "out_url", required=True,
              help="Output file URL or path (format 2: Parquet; a *.jsonl[.gz|.zst] name gets format 1).")
@click.option("--broker-id", type=click.IntRange(min=0), default=None, help="Broker id recorded in the file.")
@click.option("--format", "fmt", type=click.Choice(["1", "2"]), default=None,
              help="2: Parquet, one row per partition dir (default); 1: JSON Lines, one line per file.")
def inventory(logdirs: tuple[str, ...], out_url: str, broker_id: int | None, fmt: str | None) -> None:
    """List each LOGDIR once (sizes, times, small metadata files) and write the inventory to --out.

    A LOGDIR that cannot be listed is recorded in the file (the crawl reports it as an error) and makes the
    command exit 3 after the file is written.
    """
    from pipelines.cli import fast_exit
    from pipelines.crawl import inventory_compiled

    if fast_exit.console():
        if "pandas" not in sys.modules:
            sys.meta_path.insert(0, _PandasAbsent())
        fast_exit.request()  # leave without tearing the listing down object by object
    fmt_n = int(fmt) if fmt else None
    try:
        # format 2 of local log dirs: the compiled writer, without pydantic or pyarrow; else write_inventory
        got = inventory_compiled.write(logdirs, out_url, broker_id=broker_id, format=fmt_n)
        if got is not None:
            records, written, failed = got[0], 2, got[1]
        else:
            from pipelines.crawl.inventory_file import write_inventory

            result = write_inventory(logdirs, out_url, broker_id=broker_id, format=fmt_n, compiled=False)
            records, written, failed = result.records, result.format, result.failed
    except OSError as exc:
        click.echo(f"logdir-gc inventory: cannot write {_safe(out_url)}: {_safe(exc.strerror or exc)}", err=True)
        sys.exit(UNREADABLE)  # not ctx.exit: the group runs click with standalone_mode=False, which swallows it
    click.echo(f"wrote {records} records (format {written}) for {len(logdirs)} log dir(s) to {_safe(out_url)}")
    for root, reason in failed:
        click.echo(f"logdir-gc inventory: cannot list {_safe(root)}: {_safe(reason)}", err=True)
    if failed:
        sys.exit(UNREADABLE)


class _PandasAbsent:
    """A meta path finder for which pandas is not installed.

    pyarrow (the writer when the compiled one cannot serve: pure Python, SFTP log dirs, names that are not UTF-8)
    probes for pandas on its first array by importing it: 0.5-1 s on a loaded broker host. This short-lived process
    never hands pyarrow a pandas object, so the import fails at once (``ModuleNotFoundError``: pyarrow's own "pandas
    not installed" path). Only the console process installs it; pandas stays importable everywhere else.
    """

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (logdir-gc inventory runs without pandas)", name=name)
        return None


def _safe(text: object) -> str:
    """A path, URL or reason for the terminal: URL passwords masked, controls escaped."""
    from pipelines.redaction import redact_text
    from pipelines.terminal_text import shown

    return shown(redact_text(str(text)), 1000)
