"""The README and the docs stay true: the table reference, commands, class vocabulary and set-up match the code."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from pipelines.cli.main import COMMANDS
from pipelines.detect.classes import ALL_CLASSES

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _table_docs() -> str:
    spec = importlib.util.spec_from_file_location("table_docs", REPO / "scripts" / "table_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.render()


def test_table_reference_is_generated_from_the_schemas() -> None:
    tables = _doc("tables.md")
    start = tables.index("<!-- tables:start -->") + len("<!-- tables:start -->")
    end = tables.index("<!-- tables:end -->")
    assert tables[start:end].strip() == _table_docs().strip(), "run scripts/table_docs.py and paste its output"


def test_every_command_is_documented() -> None:
    commands = _doc("commands.md")
    missing = [name for name in COMMANDS if f"logdir-gc {name}" not in commands]
    assert not missing, f"docs/commands.md does not mention: {missing}"


def test_every_class_is_documented() -> None:
    classes = _doc("classes.md")
    missing = [c for c in ALL_CLASSES if f"`{c}`" not in classes]
    assert not missing, f"docs/classes.md does not explain classes: {missing}"


def test_two_setup_commands_and_ci_use_the_same_test_command() -> None:
    assert "make demo" in README and "make test" in README
    assert "make test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_is_a_landing_page_that_maps_every_docs_page() -> None:
    assert len(README.splitlines()) <= 300
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", README))
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages - linked == set(), f"README's map lacks {sorted(pages - linked)}"
    assert linked - pages == set(), f"README links to missing pages {sorted(linked - pages)}"


def test_every_docs_page_is_in_the_mkdocs_navigation() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in DOCS.glob("*.md") if f": {p.name}" not in nav]
    assert not missing, f"mkdocs.yml nav lacks {missing}"
