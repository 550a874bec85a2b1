"""``logdir-gc metadata show PATH``: replay a KRaft metadata dir, snapshot or segment and show the image."""

from __future__ import annotations

import json
import posixpath
import sys
from typing import Any

import click

from pipelines.cli.exit_codes import DECODE, UNREADABLE
from pipelines.cli.storage_options import storage_options
from pipelines.errors import DecodeError
from pipelines.kafka.uuid import DIRECTORY_ID_NAMES
from pipelines.metadata.image import MetadataImage
from pipelines.metadata.metadata_log_source import ReplayResult, load_metadata


def _dir(d: Any) -> str:
    return DIRECTORY_ID_NAMES.get(d, str(d))


def show_json(result: ReplayResult) -> dict[str, Any]:
    """The JSON document of ``metadata show --json`` (keys documented in the README)."""
    image = result.image
    return {
        "complete": image.complete,
        "incomplete_reasons": list(image.incomplete_reasons),
        "last_offset": image.last_offset,
        "last_epoch": image.provenance.last_epoch,
        "last_timestamp_ms": image.provenance.last_timestamp_ms,
        "source": image.provenance.source,
        "features": dict(image.features),
        "topics": [
            {
                "topic_id": str(t.topic_id),
                "name": t.name,
                "partitions": [
                    {
                        "partition": p.partition, "replicas": list(p.replicas), "isr": list(p.isr),
                        "leader": p.leader, "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                        "directories": [str(d) for d in p.directories],
                        "adding_replicas": list(p.adding_replicas), "removing_replicas": list(p.removing_replicas),
                        "elr": list(p.elr), "last_known_elr": list(p.last_known_elr),
                    }
                    for p in sorted(t.partitions.values(), key=lambda x: x.partition)
                ],
            }
            for t in sorted(image.topics.by_id.values(), key=lambda t: t.name)
        ],
        "brokers": [
            {
                "broker_id": b.broker_id, "epoch": b.epoch, "fenced": b.fenced,
                "in_controlled_shutdown": b.in_controlled_shutdown, "log_dirs": [str(d) for d in b.log_dirs],
                "rack": b.rack,
                "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in b.endpoints],
            }
            for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
        ],
        "configs": [
            {"resource_type": rtype, "resource_name": rname, "configs": dict(values)}
            for (rtype, rname), values in sorted(image.configs.resources.items())
        ],
        "counts": image.misc.counts(),
        "events": [e.to_json_dict() for e in result.events],
        "errors": list(result.errors),
        "notes": list(result.notes),
        "files": [
            {"name": f.name, "kind": f.kind, "used": f.used, "records": f.records, "first_offset": f.first_offset,
             "last_offset": f.last_offset, "note": f.note}
            for f in result.files
        ],
    }


def render_text(result: ReplayResult) -> str:
    image: MetadataImage = result.image
    lines = [f"source: {image.provenance.source}",
             f"last offset: {image.last_offset} (epoch {image.provenance.last_epoch})",
             f"metadata.version: {image.metadata_version}",
             "image: " + ("COMPLETE" if image.complete else "INCOMPLETE")]
    lines += [f"  - {r}" for r in image.incomplete_reasons]
    lines.append(f"brokers ({len(image.brokers)}):")
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        state = "fenced" if b.fenced else "unfenced"
        lines.append(f"  {b.broker_id}: epoch {b.epoch}, {state}, log dirs {[str(d) for d in b.log_dirs]}")
    lines.append(f"topics ({len(image.topics)}):")
    for t in sorted(image.topics.by_id.values(), key=lambda t: t.name):
        lines.append(f"  {t.name} ({t.topic_id}) partitions={len(t.partitions)}")
        for p in sorted(t.partitions.values(), key=lambda x: x.partition):
            extra = ""
            if p.adding_replicas or p.removing_replicas:
                extra = f" adding={list(p.adding_replicas)} removing={list(p.removing_replicas)}"
            lines.append(f"    {p.partition}: leader={p.leader} replicas={list(p.replicas)} isr={list(p.isr)} "
                         f"dirs={[_dir(d) for d in p.directories]}{extra}")
    lines.append(f"events: {len(result.events)}")
    for kind in ("errors", "notes"):
        items = getattr(result, kind)
        if items:
            lines.append(f"{kind} ({len(items)}):")
            lines += [f"  {x}" for x in items]
    return "\n".join(lines) + "\n"


