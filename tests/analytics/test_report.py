"""Charts, the HTML report, ``logdir-gc report``, and the page rendered in headless Chromium."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipelines import analytics as a
from pipelines.cli.main import main
from pipelines.detect.classes import GARBAGE_CLASSES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def wh(demo):
    return a.open_warehouse(str(demo.warehouse))


def test_analytics_imports_neither_spark_nor_pyplot() -> None:
    probe = ("import sys, pipelines.analytics, pipelines.cli.report_cmd\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark' or m == 'matplotlib.pyplot'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_takeaways_state_the_numbers(demo, wh) -> None:
    rows = [r for r in demo.store().read_rows("findings", {"run_id": "run-2"})
            if r["class"] in GARBAGE_CLASSES and not r["protected"]]
    chart = a.plot_reclaimable_by_class(a.reclaimable_by_class(wh))
    assert chart.png().startswith(PNG_MAGIC)
    assert chart.takeaway.startswith(f"{a.human_bytes(sum(r['bytes'] for r in rows))} reclaimable in {len(rows)} dirs")
    growth = a.plot_growth(a.growth_by_topic(wh))
    assert f"Fastest growing topic: {demo.grown_topic}, +" in growth.takeaway
    brokers = a.disk_by_broker(wh)
    top = brokers.loc[brokers["bytes"].idxmax()]
    assert a.plot_disk_by_broker(brokers).takeaway.startswith(
        f"Broker {int(top['broker_id'])} holds the most: {a.human_bytes(top['bytes'])}")
    assert '<img alt="Reclaimable bytes by finding class" src="data:image/png;base64,' in chart._repr_html_()


def test_empty_frames_give_a_chart_that_says_so() -> None:
    chart = a.plot_reclaimable_by_class(pd.DataFrame())
    assert chart.takeaway.startswith("nothing reclaimable") and chart.png().startswith(PNG_MAGIC)
    assert "no crawl runs" in a.plot_reclaimable_over_time(pd.DataFrame()).takeaway


def test_human_bytes() -> None:
    assert [a.human_bytes(n) for n in (0, 1023, 1536, 3 * 2**30, -(2**20))] == [
        "0 B", "1,023 B", "1.5 KiB", "3.0 GiB", "-1.0 MiB"]
    assert a.human_bytes(None) == "n/a" and a.pct(0.1234) == "12.3%"


def test_report_has_every_chart_inline(wh) -> None:
    page = a.render_report(wh)
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 10
    assert all(base64.b64decode(i).startswith(PNG_MAGIC) for i in images)
    for title in ("Disk by broker", "Unexplained-bytes ledger", "Garbage directories", "Reclaimable over time",
                  "Newest GC plan"):
        assert f"<h2>{title}</h2>" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page


def _report(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(["report", *argv])
    return int(info.value.code or 0)


def test_report_command(demo, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r" / "report.html"
    assert _report(["--warehouse", str(demo.warehouse), "--out", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert "cluster demo, run run-2" in capsys.readouterr().out
    assert _report(["--warehouse", str(demo.warehouse), "--cluster", "demo", "--run-id", "run-1",
                    "--out", str(out)]) == 0
    assert "run run-1 of 2" in out.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _report(["--warehouse", str(empty), "--out", str(out)]) != 0
    assert "name a cluster" in capsys.readouterr().err


def test_a_warehouse_with_plans_but_no_crawl_run_reports_that(tmp_path: Path, capsys) -> None:
    """An executor-side warehouse holds plans and no crawl run: a page saying so, not a pandas traceback."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute_remote"))
    from remote_world import build_remote_world

    from pipelines.config.models import PolicyConfig
    from pipelines.plan import approval
    from pipelines.tables.rust_engine import RustTableStore

    world = build_remote_world(tmp_path / "tier", approve_plan=False)
    approval.register_plan(RustTableStore(str(tmp_path / "wh")), world.plan, actor="detector", policy=PolicyConfig())
    out = tmp_path / "report.html"
    assert _report(["--warehouse", str(tmp_path / "wh"), "--out", str(out)]) == 0
    assert "no crawl run yet, 0 reclaimable dirs" in capsys.readouterr().out
    assert "No crawl runs in this warehouse yet." in out.read_text()


