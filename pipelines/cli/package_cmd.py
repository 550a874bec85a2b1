"""``logdir-gc package``: the wheel and the environment archive for Spark executors (docs/deploying.md)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click


def _progress(line: str) -> None:
    click.echo(line, err=True)


@click.command("package")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the wheel and the archive (created).")
@click.option("--python-prefix", default=None, metavar="PREFIX",
              help="Where executors keep this Python version (e.g. /usr for /usr/bin/python3.11); default: the"
                   " same path as here.")
@click.option("--with", "extra", multiple=True, metavar="REQUIREMENT",
              help="Another requirement for the archive, e.g. s3fs for inventories on S3 (repeatable).")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object on stdout: {"wheel", "archive", "spark_submit_args"}.')
def package(out: Path, python_prefix: str | None, extra: tuple[str, ...], as_json: bool) -> None:
    """Build the wheel and a packed environment (for spark.archives) with every runtime dependency."""
    from pipelines.deploy.package import build_package

    _progress(f"building the wheel and the environment archive in {out} (pip; a few minutes the first time)")
    built = build_package(out, python_prefix=python_prefix, extra=extra)
    if as_json:
        click.echo(json.dumps(built.to_json_dict()))
        return
    click.echo(f"wheel:    {built.wheel}")
    click.echo(f"archive:  {built.archive} ({built.archive.stat().st_size / 2**20:.0f} MiB)")
    click.echo("add to spark-submit (client mode):")
    click.echo("  " + shlex.join(built.spark_submit_args))
