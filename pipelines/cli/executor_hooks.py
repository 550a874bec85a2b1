"""What the executor commands add around an executor call: a progress line and the node_exporter textfile.

Both work from what the executor returns (or raises), so the executor itself stays untouched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from pipelines.config.models import AppConfig
from pipelines.errors import PipelinesError

if TYPE_CHECKING:
    from pipelines.execute.apply import ApplyReport


@contextmanager
def step(label: str) -> Iterator[Callable[[str], None]]:
    """A step with progress on stderr: a live line on a terminal, else one line when it ends."""
    from pipelines import progress
    from pipelines.cli.progress import reporter_for

    with progress.installed(reporter_for()), progress.step(label) as done:
        yield done


def action_counts(items: list[Any]) -> str:
    """``3 quarantined, 1 skipped`` of report items."""
    return ", ".join(f"{n} {action}" for action, n in Counter(i.action for i in items).items())


def record(update: Callable[..., Any], *args: Any) -> None:
    """``update(*args)``: a metrics update; a textfile that cannot be written is a warning, never a failure."""
    try:
        update(*args)
    except OSError as exc:
        click.echo(f"logdir-gc: warning: metrics textfile not written: {exc}", err=True)


@contextmanager
def refusals_recorded(app: AppConfig, broker: int, executed: bool) -> Iterator[None]:
    """A refusal raised inside the block is counted in the executor's textfile (executed runs only)."""
    from pipelines.metrics import executor_metrics as em

    try:
        yield
    except PipelinesError as exc:
        if executed:
            record(em.record_refusal, app, broker, em.refusal_reason(exc))
        raise


def applied(app: AppConfig, broker: int, executed: bool, run: Callable[[], ApplyReport]) -> ApplyReport:
    """``run()`` (an ``apply_plan`` call), its outcome or refusal recorded in the executor's textfile."""
    from pipelines.metrics import executor_metrics as em

    with refusals_recorded(app, broker, executed):
        report = run()
    if report.executed:
        record(em.record_apply, app, broker, [(i.action, i.bytes) for i in report.items])
    return report
