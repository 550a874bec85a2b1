"""conf/monitoring: every alert and dashboard expression names metrics the product really writes; the rules
pass Prometheus' own checker; docs/monitoring.md documents every metric."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from metrics_files import parse

from pipelines.config import config_from_dict
from pipelines.metrics import catalog
from pipelines.metrics import executor_metrics as em
from pipelines.metrics.run_metrics import record_run
from tests.analytics.demo_warehouse import DemoWarehouse

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "conf" / "monitoring"
METRIC = re.compile(r"\blogdir_gc_[a-z0-9_]+\b")


def _expressions() -> list[tuple[str, str]]:
    """(where, PromQL) of every alert rule, dashboard panel target and dashboard variable query."""
    out = []
    for group in yaml.safe_load((MONITORING / "alerts.yml").read_text())["groups"]:
        out += [(f"alert {r['alert']}", r["expr"]) for r in group["rules"]]
    dash = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    for panel in dash["panels"]:
        out += [(f"panel {panel['title']!r}", t["expr"]) for t in panel.get("targets", [])]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            out.append((f"variable {var['name']}", var["query"]["query"]))
    return out


@pytest.fixture(scope="module")
def written(demo: DemoWarehouse, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Sample names in the files the product writes: a run's file and an executor textfile that has seen every
    kind of event."""
    tmp = tmp_path_factory.mktemp("written")
    config = config_from_dict({"cluster": demo.cluster, "warehouse": str(demo.warehouse),
                               "metrics": {"dir": str(tmp / "runs"), "textfile_dir": str(tmp / "textfile")}},
                              origin="test")
    run = record_run(config, "run-2", {"crawl": 1.0}, plan_id=demo.plans[1])
    em.record_apply(config, 1, [("quarantined", 10), ("skipped", 0)])
    em.record_refusal(config, 1, "lock_held")
    em.record_purge(config, 1, 1, 10)
    em.record_restore(config, 1, [str(tmp)])
    names: set[str] = set()
    for path in (Path(run.file), em.textfile_path(config, 1)):
        _, samples = parse(path.read_text())
        names |= {name for name, _ in samples}
    return names


def test_every_expression_names_only_metrics_the_product_writes(written: set[str]) -> None:
    assert written == {s.name for s in catalog.ALL}  # the catalog is what the files hold, no more, no less
    expressions = _expressions()
    assert len(expressions) >= 20
    for where, expr in expressions:
        names = set(METRIC.findall(expr))
        assert names, f"{where}: no logdir_gc metric in {expr!r}"
        assert names <= written, f"{where}: {sorted(names - written)} are not written by the product"


def test_the_three_alerts_exist() -> None:
    alerts = {where.removeprefix("alert ") for where, _ in _expressions() if where.startswith("alert ")}
    assert alerts == {"LogdirGcReclaimableBytesHigh", "LogdirGcNoSuccessfulCrawl", "LogdirGcExecutorRefused"}


def test_promtool_accepts_the_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (scripts/install-system-deps.sh installs Debian's prometheus)")
    proc = subprocess.run([promtool, "check", "rules", str(MONITORING / "alerts.yml")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_docs_document_every_metric() -> None:
    doc = (REPO / "docs" / "monitoring.md").read_text()
    missing = [s.name for s in catalog.ALL if f"`{s.name}`" not in doc]
    assert not missing, f"docs/monitoring.md lacks {missing}"
