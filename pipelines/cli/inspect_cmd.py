"""``logdir-gc inspect LOGDIR``: read one broker log dir and report what is in it, without changing anything."""

from __future__ import annotations

import json
import sys

import click

from pipelines.cli.exit_codes import UNREADABLE
from pipelines.cli.storage_options import storage_options
from pipelines.kafka.inspect_report import inspect_json, render_text
from pipelines.kafka.logdir import scan_log_dir


@click.command("inspect")
@click.argument("logdir")
@click.option("--json", "as_json", is_flag=True, help="Print the inventory as JSON instead of text.")
@click.option(
    "--storage-option",
    "storage_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="fsspec storage option for a remote LOGDIR URL (repeatable).",
)
def inspect(logdir: str, as_json: bool, storage_option: tuple[str, ...]) -> None:
    """Inventory LOGDIR (a path or fsspec URL): meta.properties, checkpoints, partition dirs and problems.

    Exits 0 whenever the inventory could be produced, problems included; exits 3 when LOGDIR cannot be read.
    """
    options = storage_options(storage_option)
    try:
        inventory = scan_log_dir(logdir, options or None)
    except OSError as exc:
        click.echo(f"logdir-gc inspect: cannot read {logdir}: {exc.strerror or exc}", err=True)
        sys.exit(UNREADABLE)  # not ctx.exit: the group runs click with standalone_mode=False, which swallows it
    except (ValueError, ImportError) as exc:  # fsspec: unknown protocol or its backend is not installed
        click.echo(f"logdir-gc inspect: cannot open {logdir}: {exc}", err=True)
        sys.exit(UNREADABLE)  # not ctx.exit: the group runs click with standalone_mode=False, which swallows it
    if as_json:
        click.echo(json.dumps(inspect_json(inventory), indent=2, sort_keys=False))
    else:
        click.echo(render_text(inventory), nl=False)
