"""``logdir-gc warehouse``: a warehouse as a whole (``merge``: a per-cluster warehouse into the fleet's)."""

from __future__ import annotations

import click


@click.group("warehouse")
def warehouse() -> None:
    """Maintain a warehouse as a whole."""


@warehouse.command("merge")
@click.argument("src")
@click.option("--into", "dst", required=True, help="The fleet warehouse to append to (a directory or an s3:// URL).")
@click.option("--cluster", "clusters", multiple=True,
              help="Merge only this cluster's rows (repeatable; default: every cluster SRC holds).")
@click.option("--dry-run", is_flag=True, help="Check every unit and say what would be appended; write nothing.")
def merge(src: str, dst: str, clusters: tuple[str, ...], dry_run: bool) -> None:
    """Append SRC's rows of its clusters to the warehouse --into: each run, plan and history row once.

    A run or plan the destination already holds with the same rows is skipped (a rerun changes nothing); with
    other rows the merge is refused before anything is written (exit 4).
    """
    from pipelines.redaction import redact_text
    from pipelines.tables.warehouse_merge import merge_warehouse
    from pipelines.tables.warehouse_store import warehouse_store
    from pipelines.terminal_text import shown

    source = warehouse_store(src)
    target = warehouse_store(dst, allow_foreign_tables=True)  # the Spark jobs' tables too (see the module doc)
    report = merge_warehouse(source, target, clusters or None, dry_run=dry_run)
    verb = "would append" if dry_run else "appended"
    for table in sorted(set(report.appended_rows) | set(report.present_units)):
        rows, units = report.appended_rows.get(table, 0), report.appended_units.get(table)
        there = report.present_units.get(table, 0)
        unit_text = f" in {units} unit(s)" if units else ""
        if rows or there:
            click.echo(f"{table}: {verb} {rows} row(s){unit_text}, {there} unit(s) already there")
    click.echo(f"{'dry run: ' if dry_run else ''}{verb} {report.rows} row(s) of cluster(s) "
               f"{shown(', '.join(report.clusters))} from {shown(redact_text(source.warehouse), 1000)} into "
               f"{shown(redact_text(target.warehouse), 1000)}")
