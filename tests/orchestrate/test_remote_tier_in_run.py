"""``logdir-gc run`` runs the remote tier's step after detect (and before plan) when ``remote_tier`` is configured,
and never without it. The steps are stand-ins: this checks the wiring, not the steps (no Spark)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import pipelines.orchestrate.pipeline as pipeline
import pipelines.orchestrate.remote_tier_step as remote_step
import pipelines.tables.spark_session as spark_session
import pipelines.tables.warehouse_store as warehouse_store
from pipelines.config.load import config_from_dict
from pipelines.orchestrate.steps import StepReport

TIER = {"layout": "aiven", "location": "s3://tier-bucket"}


@pytest.fixture
def calls(monkeypatch) -> list[str]:
    seen: list[str] = []
    cache = SimpleNamespace(unpersist=lambda: seen.append("unpersist"))
    view = SimpleNamespace(without_events=lambda: "the image")
    fake_spark = SimpleNamespace(sparkContext=SimpleNamespace(setLocalProperty=lambda *a: None))

    def step(name, result):
        def run(*args, **kwargs):
            seen.append(name)
            if name == "remote_tier":
                assert args[4] == "the image" and kwargs["now"] is not None
            return result
        return run

    monkeypatch.setattr(spark_session, "build_spark", lambda **kw: fake_spark)
    monkeypatch.setattr(spark_session, "under_spark_submit", lambda: False)
    monkeypatch.setattr(pipeline, "check_executors", lambda *a: [])
    monkeypatch.setattr(warehouse_store, "warehouse_store", lambda *a, **kw: SimpleNamespace(ensure_tables=list))
    monkeypatch.setattr(pipeline, "crawl_step", step("crawl", StepReport("crawl", {"status": "succeeded"},
                                                                         frames={"cluster_ids": ()})))
    monkeypatch.setattr(pipeline, "ingest_metadata_step", step("ingest", (StepReport("ingest_metadata", {}), view)))
    monkeypatch.setattr(pipeline, "detect_step", step("detect", StepReport("detect", {"plannable": 0},
                                                                           frames={"findings": cache})))
    monkeypatch.setattr(remote_step, "remote_tier_step", step("remote_tier", StepReport("remote_tier", {})))
    monkeypatch.setattr(pipeline, "plan_step", step("plan", (StepReport("plan", {}), None)))
    return seen


def _config(**extra):
    return config_from_dict({"cluster": "c1", "warehouse": "/w", **extra})


def test_the_remote_tier_runs_after_detect_and_before_plan(calls) -> None:
    report = pipeline.run_pipeline(_config(remote_tier=TIER), "r1", created_by="me")
    assert calls == ["crawl", "ingest", "detect", "remote_tier", "plan", "unpersist"]
    assert [s.step for s in report.steps] == ["crawl", "ingest_metadata", "detect", "remote_tier", "plan"]


def test_without_remote_tier_the_run_never_touches_a_bucket(calls) -> None:
    pipeline.run_pipeline(_config(), "r1", created_by="me")
    assert calls == ["crawl", "ingest", "detect", "plan", "unpersist"]
