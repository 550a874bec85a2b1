"""The README stays true: its table reference, commands and class vocabulary match the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pipelines.cli.main import COMMANDS
from pipelines.detect.classes import ALL_CLASSES

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _table_docs() -> str:
    spec = importlib.util.spec_from_file_location("table_docs", REPO / "scripts" / "table_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.render()


def test_table_reference_is_generated_from_the_schemas() -> None:
    start = README.index("<!-- tables:start -->") + len("<!-- tables:start -->")
    end = README.index("<!-- tables:end -->")
    assert README[start:end].strip() == _table_docs().strip(), "run scripts/table_docs.py and paste its output"


def test_every_command_is_documented() -> None:
    missing = [name for name in COMMANDS if f"logdir-gc {name}" not in README]
    assert not missing, f"README does not mention: {missing}"


def test_every_class_is_documented() -> None:
    missing = [c for c in ALL_CLASSES if f"`{c}`" not in README]
    assert not missing, f"README does not explain classes: {missing}"


def test_two_setup_commands_and_ci_use_the_same_test_command() -> None:
    assert "make demo" in README and "make test" in README
    assert "make test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
