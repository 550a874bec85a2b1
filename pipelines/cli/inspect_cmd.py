"""``logdir-gc inspect LOGDIR``: read one broker log dir and report what is in it, without changing anything."""

from __future__ import annotations

import json

import click

from pipelines.cli.remote_errors import cannot, reach_errors
from pipelines.cli.storage_options import storage_options
from pipelines.kafka.inspect_report import inspect_json, render_text
from pipelines.kafka.logdir import scan_log_dir
from pipelines.redaction import secret_values


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
    secrets = secret_values(options) | secret_values(logdir)
    try:
        inventory = scan_log_dir(logdir, options or None)
    except reach_errors() as exc:
        cannot("inspect", "read", logdir, exc, secrets)
    except (ValueError, ImportError, TypeError) as exc:  # fsspec: unknown protocol, no backend, bad option
        cannot("inspect", "open", logdir, exc, secrets)
    if as_json:
        click.echo(json.dumps(inspect_json(inventory), indent=2, sort_keys=False))
    else:
        click.echo(render_text(inventory), nl=False)
