"""Print the Markdown reference of every Delta table from pipelines.tables.schemas (pasted into docs/tables.md).

    .venv/bin/python scripts/table_docs.py
"""

from __future__ import annotations

from pipelines.tables.ownership import ENGINE_NAMES, writer_of
from pipelines.tables.schemas import ALL_TABLES


def render() -> str:
    out: list[str] = []
    for table in ALL_TABLES.values():
        parts = f" Partitioned by `{', '.join(table.partition_by)}`." if table.partition_by else ""
        writer = f" Written by {ENGINE_NAMES[writer_of(table.name)]} only."
        out.append(f"### `{table.name}`\n{table.doc}{parts}{writer}\n")
        out.append("| column | type | notes |\n|---|---|---|")
        for c in table.columns:
            required = "" if c.nullable else " (required)"
            notes = c.doc.replace("|", "\\|")
            out.append(f"| `{c.name}` | {c.type}{required} | {notes} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render())
