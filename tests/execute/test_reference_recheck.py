"""The executor's controller re-check decodes metadata with the reference (pure-Python) code, never the compiled
twin the planner's replay used: a fault in compiled code cannot make both agree on a wrong image."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from pipelines import native
from pipelines.config.models import MetadataConfig
from pipelines.execute.controller_check import load_controller_check
from pipelines.kafka.metadata_native import MODULE
from pipelines.metadata import load_metadata

METADATA = Path(__file__).resolve().parents[1] / "fixtures" / "kraft-cluster" / "controller" / "__cluster_metadata-0"


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loaded: list[str] = []
    real = importlib.import_module

    def record(name: str, *args: object) -> object:
        module = real(name, *args)
        loaded.append(name)
        return module

    monkeypatch.setattr(native.importlib, "import_module", record)
    monkeypatch.delenv(native.PURE_PYTHON_ENV, raising=False)
    return loaded


def test_executor_recheck_never_loads_the_compiled_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    if native.load(MODULE) is None:
        pytest.skip("compiled metadata decoder not built here: nothing to keep out")
    loaded = _recording(monkeypatch)
    load_metadata(str(METADATA))
    assert MODULE in loaded  # the planner's replay does use it: the check below can fail
    loaded.clear()
    view = load_controller_check(MetadataConfig(kind="metadata_log", source=str(METADATA)))
    assert view.image.topics.by_id  # the fixture cluster's topics were replayed
    assert MODULE not in loaded
    assert native.load(MODULE) is not None  # the block ended: compiled code is back for everyone else


def test_pure_python_block_nests_and_unwinds() -> None:
    with native.pure_python():
        with native.pure_python():
            assert native.load("json") is None
        assert native.load("json") is None
    assert native.load("json") is not None
    with pytest.raises(RuntimeError), native.pure_python():
        raise RuntimeError("boom")
    assert native.load("json") is not None
