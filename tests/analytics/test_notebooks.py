"""Both notebooks executed headless (nbclient) against a freshly built demo warehouse; the numbers they compute
are checked against the fixture's rows, and the committed files carry no outputs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from pipelines.detect.classes import GARBAGE_CLASSES
from pipelines.plan import approval

pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from tests.analytics.notebook_runner import html_outputs, run_notebook, stream_text
from tests.analytics.remote_fleet import Segment, add_remote_findings

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_capacity_notebook(demo, tmp_path: Path) -> None:
    """On a tiered cluster's warehouse: the demo's with remote findings in its newest run (and an older run's)."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(demo.warehouse, warehouse)
    remote = add_remote_findings(warehouse, "demo", "run-2", [Segment("orders", 3 * 2**20),
                                                              Segment("gone.topic", 2**20, live=False)])
    add_remote_findings(warehouse, "demo", "run-1", [Segment("orders", 2**40)])
    out = tmp_path / "capacity.json"
    nb = run_notebook(NOTEBOOKS / "capacity_analysis.ipynb",
                      {"warehouse": str(warehouse), "cluster": None, "run_id": None, "figures_out": str(out)})
    figures = json.loads(out.read_text())
    store = demo.store()
    dirs = store.read_rows("partition_dirs", {"run_id": "run-2"})
    garbage = [r for r in store.read_rows("findings", {"run_id": "run-2"})
               if r["class"] in GARBAGE_CLASSES and not r["protected"]]
    first = [r for r in store.read_rows("findings", {"run_id": "run-1"})
             if r["class"] in GARBAGE_CLASSES and not r["protected"]]
    assert figures["run_id"] == "run-2" and figures["runs"] == 2
    assert figures["total_bytes"] == sum(r["bytes"] for r in dirs)
    assert figures["partition_dirs"] == len(dirs)
    assert figures["reclaimable_bytes"] == sum(r["bytes"] for r in garbage)
    assert figures["plannable_bytes"] == sum(r["bytes"] for r in garbage if r["plannable"])
    assert figures["reclaimable_first_run"] == sum(r["bytes"] for r in first)
    assert set(figures["reclaimable_by_class"]) == {r["class"] for r in garbage}
    assert figures["remote_bytes"] == sum(f.bytes for f in remote) > 0
    assert figures["remote_plannable_bytes"] == sum(f.bytes for f in remote if f.plannable) > 0
    charts = [h for h in html_outputs(nb) if h.startswith("<figure")]
    assert len(charts) == 11 and all("<figcaption>" in h for h in charts)
    assert 'id="remote_beside_local"' in charts[-1]
    beside = [h for h in html_outputs(nb) if "remote_plannable_bytes" in h and "local_bytes" in h]
    row = re.search(r"<td>demo</td>\s*<td>run-2</td>((?:\s*<td>.*?</td>)+)", beside[0])
    cells = [int(c) for c in re.findall(r"<td>(.*?)</td>", row.group(1))]
    assert cells == [figures["total_bytes"], figures["reclaimable_bytes"], len(remote), figures["remote_bytes"],
                     figures["remote_plannable_bytes"]]
    assert '"reclaimable_bytes"' in stream_text(nb)


def test_review_notebook_prints_the_command_and_approves_nothing(demo, tmp_path: Path) -> None:
    out = tmp_path / "review.json"
    plan_id = demo.plans[-1]
    nb = run_notebook(NOTEBOOKS / "gc_plan_review.ipynb",
                      {"warehouse": str(demo.warehouse), "cluster": "demo", "plan_id": plan_id, "approver": "alice",
                       "config_path": None, "figures_out": str(out)})
    figures = json.loads(out.read_text())
    store = demo.store()
    items = store.read_rows("gc_plan_items", {"plan_id": plan_id})
    plannable = [r for r in store.read_rows("findings", {"run_id": "run-2"}) if r["plannable"]]
    assert figures["items"] == len(items) == len(plannable)
    assert figures["bytes"] == sum(r["bytes"] for r in items)
    assert figures["removed"] == 1 and figures["added"] == 0 and figures["unchanged"] == len(items)
    assert figures["failed_rules"] == []
    text = stream_text(nb)
    approve = f"logdir-gc plans approve {plan_id} --by alice --warehouse {demo.warehouse}"
    assert f"To approve:\n  {approve}\n" in text
    assert f"logdir-gc plans reject {plan_id} --by alice --reason REASON" in text
    assert approval.get_plan(store, plan_id).status == "proposed"


@pytest.mark.parametrize("name", ["capacity_analysis.ipynb", "gc_plan_review.ipynb"])
def test_committed_notebooks_are_clean(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1
    body = "\n".join(c.source for c in code if "parameters" not in c.metadata.get("tags", []))
    assert not re.search(r"^\s*(def|class) ", body, re.M)  # cells call pipelines.analytics, they define nothing


def test_notebooks_match_their_generator(tmp_path: Path) -> None:
    before = {p.name: p.read_text() for p in NOTEBOOKS.glob("*.ipynb")}
    subprocess.run([sys.executable, str(NOTEBOOKS / "make_notebooks.py")], check=True, capture_output=True)
    after = {p.name: p.read_text() for p in NOTEBOOKS.glob("*.ipynb")}
    assert after == before, "notebooks differ from make_notebooks.py: regenerate and commit them"
