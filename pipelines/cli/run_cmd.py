"""``logdir-gc run`` (a real configuration) and ``logdir-gc demo`` (a generated cluster), both end to end."""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.cli.exit_codes import USAGE
from pipelines.config import AppConfig, config_from_dict, load_config
from pipelines.errors import ConfigError
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

if TYPE_CHECKING:
    from pipelines.metrics.run_metrics import MetricsOutcome


def _progress(line: str) -> None:
    click.echo(_safe(line), err=True)


def _safe(text: object) -> str:
    """``text`` for the terminal: URL passwords masked, controls escaped (``redaction``, ``terminal_text``)."""
    return shown(redact_text(str(text)), 2000)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 points at stderr for the block, so stdout carries only the report: the Spark JVM started
    inside inherits it (Ivy prints ``:: loading settings ::`` there), and so does anything else it starts."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _parse_logdirs(values: tuple[str, ...]) -> list[dict[str, Any]]:
    by_broker: dict[int, list[str]] = defaultdict(list)
    for value in values:
        broker, sep, url = value.partition("=")
        if not sep or not broker.strip().isdigit() or not url:
            raise ConfigError(f"--logdir expects BROKER_ID=URL, got {value!r}")
        by_broker[int(broker)].append(url)
    return [{"broker_id": b, "log_dirs": urls} for b, urls in sorted(by_broker.items())]


def build_config(config_file: str | None, *, logdirs: tuple[str, ...], metadata: str | None,
                 warehouse: str | None, cluster: str | None) -> AppConfig:
    """A config from ``--config`` and/or the ad-hoc flags (flags win)."""
    overrides: dict[str, Any] = {}
    if warehouse:
        overrides["warehouse"] = warehouse
    if cluster:
        overrides["cluster"] = cluster
    if logdirs:
        overrides["brokers"] = _parse_logdirs(logdirs)
    if metadata:
        overrides["metadata"] = {"kind": "metadata_log", "source": metadata}
    if config_file:
        if metadata:  # keep the configured storage options of the metadata source; replace kind and source only
            base = load_config(config_file).metadata.model_dump()
            overrides["metadata"] = {**base, **overrides["metadata"]}
        return load_config(config_file, overrides)
    if not logdirs:
        raise ConfigError("give --config FILE, or at least one --logdir BROKER=URL (with --warehouse DIR)")
    if not warehouse:
        raise ConfigError("--warehouse DIR is required without --config")
    return config_from_dict({"cluster": "default", **overrides}, origin="command line")


def _print_report(report: Any, config: AppConfig, as_json: bool, metrics: MetricsOutcome) -> None:
    for note in metrics.notes:
        click.echo(f"logdir-gc: warning: {_safe(note)}", err=True)
    if as_json:
        doc = {**report.to_json_dict(), "metrics": {"file": metrics.file, "pushed_to": metrics.pushed_to,
                                                     "notes": metrics.notes}}
        click.echo(json.dumps(doc, indent=2, sort_keys=True, default=str))
        return
    detect = next(s for s in report.steps if s.step == "detect")
    plan = next(s for s in report.steps if s.step == "plan")
    click.echo(f"run {_safe(report.run_id)} of cluster {_safe(report.cluster)}")
    click.echo(f"{'class':<28}{'dirs':>7}{'plannable':>11}{'bytes':>16}")
    for cls, c in detect.counts["by_class"].items():
        click.echo(f"{_safe(cls):<28}{c['dirs']:>7}{c['plannable']:>11}{c['bytes']:>16,}")
    for step in report.steps:
        for note in step.notes:
            click.echo(f"note ({step.step}): {_safe(note)}")
    click.echo(f"tables:  {_safe(config.warehouse)}/<table> (findings, partition_dirs, gc_plans, ...)")
    if report.plan_id:
        click.echo(f"plan:    {plan.counts['plan_id']}: {plan.counts['items']} items, {plan.counts['bytes']:,} bytes,"
                   f" {plan.counts['content_hash']}")
        click.echo(f"         {plan.counts['file']} (+ .md for reviewers)")
        click.echo(f"review:  logdir-gc plans show {_safe(report.plan_id)} --warehouse {_safe(config.warehouse)}")
    else:
        click.echo("plan:    nothing plannable in this run")
    if metrics.file:
        click.echo(f"metrics: {metrics.file}" + (f" (pushed to {metrics.pushed_to})" if metrics.pushed_to else ""))


def _run(config: AppConfig, run_id: str | None, as_json: bool, include_segments: bool,
         verbose: bool = False, now: datetime | None = None) -> None:
    from pipelines import progress
    from pipelines.cli.progress import reporter_for
    from pipelines.metrics.run_metrics import record_failed_run, record_run
    from pipelines.orchestrate import new_run_id, run_pipeline
    from pipelines.orchestrate.pipeline import spark_log_path

    run_id = run_id or new_run_id()
    spark_log = None if verbose else spark_log_path(config, run_id)
    reporter = reporter_for()
    with progress.installed(reporter), stdout_to_stderr():
        try:
            report = run_pipeline(config, run_id, created_by=getpass.getuser(), progress=reporter.note,
                                  include_segments=include_segments, spark_log=spark_log, now=now)
        except Exception:
            for note in record_failed_run(config, run_id).notes:
                click.echo(f"logdir-gc: warning: {_safe(note)}", err=True)
            raise
    durations = {step.replace(" ", "_"): seconds for step, seconds in reporter.durations.items()}
    metrics = record_run(config, run_id, durations, plan_id=report.plan_id)
    _print_report(report, config, as_json, metrics)


