"""Where the step finds ``__remote_log_metadata`` replicas, and reading one through fsspec as a local read does."""

from __future__ import annotations

import socket
from pathlib import Path

import fsspec
import pytest
from remote_builders import OLD, copy_started, uid, update

from pipelines.cli.exit_codes import code_for
from pipelines.config.kafka_client import kafka_python_options
from pipelines.config.load import config_from_dict
from pipelines.errors import ConfigError, SourceUnavailable
from pipelines.orchestrate.remote_tier_step import metadata_sources
from pipelines.remote_tier.metadata_consumer import LiveSource
from pipelines.remote_tier.metadata_sources import (
    ReplicaSource,
    find_replicas,
    read_replica_at,
    summary_of_row,
    summary_row,
)
from pipelines.remote_tier.metadata_topic import read_replica
from pipelines.remote_tier.metadata_writer import write_metadata_replica
from pipelines.remote_tier.spark_classify import choose_sources

EVENTS = [copy_started("t", uid(1), 0, uid(2), OLD), update("t", uid(1), 0, uid(2), 1, OLD + 1)]


def _log_dir(path: Path) -> Path:
    write_metadata_replica(path, 3, EVENTS)
    (path / "orders-0").mkdir(parents=True)
    (path / "__remote_log_metadata-x").mkdir()
    return path


def test_replicas_are_found_in_every_brokers_log_dirs(tmp_path: Path) -> None:
    a, b = _log_dir(tmp_path / "b1"), _log_dir(tmp_path / "b2")
    config = config_from_dict({"cluster": "c", "warehouse": "/w", "remote_tier": {"layout": "aiven",
                               "location": "s3://t"}, "brokers": [{"broker_id": 1, "log_dirs": [str(a)]},
                                                                  {"broker_id": 2, "log_dirs": [str(b)]}]})
    sources, notes = metadata_sources(config)
    assert [(s.url, s.metadata_partition) for s in sources] == [(f"{a}/__remote_log_metadata-3", 3),
                                                               (f"{b}/__remote_log_metadata-3", 3)]
    assert notes == []
    bare = config.model_copy(update={"brokers": config.brokers[:0]})
    assert metadata_sources(bare)[0] == [] and "every remote segment is untracked" in metadata_sources(bare)[1][0]


def test_a_configured_source_wins(tmp_path: Path) -> None:
    copy = _log_dir(tmp_path / "copy")
    tier = {"layout": "aiven", "location": "s3://t", "metadata": {"source": str(copy)}}
    config = config_from_dict({"cluster": "c", "warehouse": "/w", "remote_tier": tier,
                               "brokers": [{"broker_id": 1, "log_dirs": [str(tmp_path / "none")]}]})
    assert [s.metadata_partition for s in metadata_sources(config)[0]] == [3]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_live_cluster_is_one_line_naming_the_servers_and_exit_3(tmp_path: Path) -> None:
    """A real socket to a closed loopback port (no mock): the run's metadata source refuses in one line that names
    the servers and the cause, mapped to exit 3 (nothing could be read), before any partition is read."""
    servers = f"127.0.0.1:{_closed_port()}"
    live = config_from_dict({"cluster": "c", "warehouse": "/w", "remote_tier": {
        "layout": "aiven", "location": "s3://t", "metadata": {
            "bootstrap_servers": servers, "kafka_client": {"request_timeout_ms": 2000}}}})
    with pytest.raises(SourceUnavailable) as exc:
        metadata_sources(live)
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"remote_tier.metadata.bootstrap_servers {servers}: cannot read")
    assert "Unable to bootstrap" in line
    assert code_for(exc.value) == 3


def test_a_live_sasl_password_comes_from_the_environment_and_is_never_shown(monkeypatch) -> None:
    """The secret is named by an environment variable; unset, one config line; set, it reaches the client options
    but not a source's repr or url."""
    client = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "gc",
              "sasl_password_env": "KLGC_TEST_KAFKA_PW", "ssl_cafile": "/ca.pem"}
    meta = config_from_dict({"cluster": "c", "warehouse": "/w", "remote_tier": {
        "layout": "aiven", "location": "s3://t", "metadata": {"bootstrap_servers": "k:9093",
                                                              "kafka_client": client}}}).remote_tier.metadata
    monkeypatch.delenv("KLGC_TEST_KAFKA_PW", raising=False)
    with pytest.raises(ConfigError, match="KLGC_TEST_KAFKA_PW is not set"):
        kafka_python_options(meta.kafka_client, "remote_tier.metadata.kafka_client")
    monkeypatch.setenv("KLGC_TEST_KAFKA_PW", "s3cret")
    options = kafka_python_options(meta.kafka_client, "remote_tier.metadata.kafka_client")
    assert options["sasl_plain_password"] == "s3cret" and options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["security_protocol"] == "SASL_SSL" and options["ssl_cafile"] == "/ca.pem"
    source = LiveSource("k:9093", 0, 0, 1, 0, 1, True, client_options=options)
    assert "s3cret" not in repr(source) and "s3cret" not in source.url


def test_an_fsspec_replica_reads_as_the_local_one(tmp_path: Path) -> None:
    local = _log_dir(tmp_path / "ld") / "__remote_log_metadata-3"
    fs = fsspec.filesystem("memory")
    for f in local.iterdir():
        fs.pipe(f"/rlm/__remote_log_metadata-3/{f.name}", f.read_bytes())
    [source] = find_replicas("memory:///rlm")
    remote, here = read_replica_at(source), read_replica(local)
    assert remote.events == here.events and (remote.first_offset, remote.last_offset) == (0, 1)
    summary = summary_of_row(summary_row(remote))
    assert summary.events == () and summary.event_count == 2 and summary.whole


def test_an_unreadable_replica_is_never_chosen_over_a_read_one(tmp_path: Path) -> None:
    good = read_replica_at(ReplicaSource(str(_log_dir(tmp_path / "g") / "__remote_log_metadata-3"), 3))
    bad = summary_row(good) | {"source": "a-first-by-name", "read_error": "OSError: gone", "events_read": 99}
    chosen = choose_sources([bad, summary_row(good)])
    assert chosen[3].source == good.source
    [only] = choose_sources([bad]).values()
    assert not only.whole and only.unreliable_from == 0