def _dump_records(path: str, result: ReplayResult, options: dict[str, str]) -> None:
    """kafka-dump-log ``--cluster-metadata-decoder``-like output, one JSON object per record."""
    import fsspec

    from pipelines.kafka.metadata_codec import control_to_json_dict, iter_metadata_log, to_json_dict

    fs, root = fsspec.core.url_to_fs(path, **options)
    names = [f.name for f in result.files if f.kind in ("checkpoint", "log")] if fs.isdir(root) else [None]
    failed = False
    for name in names:
        file_path = root if name is None else posixpath.join(root, name)
        log = iter_metadata_log(fs.cat_file(file_path))
        for entry in log:
            record = entry.record
            payload = (
                {"type": record.type_name, "data": control_to_json_dict(record)} if entry.is_control
                else to_json_dict(record)
            )
            click.echo(json.dumps({
                "file": posixpath.basename(file_path), "offset": entry.offset, "baseOffset": entry.batch_base_offset,
                "epoch": entry.epoch, "timestamp": entry.batch_timestamp_ms, "isControl": entry.is_control,
                "payload": payload,
            }, default=str))
        for error in log.errors:
            failed = True
            click.echo(f"logdir-gc metadata show: {posixpath.basename(file_path)}: offset {error.offset}, "
                       f"position {error.position}: {error.message}", err=True)
        if log.trailing_invalid_bytes:
            click.echo(f"logdir-gc metadata show: {posixpath.basename(file_path)}: {log.trailing_invalid_bytes} "
                       "invalid bytes at the end", err=True)
    if failed:
        sys.exit(DECODE)


@click.group("metadata")
def metadata() -> None:
    """Read controller metadata: KRaft (__cluster_metadata-0, snapshots, segments) and ZooKeeper (dump-zk)."""


@metadata.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print the image, events and completeness as JSON.")
@click.option("--records", is_flag=True, help="Dump every decoded record as JSON lines (like kafka-dump-log).")
@click.option("--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
              help="fsspec storage option for a remote PATH (repeatable).")
def show(path: str, as_json: bool, records: bool, storage_option: tuple[str, ...]) -> None:
    """Replay PATH (a __cluster_metadata-0 dir, a .checkpoint or a .log; path or fsspec URL) and show the image.

    Exits 0 when the image could be built (an incomplete image included), 3 when PATH cannot be read, 8 when it
    holds no metadata record at all (empty files, or no segment or snapshot).
    """
    import fsspec

    options = storage_options(storage_option)
    try:
        fsspec.core.url_to_fs(path, **options)
    except (ValueError, ImportError) as exc:  # fsspec: unknown protocol or missing backend
        click.echo(f"logdir-gc metadata show: cannot open {path}: {exc}", err=True)
        sys.exit(UNREADABLE)
    try:
        result = load_metadata(path, options or None)
        if records:
            _dump_records(path, result, options)
            return
    except OSError as exc:
        click.echo(f"logdir-gc metadata show: cannot read {path}: {exc.strerror or exc}", err=True)
        sys.exit(UNREADABLE)
    except DecodeError as exc:
        click.echo(f"logdir-gc metadata show: cannot decode {path}: {exc}", err=True)
        sys.exit(DECODE)
    if not any(f.records for f in result.files):
        why = (result.errors or result.image.incomplete_reasons
               or ([f"{len(result.files)} file(s), every one empty"] if result.files
                   else ["no .log segment or .checkpoint snapshot in it"]))
        click.echo(f"logdir-gc metadata show: {path} holds no decodable KRaft metadata record: " + "; ".join(why),
                   err=True)
        sys.exit(DECODE)
    if as_json:
        click.echo(json.dumps(show_json(result), indent=2))
    else:
        click.echo(render_text(result), nl=False)


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
