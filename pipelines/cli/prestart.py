"""The broker pre-start hook: a supervisor that enforces the time budget as a hard deadline, and its worker.

The supervisor only reads its config (to learn the budget) and starts the worker, ``logdir-gc prestart
--worker-deadline T``, as a child process. When the budget is spent the child is killed (SIGKILL): whatever it was
blocked in (a hung warehouse, a slow disk), the broker's start goes on. Killing is safe because every step of an
apply is journalled before it happens and the kernel drops the child's locks with it; the next apply resumes.
The worker applies the approved plans that have items for this broker, one after the other, and stops starting new
items at the deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from pipelines.cli.host_config import load_host_app
from pipelines.cli.workflow_options import open_store
from pipelines.config.duration import parse_duration_ms
from pipelines.errors import ExecutorBusy, PipelinesError

_GRACE_S = 2.0  # the worker stops starting items this long before the hard deadline


def supervise(config_path: str | None, warehouse: str | None, broker: int, budget: str | None) -> list[dict[str, Any]]:
    """Run the worker under the budget; its results, or why there are none."""
    app = load_host_app(config_path, warehouse)
    budget_ms = app.executor.prestart_time_budget_ms if budget is None else parse_duration_ms(budget)
    deadline = time.time() + budget_ms / 1000
    cmd = [sys.executable, "-m", "pipelines.cli.main", "prestart", "--broker", str(broker), "--json",
           "--worker-deadline", repr(deadline - min(_GRACE_S, budget_ms / 2000))]
    if config_path:
        cmd += ["--config", config_path]
    if warehouse:
        cmd += ["--warehouse", warehouse]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as child:
        try:
            out, err = child.communicate(timeout=max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
            return [*_parse(out), {"error": f"time budget of {budget_ms} ms spent: the worker was stopped; what it "
                                            "had journalled stays done, the rest resumes at the next apply"}]
    results = _parse(out)
    if child.returncode != 0 or (not results and err.strip()):
        last = (err.strip().splitlines() or ["no output"])[-1]
        results.append({"error": f"worker exited {child.returncode}: {last}"})
    return results


def _parse(out: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(out) if out.strip() else []
    except ValueError:
        return [{"error": f"unreadable worker output: {out.strip()[:200]}"}]
    return data if isinstance(data, list) else [data]


def run_worker(config_path: str | None, warehouse: str | None, broker: int, deadline: float) -> list[dict[str, Any]]:
    """Apply every executable plan with items for ``broker`` until ``deadline`` (seconds since the epoch)."""
    from pipelines.cli.executor_hooks import applied
    from pipelines.execute.apply import apply_plan
    from pipelines.execute.host_files import vet_named_files
    from pipelines.plan import approval

    app = load_host_app(config_path, warehouse)
    vet_named_files(app, [broker], controller=True)
    mono_deadline = time.monotonic() + (deadline - time.time())
    results: list[dict[str, Any]] = []
    try:
        store = open_store(app)
        candidates = [r for r in approval.list_plans(store, app.cluster) if r.status in approval.EXECUTABLE
                      and r.status != approval.APPLIED]
    except (OSError, PipelinesError) as exc:
        return [{"error": f"warehouse unreachable: {exc}"}]
    for record in candidates:
        if time.monotonic() > mono_deadline:
            results.append({"plan_id": record.plan_id, "skipped": "time budget exhausted"})
            continue
        try:
            if not any(i.broker_id == broker for i in record.plan().items):
                continue
            report = applied(app, broker, True, lambda r=record: apply_plan(app, store, r.plan_id, broker,
                                                                            execute=True, deadline=mono_deadline))
            results.append(report.to_dict())
        except ExecutorBusy as exc:
            results.append({"plan_id": record.plan_id, "refused": str(exc)})
            break
        except (PipelinesError, OSError) as exc:  # reported, never fatal: the broker must start
            results.append({"plan_id": record.plan_id, "refused": str(exc)})
    return results
