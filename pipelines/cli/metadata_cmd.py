"""``logdir-gc metadata show PATH``: replay a KRaft metadata dir, snapshot or segment and show the image.

Default: a summary that fits a screen (``metadata_text.render_summary``); ``--topics``, ``--partitions`` and
``--events`` list those in full; ``--json`` streams the whole image as one document (``metadata_stream``);
``--records`` dumps every record without replaying (``metadata_records``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, BinaryIO

import click

from pipelines.cli import fast_exit
from pipelines.cli.exit_codes import DECODE, UNREADABLE
from pipelines.cli.storage_options import storage_options
from pipelines.errors import DecodeError
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

if TYPE_CHECKING:
    from pipelines.metadata.metadata_log_source import ReplayResult


@click.group("metadata")
def metadata() -> None:
    """Read controller metadata: KRaft (__cluster_metadata-0, snapshots, segments) and ZooKeeper (dump-zk)."""


@metadata.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print the image, events and completeness as one JSON document.")
@click.option("--records", is_flag=True, help="Dump every decoded record as JSON lines (like kafka-dump-log).")
@click.option("--topics", "list_topics", is_flag=True, help="List every topic (id, partitions, replication).")
@click.option("--partitions", "list_partitions", is_flag=True, help="List every partition's assignment.")
@click.option("--events", "list_events", is_flag=True, help="List every event replayed (creations, deletions...).")
@click.option("--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
              help="fsspec storage option for a remote PATH (repeatable).")
def show(path: str, as_json: bool, records: bool, list_topics: bool, list_partitions: bool, list_events: bool,
         storage_option: tuple[str, ...]) -> None:
    """Replay PATH (a __cluster_metadata-0 dir, a .checkpoint or a .log; path or fsspec URL) and show a summary.

    Exits 0 when the image could be built (an incomplete image included), 3 when PATH cannot be read, 8 when it
    holds no metadata record at all (empty files, or no segment or snapshot) or, with --records, a record cannot
    be decoded.
    """
    from pipelines.cli.remote_errors import cannot, reach_errors
    from pipelines.metadata.metadata_log_source import url_to_fs
    from pipelines.redaction import secret_values

    if records and (as_json or list_topics or list_partitions or list_events):
        raise click.UsageError("--records dumps records; it does not combine with --json, --topics, "
                               "--partitions or --events")
    if as_json and (list_topics or list_partitions or list_events):
        raise click.UsageError("--json prints everything; it does not combine with --topics, --partitions "
                               "or --events")
    options = storage_options(storage_option)
    secrets = secret_values(options) | secret_values(path)
    try:
        fs, root = url_to_fs(path, options)
    except (ValueError, ImportError, TypeError) as exc:  # fsspec: unknown protocol, missing backend, bad option
        cannot("metadata show", "open", path, exc, secrets)
    except reach_errors() as exc:  # an sftp:// host that refuses, is unknown, or rejects the login
        cannot("metadata show", "reach", path, exc, secrets)
    sys.stdout.flush()
    out: BinaryIO = sys.stdout.buffer
    fast_exit.request()
    try:
        if records:
            _records(fs, root, path, out, secrets)
            return
        from pipelines.metadata.metadata_log_source import load_metadata

        summary_only = not (as_json or list_topics or list_partitions or list_events)
        # the summary counts events: the partition_added events of new partitions are counted, not kept
        result = load_metadata(path, options or None, keep_partition_added=not summary_only)
    except reach_errors() as exc:
        cannot("metadata show", "read", path, exc, secrets)
    except DecodeError as exc:
        cannot("metadata show", "decode", path, exc, secrets, code=DECODE)
    if not any(f.records for f in result.files):
        why = (result.errors or result.image.incomplete_reasons
               or ([f"{len(result.files)} file(s), every one empty"] if result.files
                   else ["no .log segment or .checkpoint snapshot in it"]))
        line = redact_text(f"{path} holds no decodable KRaft metadata record: " + "; ".join(why), secrets)
        click.echo(f"logdir-gc metadata show: {shown(line, 1000)}", err=True)
        sys.exit(DECODE)
    _show(result, out, as_json, list_topics, list_partitions, list_events)


def _records(fs: object, root: str, path: str, out: BinaryIO, secrets: set[str]) -> None:
    from pipelines.cli.metadata_records import dump_records

    protocol = getattr(fs, "protocol", ())
    local = "file" in (protocol if isinstance(protocol, tuple) else (protocol,))
    problems = dump_records(fs, root, out, local)
    out.flush()
    for problem in problems:
        click.echo(f"logdir-gc metadata show: {shown(redact_text(problem, secrets), 1000)}", err=True)
    if problems:
        sys.exit(DECODE)


def _show(result: ReplayResult, out: BinaryIO, as_json: bool, list_topics: bool, list_partitions: bool,
          list_events: bool) -> None:
    from pipelines.cli import metadata_text as text
    from pipelines.metadata.summary import summarize

    if as_json:
        from pipelines.cli.metadata_stream import write_show_json

        write_show_json(out, result, summarize(result))
    elif list_topics or list_partitions or list_events:
        for wanted, lines in ((list_topics, text.topic_lines), (list_partitions, text.partition_lines),
                              (list_events, text.event_lines)):
            if wanted:
                text.write_lines(out, lines(result))
    else:
        out.write(text.render_summary(result, summarize(result)).encode())
    out.flush()


@metadata.command("dump-zk")
@click.option("--zookeeper-connect", "connect", metavar="HOST:PORT[,...][/CHROOT]",
              help="The ensemble to read (default: metadata.zookeeper_connect of --config).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Take zookeeper_connect, zookeeper_timeout_ms, zookeeper_tls and zookeeper_auth from this config.")
@click.option("--out", required=True, metavar="FILE",
              help="Where the JSON dump goes (path or fsspec URL; - for stdout).")
@click.option("--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
              help="fsspec storage option for a remote FILE (repeatable).")
def dump_zk(connect: str | None, config_path: str | None, out: str, storage_option: tuple[str, ...]) -> None:
    """Read a ZooKeeper-mode cluster's Kafka znodes (read-only) into a dump file for `metadata.kind: zookeeper`.

    Exits 0 on success, 3 when ZooKeeper cannot be reached or FILE cannot be written, 4 for a bad connect string or
    config.
    """
    import fsspec
    from pydantic import ValidationError

    from pipelines.config.load import load_config
    from pipelines.config.models import MetadataConfig
    from pipelines.errors import ConfigError
    from pipelines.metadata.zookeeper_source import image_from_znodes
    from pipelines.metadata.zookeeper_znodes import read_live

    base = load_config(config_path).metadata if config_path else MetadataConfig(kind="none")
    connect = connect or base.zookeeper_connect
    if not connect:
        raise ConfigError("metadata dump-zk: give --zookeeper-connect or a --config with metadata.zookeeper_connect")
    try:
        config = MetadataConfig(kind="zookeeper", zookeeper_connect=connect,
                                zookeeper_timeout_ms=base.zookeeper_timeout_ms, zookeeper_tls=base.zookeeper_tls,
                                zookeeper_auth=base.zookeeper_auth)
    except ValidationError as exc:
        raise ConfigError(f"metadata dump-zk: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    snapshot = read_live(config)
    text = snapshot.to_json()
    if out == "-":
        click.echo(text, nl=False)
    else:
        try:
            with fsspec.open(out, "wt", encoding="utf-8", **storage_options(storage_option)) as f:
                f.write(text)
        except OSError as exc:
            click.echo(f"logdir-gc metadata dump-zk: cannot write {out}: {exc.strerror or exc}", err=True)
            sys.exit(UNREADABLE)
    image, _events, _notes = image_from_znodes(snapshot)
    click.echo(f"{len(snapshot.znodes)} znodes from {connect}: {len(image.topics) + len(image.topics_without_id)} "
               f"topics ({len(image.topics_without_id)} without a topic id), {len(image.brokers)} brokers, "
               f"{len(image.topic_deletions)} deletions queued; last zxid {snapshot.last_zxid}"
               + ("" if image.complete else "; INCOMPLETE: " + "; ".join(image.incomplete_reasons)),
               err=out == "-")
