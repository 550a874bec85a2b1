"""Each place a crawl or an ingest records its config masks credentials at any depth (no Spark: the pure-Python
crawl and the delta-rs ingest write the same rows the Spark run does; ``tests/orchestrate/
test_secrets_never_recorded.py`` checks a whole Spark run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipelines.config.models import AppConfig, BrokerConfig
from pipelines.crawl.local_crawl import crawl_local
from pipelines.metadata import load_metadata
from pipelines.orchestrate.controller import ControllerView
from pipelines.orchestrate.steps import ingest_metadata_step
from pipelines.redaction import redact_config, redact_text, secret_values
from pipelines.tables.rust_engine import RustTableStore
from tests.metadata.mdrecords import encode_log, feature, partition, tid, topic

NESTED, LISTED, KEY, PASSWORD, URL, HOSTLESS, META = (
    "Nested-S3cret-1111", "List-Tok3n-3333", "Key-Value-4444", "Opt-Passw0rd-2222", "Url-Passw0rd-5555",
    "No-Host-Pw-8888", "Meta-Url-Pw-6666")
SECRETS = (NESTED, LISTED, KEY, PASSWORD, URL, HOSTLESS, META)


def _strings(value: Any) -> str:
    if isinstance(value, dict):
        return "\n".join(_strings(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "\n".join(_strings(v) for v in value)
    return value if isinstance(value, str) else ""


def _brokers(tmp_path: Path) -> list[BrokerConfig]:
    local = tmp_path / "b1"
    (local / "orders-0").mkdir(parents=True)
    return [
        BrokerConfig(broker_id=1, log_dirs=[str(local)], storage_options={
            "client_kwargs": {"aws_secret_access_key": NESTED, "region_name": "r"}, "hosts": [{"token": LISTED}],
            "key": KEY}),
        # refused at once: connection refused, and a URL without a host, whose error quotes the URL
        BrokerConfig(broker_id=2, log_dirs=[f"sftp://gc:{URL}@127.0.0.1:1/data", f"sftp://gc:{HOSTLESS}@/data"],
                     storage_options={"password": PASSWORD, "timeout": 5}),
    ]


def test_the_crawl_records_no_credential(tmp_path: Path) -> None:
    result = crawl_local(_brokers(tmp_path), run_id="r1", cluster="c1")
    recorded = json.loads(result.run_row["config_json"])
    assert recorded[0]["storage_options"] == {"client_kwargs": {"aws_secret_access_key": "***", "region_name": "r"},
                                              "hosts": [{"token": "***"}], "key": "***"}
    assert recorded[1] == {"broker_id": 2, "inventory": None, "storage_options": {"password": "***", "timeout": 5},
                           "log_dirs": ["sftp://gc:***@127.0.0.1:1/data", "sftp://gc:***@/data"]}
    assert sorted(e["log_dir"] for e in result.errors) == ["sftp://gc:***@/data", "sftp://gc:***@127.0.0.1:1/data"]
    assert any("no host in" in e["reason"] for e in result.errors)  # the backend's message quoted the URL
    rows = [result.run_row, *result.log_dirs, *result.partition_dirs, *result.errors]
    assert [s for s in SECRETS if s in _strings(rows)] == []


def test_the_ingest_records_its_source_without_the_password(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(encode_log([feature("metadata.version", 21), topic("a", tid(1)), partition(tid(1), 0, [1])]))
    result = load_metadata(str(log))
    view = ControllerView(result.image, result.events, f"sftp://gc:{META}@ctl.example/meta/{log.name}")
    store = RustTableStore(str(tmp_path / "warehouse"), allow_foreign_tables=True)
    store.ensure_tables()
    config = AppConfig.model_validate({"cluster": "c1", "warehouse": str(tmp_path / "warehouse"),
                                       "brokers": [{"broker_id": 1, "log_dirs": [str(tmp_path / "logs")]}]})
    ingest_metadata_step(store, config, "r1", view=view)
    [row] = store.read_rows("ingest_runs", {"run_id": "r1"})
    assert row["source"] == f"sftp://gc:***@ctl.example/meta/{log.name}"
    for table in ("ingest_runs", "metadata_events", "controller_topics", "controller_partitions"):
        assert META not in _strings(store.read_rows(table)), table


def test_redaction_at_any_depth_and_in_any_url() -> None:
    config = {"storage_options": {"client_kwargs": {"aws_secret_access_key": NESTED}, "Password": PASSWORD,
                                  "nested": [{"deeper": {"api_key": KEY}}], "token": LISTED,
                                  "key_filename": "/etc/gc/id_ed25519", "username": "gc"},
              "urls": [f"s3://k:{URL}@bucket/x", f"https://h/p?X-Amz-Signature={HOSTLESS}&part=1"]}
    masked = redact_config(config)
    assert masked["storage_options"] == {"client_kwargs": {"aws_secret_access_key": "***"}, "Password": "***",
                                         "nested": [{"deeper": {"api_key": "***"}}], "token": "***",
                                         "key_filename": "/etc/gc/id_ed25519", "username": "gc"}
    assert masked["urls"] == ["s3://k:***@bucket/x", "https://h/p?X-Amz-Signature=***&part=1"]
    found = secret_values(config)
    assert {NESTED, PASSWORD, KEY, LISTED, URL, HOSTLESS} <= found and "gc" not in found
    assert redact_text(f"login as gc with {PASSWORD} to sftp://gc:{URL}@h failed", found) == \
        "login as gc with *** to sftp://gc:***@h failed"


def test_the_sftp_settings_error_never_quotes_a_password() -> None:
    import pytest

    from pipelines.crawl.backends.ssh_options import ssh_target
    from pipelines.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        ssh_target(f"sftp://gc:{HOSTLESS}@/data")
    assert HOSTLESS not in str(info.value) and "sftp://gc:***@/data" in str(info.value)
