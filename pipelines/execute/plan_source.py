"""Loading a plan for execution: only a plan this host may run, re-hashed from what it reads.

The plan comes from the Delta ``gc_plans`` row; its JSON must hash to its recorded content hash, and an optional
plan JSON file must hash to the same content (a file on its own never authorises anything). A warehouse status
that is not executable refuses (the warehouse can always deny, e.g. by deleting the plan).

Who may ask for an apply at all is decided from the host's own configuration:

- ``executor.require_signatures: true`` (the default): ``policy.approvals_required`` valid signed approvals by
  distinct principals and keys, none by the author, over exactly the content hash recomputed here, for this
  cluster name (config) and cluster id (this broker's ``meta.properties``), covering this broker, unexpired,
  checked with ``ssh-keygen -Y verify`` against ``executor.allowed_signers`` (see :mod:`pipelines.signing`). The
  warehouse's ``approvals`` column and audit rows play no part.
- ``executor.require_signatures: false``: the ``gc_plans`` approvals that the ``gc_plan_audit`` rows confirm,
  author excluded; anyone who can write the warehouse can forge both, so every such apply logs a warning.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from pipelines.config.models import AppConfig
from pipelines.errors import PlanError, PolicyViolation, PreconditionFailed
from pipelines.execute.broker_entry import broker_config
from pipelines.kafka.listing import read_regular_file
from pipelines.kafka.meta_properties import read_meta_properties
from pipelines.plan import approval
from pipelines.plan import policy as rules
from pipelines.plan.model import GcPlan, compute_content_hash
from pipelines.signing.decision import HostFacts, PlanVerdict, judge
from pipelines.signing.records import read_signatures
from pipelines.signing.trust import load_host_trust
from pipelines.tables.base import TableStore

log = logging.getLogger(__name__)


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
    except ValidationError as exc:
        raise PlanError(f"plan file {path} is invalid or tampered: {_plan_problem(exc)}") from None


def _plan_problem(exc: ValidationError) -> str:
    """The first problem pydantic found in a plan document, in its words, with where it is."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{err['msg'].removeprefix('Value error, ')}{more}"


def host_cluster_id(config: AppConfig, broker_id: int) -> str:
    """The ``cluster.id`` in the ``meta.properties`` of this broker's registered log dirs (all readable ones agree).

    Raises PreconditionFailed when no log dir has a readable one, or two disagree.
    """
    broker = broker_config(config, broker_id)
    seen: dict[str, str] = {}
    problems: list[str] = []
    for url in broker.log_dirs:
        path = url[len("file://"):] if url.startswith("file://") else url
        if "://" in path:
            raise PreconditionFailed(f"log dir {url} is not local; run the executor on the broker host")
        try:
            meta = read_meta_properties(read_regular_file(str(Path(path) / "meta.properties")))
        except OSError as exc:
            where = f"{Path(path) / 'meta.properties'}" if Path(path).is_dir() else f"log dir {path}"
            problems.append(f"{where}: {exc.strerror or exc}")
            continue
        if meta.cluster_id and meta.kafka_would_accept:
            seen[path] = meta.cluster_id
    ids = set(seen.values())
    if len(ids) > 1:
        raise PreconditionFailed(f"log dirs of broker {broker_id} disagree on cluster.id: {sorted(seen.items())}")
    if not ids:
        raise PreconditionFailed(f"no readable meta.properties with a cluster.id in broker {broker_id}'s log dirs"
                                 + (f" ({problems[0]})" if problems else ""))
    return ids.pop()


def signature_verdict(config: AppConfig, store: TableStore, plan: GcPlan, host: HostFacts,
                      now: datetime) -> PlanVerdict:
    """Every stored signature of ``plan`` judged against this host's trust files and policy."""
    trust = load_host_trust(config.executor)
    return judge(plan, read_signatures(store, plan.plan_id), trust, host, config.policy, now)


def refusal_of(config: AppConfig, store: TableStore, record: approval.PlanRecord, plan: GcPlan, host: HostFacts,
               now: datetime, verdict: PlanVerdict | None = None) -> str | None:
    """Why this host may not apply ``plan`` now (one line naming the rule), or None when it may.

    ``verdict``: the plan's :func:`signature_verdict` when the caller already has it.
    """
    policy = config.policy
    if record.status not in approval.EXECUTABLE:
        return str(rules.refuse("not_approved", f"plan {plan.plan_id} is {record.status}, not approved"))
    try:
        rules.check_unexpired(plan, policy, now)
    except PolicyViolation as exc:
        return str(exc)
    if config.executor.require_signatures:
        verdict = verdict or signature_verdict(config, store, plan, host, now)
        if verdict.refusal is not None:
            return verdict.refusal
    else:
        log.warning("logdir-gc: warning: executor.require_signatures is false: plan %s is authorised by warehouse "
                    "rows alone, which anyone who can write the warehouse can forge", plan.plan_id)
        audited = set(approval.audited_approvers(store, plan.plan_id, record.content_hash))
        approvers = set(record.approvals) & audited
        if policy.approver_must_differ_from_author:
            approvers.discard(plan.created_by.strip())
        if len(approvers) < policy.approvals_required:
            return str(rules.refuse("approvals_required", f"plan {plan.plan_id} has {len(approvers)} valid "
                                    f"approval(s) of hash {record.content_hash}, {policy.approvals_required} required"))
    return None


def recorded_plan(store: TableStore, plan_id: str,
                  plan_file: str | Path | None = None) -> tuple[approval.PlanRecord, GcPlan]:
    """The plan's ``gc_plans`` record and its items: from the record, or from ``plan_file`` when it hashes to the
    recorded content (else PlanError)."""
    record = approval.get_plan(store, plan_id)
    if plan_file is None:
        return record, record.plan()
    from_file = read_plan_file(plan_file)
    if compute_content_hash(from_file) != record.content_hash:
        raise PlanError(f"plan file {plan_file} does not hash to the approved content {record.content_hash}")
    return record, from_file


def load_executable_plan(config: AppConfig, store: TableStore, plan_id: str, broker_id: int, *,
                         plan_file: str | Path | None = None,
                         now: datetime | None = None) -> tuple[GcPlan, approval.PlanRecord]:
    """The plan broker ``broker_id`` may apply, re-verified. Raises PlanError / PolicyViolation naming the rule."""
    record, plan = recorded_plan(store, plan_id, plan_file)
    cluster_id = host_cluster_id(config, broker_id) if config.executor.require_signatures else None
    host = HostFacts(config.cluster, cluster_id, broker_id)
    refusal = refusal_of(config, store, record, plan, host, now or datetime.now(timezone.utc))
    if refusal is not None:
        raise PolicyViolation(refusal)
    return plan, record