def _with_master(config: AppConfig, master: str | None) -> AppConfig:
    """``--master`` wins over ``spark.master`` of the config."""
    if master is None:
        return config
    return config.model_copy(update={"spark": config.spark.model_copy(update={"master": master})})


def _instant(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    """``--now``: an ISO 8601 time with its zone."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time (e.g. 2024-06-01T00:00:00Z)") from None
    if parsed.tzinfo is None:
        raise click.BadParameter(f"{value!r} has no zone (e.g. 2024-06-01T00:00:00Z)")
    return parsed


_verbose = click.option("-v", "--verbose", is_flag=True,
                        help="Spark's own output (log4j, Ivy) on stderr instead of a log file under the warehouse.")


@click.command("run")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="YAML config (see conf/example.yaml).")
@click.option("--logdir", "logdirs", multiple=True, metavar="BROKER=URL", help="A broker's log dir (repeatable).")
@click.option("--metadata", help="URL of the controller's __cluster_metadata-0 (or a snapshot/segment).")
@click.option("--warehouse", help="Root of the Delta tables: DIR/<table name>.")
@click.option("--cluster", help="Cluster name (default: from the config, else 'default').")
@click.option("--run-id", help="Run id (default: the UTC time); a rerun with the same id replaces its rows.")
@click.option("--include-segments", is_flag=True, help="Also write the per-file segment_files table.")
@click.option("--master", metavar="URL", help="Spark master (spark://…, yarn, k8s://…, local[N]); wins over"
              " spark.master of the config. Client mode: this process is the driver.")
@click.option("--now", callback=_instant, metavar="ISO",
              help="The clock of detect and plan (ages, grace), as the jobs' --now; default: the current time.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@_verbose
def run(config_file: str | None, logdirs: tuple[str, ...], metadata: str | None, warehouse: str | None,
        cluster: str | None, run_id: str | None, include_segments: bool, master: str | None, now: datetime | None,
        as_json: bool, verbose: bool) -> None:
    """Crawl → ingest controller metadata → detect → plan, on local Spark, a cluster (--master) or under
    spark-submit."""
    config = build_config(config_file, logdirs=logdirs, metadata=metadata, warehouse=warehouse, cluster=cluster)
    _run(_with_master(config, master), run_id, as_json, include_segments, verbose, now)


@click.command("demo")
@click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False),
              help="Where the generated cluster, the tables and the plan go (replaced if it holds a previous demo).")
@click.option("--brokers", default=3, show_default=True, type=int)
@click.option("--jbod", default=2, show_default=True, type=int, help="Log dirs per broker.")
@click.option("--warehouse", default=None,
              help="Root of the Delta tables (default: OUT/warehouse), e.g. s3://bucket/wh with the AWS variables set.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@_verbose
def demo(out: str, brokers: int, jbod: int, warehouse: str | None, as_json: bool, verbose: bool) -> None:
    """Generate a small cluster with every kind of leftover, then run the whole pipeline on it."""
    from pipelines.simulate import PRESETS, ClusterSpec, OutputNotEmpty, generate

    target = Path(out).resolve()
    try:
        result = generate(ClusterSpec(brokers=brokers, jbod_dirs=jbod, anomalies=PRESETS["small"]), target,
                          warehouse=warehouse or str(target / "warehouse"), force=True)
    except (OutputNotEmpty, ValueError) as exc:
        click.echo(f"logdir-gc demo: {exc}", err=True)
        sys.exit(USAGE)
    _progress(f"generated a {brokers}-broker cluster in {target} ({result.files} files; truth: {result.truth_path})")
    _demo_signing(Path(result.config_path), target)
    _run(load_config(result.config_path), None, as_json, include_segments=False, verbose=verbose)


def _demo_signing(config_path: Path, target: Path) -> None:
    """The demo's plan job signs its proposal with a key of its own (``<out>/keys/plan-job``, as the plan's author),
    its approver with another (``<out>/keys/alice``), and its executor trusts those keys only."""
    import yaml

    from pipelines.signing.demo_trust import demo_config_sections
    from pipelines.signing.openssh import SigningError

    try:
        sections = demo_config_sections(target, getpass.getuser())
        _progress(f"approver key for the demo: {target / 'keys' / 'alice'} (trusted by "
                  f"{sections['executor']['allowed_signers']})")
        if "signing" not in sections:
            _progress(f"user name {getpass.getuser()!r} cannot be a signer: the demo's plan is not signed by its "
                      "author, so its executor refuses it [author_unsigned]")
    except SigningError as exc:
        sections = {"executor": {"require_signatures": False}}
        _progress(f"no demo keys ({exc}): the demo's executor runs unsigned")
    text = config_path.read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    data = yaml.safe_load(text)
    for name, values in sections.items():
        data[name] = {**(data.get(name) or {}), **values}
    config_path.write_text(header + yaml.safe_dump(data, sort_keys=False))