def test_remote_tier_bytes_appear_beside_the_local_ones(demo, tmp_path: Path) -> None:
    """A tiered cluster's report shows its remote bytes per class and per topic, from the run's remote_findings."""
    from pipelines.tables.rust_engine import RustTableStore

    warehouse = tmp_path / "warehouse"
    shutil.copytree(demo.warehouse, warehouse)
    run = a.open_warehouse(str(warehouse), "demo").latest_run()

    def finding(cls: str, topic: str, size: int, plannable: bool, n: int, run_id: str = run) -> dict[str, object]:
        return {"run_id": run_id, "cluster": "demo", "topic": topic, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
                "partition": 0, "segment_id": f"seg{n}", "start_offset": n, "class": cls, "reason": "r",
                "bytes": size, "objects": 3, "plannable": plannable, "garbage_since": None}

    RustTableStore(str(warehouse), allow_foreign_tables=True).append("remote_findings", [
        finding("remote_deleted_topic", "gone", 3 * 2**30, True, 1),
        finding("remote_deleted_topic", "gone", 2**30, False, 2),
        finding("remote_ok", "orders", 5 * 2**30, False, 3),
        finding("remote_ok", "orders", 7 * 2**40, False, 4, "old-run")])
    wh = a.open_warehouse(str(warehouse), "demo")
    by_class = a.remote_by_class(wh).set_index("class")
    assert by_class.loc["remote_deleted_topic", ["segments", "bytes", "plannable_bytes"]].tolist() == [2, 4 * 2**30,
                                                                                                        3 * 2**30]
    assert by_class.loc["remote_ok", "bytes"] == 5 * 2**30  # the other run's segment is not this run's
    assert a.remote_by_topic(wh)["topic"].tolist() == ["orders", "gone"]
    page = a.render_report(wh)
    assert "Remote tier (KIP-405) by class" in page and "Remote tier: top topics" in page
    assert "remote_deleted_topic" in page and "4.0 GiB" in page
    local = sum(r["bytes"] for r in wh.store.read_rows("partition_dirs", {"cluster": "demo", "run_id": run})
                if r["topic"] == "orders")
    topics = page.split("<h2>Remote tier: top topics</h2>")[1].split("<h2>")[0]
    assert f"<tr><td>orders</td><td>1</td><td>5.0 GiB</td><td>0 B</td><td>{a.human_bytes(local)}</td></tr>" in topics
    assert "Remote tier" not in a.render_report(a.open_warehouse(str(demo.warehouse), "demo"))


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_renders_in_headless_chromium(wh, tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed (Debian package 'chromium')")
    page = tmp_path / "report.html"
    page.write_text(a.render_report(wh))
    shot = tmp_path / "report.png"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}",
           f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    assert shot.is_file(), "chromium wrote no screenshot"
    from matplotlib.image import imread

    pixels = imread(str(shot))[..., :3]
    assert pixels.shape[:2] == (2000, 1280)
    not_white = (pixels < 0.9).any(axis=2).mean()
    blue = ((pixels[..., 2] > 0.5) & (pixels[..., 0] < 0.35)).mean()  # the charts' bars (#3b6ea5)
    assert not_white > 0.05, f"screenshot nearly blank ({not_white:.1%} non-white)"
    assert blue > 0.01, f"no chart bars visible ({blue:.1%} blue pixels)"
    keep = Path(__file__).resolve().parents[2] / ".pytest_artifacts"
    if keep.is_dir():  # opt-in: mkdir .pytest_artifacts to look at the screenshot
        shutil.copy(shot, keep / "report.png")
