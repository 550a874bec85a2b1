"""Approval policy: the rules a plan and an approval must satisfy, each refusal naming its rule.

Every check raises :class:`~pipelines.errors.PolicyViolation` with a one-line message that starts with the rule
name in brackets (``[approver_differs_from_author] ...``), so a refusal is greppable and testable by rule.
The checks are pure functions of the plan, the policy and the clock; the approval workflow calls them before it
commits a decision, and the executor calls :func:`check_unexpired` again before it acts.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from pipelines.config.models import DEFAULT_PROTECTED, MIN_GRACE_FLOOR_MS, PolicyConfig
from pipelines.errors import PolicyViolation
from pipelines.plan.model import GcPlan

#: Topics no plan may ever touch, whatever the configuration says (Kafka internal topics).
ALWAYS_PROTECTED = DEFAULT_PROTECTED


def refuse(rule: str, message: str) -> PolicyViolation:
    """The one-line refusal for ``rule``."""
    return PolicyViolation(f"[{rule}] {message}")


def expiry_of(plan: GcPlan, policy: PolicyConfig) -> datetime:
    """When the plan stops being approvable or executable: its own ``expires_at`` or created + policy expiry."""
    by_policy = plan.created_at + timedelta(milliseconds=policy.plan_expiry_ms)
    return min(plan.expires_at, by_policy) if plan.expires_at is not None else by_policy


def check_unexpired(plan: GcPlan, policy: PolicyConfig, now: datetime) -> None:
    """Raises PolicyViolation ``[plan_expiry]`` once ``now`` is at or past the plan's expiry."""
    expires = expiry_of(plan, policy)
    if now >= expires:
        raise refuse("plan_expiry", f"plan {plan.plan_id} expired at {expires.isoformat()}")


def _protected(topic: str | None, patterns: Iterable[str]) -> str | None:
    if topic is None:
        return None
    for pattern in patterns:
        if re.fullmatch(pattern, topic):
            return pattern
    return None


def check_plan(plan: GcPlan, policy: PolicyConfig, *, detect_grace_ms: int | None = None) -> None:
    """Plan-level rules: budgets, protected topics, grace. Raises PolicyViolation naming the first broken rule.

    ``detect_grace_ms`` is the grace period the detector ran with (``detect.grace_ms``); when given it must not be
    below ``policy.min_grace_ms`` (itself never below the floor).
    """
    if policy.max_plan_items is not None and len(plan.items) > policy.max_plan_items:
        raise refuse("max_plan_items", f"plan {plan.plan_id} has {len(plan.items)} items, budget is "
                     f"{policy.max_plan_items} (policy.max_plan_items)")
    if policy.max_plan_bytes is not None and plan.total_bytes > policy.max_plan_bytes:
        raise refuse("max_plan_bytes", f"plan {plan.plan_id} reclaims {plan.total_bytes} bytes, budget is "
                     f"{policy.max_plan_bytes} (policy.max_plan_bytes)")
    items: dict[int, int] = defaultdict(int)
    size: dict[int, int] = defaultdict(int)
    for item in plan.items:
        items[item.broker_id] += 1
        size[item.broker_id] += item.bytes
    for broker in sorted(items):
        if policy.max_broker_items is not None and items[broker] > policy.max_broker_items:
            raise refuse("max_broker_items",
                         f"plan {plan.plan_id}: broker {broker} has {items[broker]} items, budget is "
                         f"{policy.max_broker_items} (policy.max_broker_items)")
        if policy.max_broker_bytes is not None and size[broker] > policy.max_broker_bytes:
            raise refuse("max_broker_bytes",
                         f"plan {plan.plan_id}: broker {broker} reclaims {size[broker]} bytes, budget is "
                         f"{policy.max_broker_bytes} (policy.max_broker_bytes)")
    patterns = (*ALWAYS_PROTECTED, *policy.protected_topic_patterns)
    for item in plan.items:
        hit = _protected(item.topic, patterns)
        if hit is not None:
            raise refuse("protected_topic", f"item {item.item_id} is topic {item.topic!r}, protected by {hit!r}")
    floor = max(policy.min_grace_ms, MIN_GRACE_FLOOR_MS)
    if detect_grace_ms is not None and detect_grace_ms < floor:
        raise refuse("min_grace", f"plan {plan.plan_id} was detected with grace {detect_grace_ms} ms "
                     f"(detect.grace_ms), policy minimum is {floor} ms (policy.min_grace_ms)")


def check_approver(plan: GcPlan, policy: PolicyConfig, approver: str, existing: Iterable[str]) -> None:
    """Approver-level rules: named, not the author (when required), not approving twice."""
    name = approver.strip()
    if not name:
        raise refuse("approver_named", "an approval needs a non-empty --by NAME")
    if policy.approver_must_differ_from_author and name == plan.created_by.strip():
        raise refuse("approver_differs_from_author", f"{name} created plan {plan.plan_id} and cannot approve it")
    if name in set(existing):
        raise refuse("distinct_approvers", f"{name} already approved plan {plan.plan_id}")
