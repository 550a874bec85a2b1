"""``logdir-gc report`` on a warehouse whose topic names were chosen by an attacker: mathtext, controls, bidi."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from pipelines import analytics as a
from pipelines.cli.main import main
from tests.analytics.demo_warehouse import DemoWarehouse

#: ``$...$`` with an unbalanced brace: matplotlib's mathtext cannot parse it (a crash before the fix); then the
#: controls an approver's terminal or browser would act on.
HOSTILE_TOPIC = "$\\alpha^{x$ \x1b[2K\r\u202eevil\u2066"


def _with_hostile_topic(demo: DemoWarehouse, root: Path) -> Path:
    """A copy of the demo warehouse whose newest run has one more partition dir, the biggest, of HOSTILE_TOPIC."""
    copy = root / "warehouse"
    shutil.copytree(demo.warehouse, copy)
    from pipelines.tables.rust_engine import RustTableStore

    store = RustTableStore(str(copy), allow_foreign_tables=True)
    row = dict(store.read_rows("partition_dirs", {"run_id": "run-2"})[0])
    row.update(topic=HOSTILE_TOPIC, dir_name=f"{HOSTILE_TOPIC}-0", partition=0, bytes=10**12)
    store.append("partition_dirs", [row])
    return copy


def test_report_with_a_mathtext_and_control_topic_name_writes_the_page(demo, tmp_path: Path, capsys) -> None:
    warehouse = _with_hostile_topic(demo, tmp_path)
    out = tmp_path / "report.html"
    with pytest.raises(SystemExit) as info:
        main(["report", "--warehouse", str(warehouse), "--out", str(out)])
    assert info.value.code in (0, None)
    page = out.read_text(encoding="utf-8")
    assert "\\x1b[2K\\x0d\\u202eevil\\u2066" in page  # shown, visibly
    assert not any(ch in page for ch in "\x1b\r\u202e\u2066")
    assert "wrote" in capsys.readouterr().out


def test_a_dollar_in_a_label_stays_text() -> None:
    df = pd.DataFrame({"topic": [HOSTILE_TOPIC, "$x$"], "bytes": [2048, 1024], "share": [0.66, 0.34]})
    chart = a.plot_top_topics(df)
    assert chart.png().startswith(b"\x89PNG")  # drawing parses every label
    labels = [t.get_text() for t in chart.figure.axes[0].get_yticklabels()]
    assert "\\$x\\$" in labels and not any("\x1b" in t for t in labels)
    assert "\x1b" not in str(chart) and "\u202e" not in chart.html()
