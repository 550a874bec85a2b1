"""Execute a notebook headless with nbclient, papermill-style: a cell with the given parameters is inserted after
the ``parameters``-tagged cell, and the notebook runs with its own directory as the working directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient


def run_notebook(path: Path, parameters: dict[str, Any], *, timeout: int = 300) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
    injected = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    injected["id"] = "injected-parameters"
    nb.cells.insert(index + 1, injected)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def stream_text(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook printed."""
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def html_outputs(nb: nbformat.NotebookNode) -> list[str]:
    return [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.get("output_type") in ("execute_result", "display_data") and "text/html" in o.get("data", {})]
