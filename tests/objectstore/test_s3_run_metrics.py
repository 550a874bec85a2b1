"""A run's metrics on an s3:// warehouse whose credentials are only in ``warehouse_storage_options``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.config.load import config_from_dict
from pipelines.metrics.run_metrics import record_run
from tests.objectstore.conftest import Bucket
from tests.objectstore.s3_servers import ACCESS_KEY, REGION, SECRET_KEY


@pytest.fixture
def no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS variable and no shared config or credentials file: only the config can say where and who."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _config(bucket: Bucket, options: dict[str, str]):
    return config_from_dict({"cluster": "c1", "warehouse": bucket.warehouse, "warehouse_storage_options": options},
                            origin="test")


def test_the_run_file_is_written_with_the_warehouse_storage_options(bucket: Bucket, no_aws_environment) -> None:
    options = {"AWS_ENDPOINT_URL": bucket.server.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}
    outcome = record_run(_config(bucket, options), "run-1", {"crawl": 1.5}, plan_id=None)
    assert outcome.file == f"{bucket.warehouse}/_metrics/logdir_gc_run_c1_run-1.prom"
    assert bucket.keys("wh/_metrics/") == ["wh/_metrics/logdir_gc_run_c1_run-1.prom"]
    assert b'logdir_gc_step_duration_seconds{cluster="c1",step="crawl"} 1.5' in bucket.read(
        "wh/_metrics/logdir_gc_run_c1_run-1.prom")
    assert not any("cannot write" in n for n in outcome.notes), outcome.notes


def test_a_metrics_file_that_cannot_be_written_is_a_one_line_note(bucket: Bucket, no_aws_environment) -> None:
    """No credentials anywhere: the S3 client raises its own error type, which becomes a note, not a traceback."""
    planted = "Planted-Secret-Token-7731"
    options = {"AWS_ENDPOINT_URL": bucket.server.endpoint, "AWS_REGION": REGION, "AWS_SESSION_TOKEN": planted}
    outcome = record_run(_config(bucket, options), "run-2", {}, plan_id=None)
    assert outcome.file is None
    notes = [n for n in outcome.notes if "cannot write" in n]
    assert len(notes) == 1 and "\n" not in notes[0] and planted not in " ".join(outcome.notes)
    assert bucket.keys("wh/_metrics/") == []
