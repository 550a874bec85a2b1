"""Credentials planted at any depth of a config never reach a table, a file under the warehouse, the run's report or
progress, or an error message: a real run (Spark + Delta) on a generated cluster plus an unreachable ``sftp://`` log
dir, and the CLI's error paths."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.config import load_config
from pipelines.orchestrate import run_pipeline
from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.tables.schemas import ALL_TABLES

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]

#: Each planted where a different rule must catch it.
NESTED = "Nested-S3cret-1111"  # storage_options.client_kwargs.aws_secret_access_key
PASSWORD = "Opt-Passw0rd-2222"  # storage_options.password (the sftp broker's, also in its connection attempt)
LISTED = "List-Tok3n-3333"  # storage_options.hosts[0].token: a list inside the options
KEY = "Key-Value-4444"  # storage_options.key (s3fs's name for an access key)
URL = "Url-Passw0rd-5555"  # sftp://gc:PASSWORD@... in a broker's log dirs
META = "Meta-Url-Pw-6666"  # the metadata source's URL, as the ingest records it
CLI = "Cli-Url-Pw-7777"  # a URL given to metadata show / inspect
SECRETS = (NESTED, PASSWORD, LISTED, KEY, URL, META, CLI)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, bytes):
        return [value.decode("utf-8", "replace")]
    return [value] if isinstance(value, str) else []


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("secrets")
    spec = ClusterSpec(brokers=2, jbod_dirs=1, anomalies=PRESETS["small"], seed=11)
    generate(spec, out, warehouse=str(out / "warehouse"), force=True)
    doc = yaml.safe_load((out / "cluster.yaml").read_text())
    doc["brokers"][0]["storage_options"] = {"client_kwargs": {"aws_secret_access_key": NESTED, "region_name": "r"},
                                            "hosts": [{"token": LISTED}], "key": KEY}
    doc["brokers"].append({"broker_id": 99, "log_dirs": [f"sftp://gc:{URL}@127.0.0.1:1/var/lib/kafka"],
                           "storage_options": {"password": PASSWORD, "timeout": 5}})
    path = out / "secret.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_run_records_no_credential_anywhere(spark, config_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    from pipelines.orchestrate import steps

    real = steps.load_controller_view

    def with_a_password_in_its_url(metadata):  # the source as an sftp:// copy with a password would name it
        return dataclasses.replace(real(metadata), source=f"sftp://gc:{META}@ctl.example/meta/__cluster_metadata-0")

    monkeypatch.setattr(steps, "load_controller_view", with_a_password_in_its_url)
    config = load_config(config_path)
    progress: list[str] = []
    report = run_pipeline(config, "s1", created_by="ops", progress=progress.append)

    from pipelines.tables import open_store

    store = open_store("rust", config.warehouse)
    [run] = store.read_rows("crawl_runs", {"run_id": "s1"})
    recorded = json.loads(run["config_json"])
    assert recorded[0]["storage_options"] == {"client_kwargs": {"aws_secret_access_key": "***", "region_name": "r"},
                                              "hosts": [{"token": "***"}], "key": "***"}
    assert recorded[-1]["log_dirs"] == ["sftp://gc:***@127.0.0.1:1/var/lib/kafka"]
    assert recorded[-1]["storage_options"]["password"] == "***"
    errors = store.read_rows("crawl_errors", {"run_id": "s1"})
    assert [e["log_dir"] for e in errors if e["broker_id"] == 99] == ["sftp://gc:***@127.0.0.1:1/var/lib/kafka"]
    assert [r["source"] for r in store.read_rows("ingest_runs", {"run_id": "s1"})] == [
        "sftp://gc:***@ctl.example/meta/__cluster_metadata-0"]

    leaks: dict[str, list[str]] = {}
    for table in ALL_TABLES:  # every row of every table, every string value, nested ones included
        if store.exists(table):
            found = _leaks("\n".join(s for row in store.read_rows(table) for s in _strings(row)))
            if found:
                leaks[table] = found
    for path in Path(config.warehouse).rglob("*"):  # the plan files, Delta logs, metrics, Spark's log
        if path.is_file() and path.suffix != ".parquet":
            found = _leaks(path.read_bytes().decode("utf-8", "replace"))
            if found:
                leaks[str(path)] = found
    outputs = "\n".join([*progress, json.dumps(report.to_json_dict(), default=str), *capfd.readouterr()])
    if _leaks(outputs):
        leaks["report, progress, stdout and stderr"] = _leaks(outputs)
    assert leaks == {}


@pytest.mark.parametrize("options", [[], ["--storage-option", f"password={PASSWORD}"],
                                     ["--storage-option", f"password={PASSWORD}", "--storage-option", "bogus=1"]])
@pytest.mark.parametrize("command", [["metadata", "show"], ["inspect"]])
def test_an_unreachable_sftp_url_with_a_password_is_one_line_exit_3_without_it(command: list[str],
                                                                               options: list[str],
                                                                               tmp_path: Path) -> None:
    url = "sftp://gc@127.0.0.1:1/var/lib/kafka" if options else f"sftp://gc:{CLI}@127.0.0.1:1/var/lib/kafka"
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", *command, url, *options], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=False)
    assert proc.returncode == 3, proc
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and _leaks(proc.stderr) == []
    assert ("sftp://gc@127.0.0.1:1/" if options else "sftp://gc:***@127.0.0.1:1/") in proc.stderr
