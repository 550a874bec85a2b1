"""Loading a plan for execution: only an approved, unexpired plan whose content hash is the approved one.

The authority is the Delta ``gc_plans`` row (status, approvals, content hash) plus the ``gc_plan_audit`` rows
of accepted approvals of that exact hash. An optional plan JSON file must hash to the same content; a file on
its own never authorises anything.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from pipelines.config.models import PolicyConfig
from pipelines.errors import PlanError
from pipelines.kafka.listing import read_regular_file
from pipelines.plan import approval
from pipelines.plan import policy as rules
from pipelines.plan.model import GcPlan, compute_content_hash
from pipelines.tables.base import TableStore


def read_plan_file(path: str | Path) -> GcPlan:
    """Parse a plan JSON file; a file whose content does not match its own hash is refused (PlanError)."""
    try:
        text = read_regular_file(str(path)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(f"plan file {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise PlanError(f"cannot read plan file {path}: {exc.strerror or exc}") from None
    try:
        return GcPlan.from_json(text)
    except ValueError as exc:
        raise PlanError(f"plan file {path} is invalid or tampered: {str(exc).splitlines()[0]}") from None


def load_executable_plan(store: TableStore, plan_id: str, policy: PolicyConfig, *, plan_file: str | Path | None = None,
                         now: datetime | None = None) -> tuple[GcPlan, approval.PlanRecord]:
    """The approved plan, re-verified. Raises PlanError / PolicyViolation naming what is wrong."""
    record = approval.get_plan(store, plan_id)
    plan = record.plan()
    if plan_file is not None:
        from_file = read_plan_file(plan_file)
        if compute_content_hash(from_file) != record.content_hash:
            raise PlanError(f"plan file {plan_file} does not hash to the approved content {record.content_hash}")
        plan = from_file
    if record.status not in approval.EXECUTABLE:
        raise rules.refuse("not_approved", f"plan {plan_id} is {record.status}, not approved")
    audited = set(approval.audited_approvers(store, plan_id, record.content_hash))
    approvers = set(record.approvals) & audited
    if policy.approver_must_differ_from_author:
        approvers.discard(plan.created_by.strip())
    if len(approvers) < policy.approvals_required:
        raise rules.refuse("approvals_required", f"plan {plan_id} has {len(approvers)} valid approval(s) of hash "
                           f"{record.content_hash}, {policy.approvals_required} required")
    rules.check_unexpired(plan, policy, now or datetime.now(timezone.utc))
    return plan, record
