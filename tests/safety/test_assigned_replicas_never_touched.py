"""End-to-end safety property: a directory the controller assigns to its broker is never planned or touched.

Over many generated clusters (``pipelines.simulate``: deleted and recreated topics, reassignments in flight, JBOD
layouts), each further disturbed at random (copies in other log dirs, JBOD moves, ``-stray``/``-future``/``-delete``
renames and copies, copies on other brokers, copies with a fresh topic id), the whole pure-Python pipeline runs:
crawl → findings → ``emit_plan`` → register + approve (another person) → ``apply_plan --execute`` on every broker.

"Assigned" is computed by the test itself (``gc_world.assigned_dirs``): a live, ``-future`` or ``-stray`` dir whose
``partition.metadata`` topic id and name's partition the image lists with this broker in ``replicas`` or
``adding_replicas``. Three layers are checked on every example:

1. honest findings (the product's classifier): no assigned dir is in the plan, and after applying it every
   assigned dir is byte-identical; the only dirs that changed are the planned ones;
2. a lying detector that claims every assigned dir is garbage: ``emit_plan`` refuses to write a plan;
3. a forged plan listing every assigned dir, approved by someone else: the executor skips every item.

``-delete`` copies of assigned replicas (matched by topic id, or by name when the dir has no readable id) are never
planned either, and every planned item is applied: planner and executor agree.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pipelines.config.models import PolicyConfig
from pipelines.errors import PlanError
from pipelines.execute import apply_plan
from pipelines.plan import approval
from pipelines.plan.emit import emit_plan
from pipelines.simulate import PRESETS, ClusterSpec, generate
from pipelines.tables import open_store
from tests.safety import gc_world as W

NOW_MS = 1_763_700_000_000

specs = st.builds(
    ClusterSpec,
    brokers=st.integers(3, 5),
    topics=st.integers(1, 4),
    partitions_per_topic=st.integers(1, 4),
    replication=st.integers(2, 3),  # 1 + anomalies crashes the generator: test_found_gaps.py
    jbod_dirs=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
    anomalies=st.sampled_from([PRESETS["none"], PRESETS["small"], PRESETS["small"], PRESETS["all"]]),
    files_per_partition=st.integers(1, 2),
    segment_bytes=st.just(0),
    internal_partitions=st.integers(0, 3),
    separate_controller=st.booleans(),
    now_ms=st.just(NOW_MS),
)


def _apply_everywhere(c: W.Crawled, store, plan_id: str) -> dict[str, str]:
    """item_id → action, over every broker's ``apply_plan --execute``."""
    outcomes: dict[str, str] = {}
    # approvals are not what this test is about (tests/signing is): the audit-approved, unsigned mode, explicitly
    executor = c.config.executor.model_copy(update={"require_signatures": False})
    unsigned = c.config.model_copy(update={"executor": executor})
    for broker in c.config.brokers:
        report = apply_plan(unsigned, store, plan_id, broker.broker_id, execute=True, now=c.now)
        outcomes.update((i.item_id, i.action) for i in report.items)
    return outcomes


def check_one(spec: ClusterSpec, rng: random.Random, steps: int, stats: Counter[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="assigned-") as tmp:
        root = Path(tmp)
        result = generate(spec, root / "sim", warehouse=str(root / "warehouse"), force=True)
        now, cluster_id = W.now_of(result.truth_path)
        c = W.crawl(result.config_path, now, cluster_id)  # config + image only; crawled again after mutation
        done = W.mutate(c.config, rng, steps, now)
        c = W.crawl(result.config_path, now, cluster_id)
        assigned = W.assigned_dirs(c.config, c.image)
        delete_of_assigned = (W.assigned_dirs(c.config, c.image, kinds=("delete",)).keys()
                              | W.delete_dirs_without_id_of_assigned(c.config, c.image))
        before = W.log_dir_digest(c.config)
        context = f"spec={spec}\nmutations:\n  " + "\n  ".join(done)
        assert assigned, context  # every generated cluster has live replicas

        # 1. honest pipeline
        policy = PolicyConfig()
        plan = emit_plan(W.honest_findings(c), c.image, cluster=c.config.cluster, run_id=W.RUN_ID, created_by="gen",
                         policy=policy, out_dir=str(root / "plans"), config=c.config.detect, now=now,
                         cluster_id=cluster_id)
        planned = {(i.broker_id, i.log_dir, i.dir_name) for i in plan.items}
        assert not planned & assigned.keys(), f"assigned dirs planned: {sorted(planned & assigned.keys())}\n{context}"
        assert not planned & delete_of_assigned, f"-delete copies of assigned replicas planned: " \
                                                  f"{sorted(planned & delete_of_assigned)}\n{context}"
        stats["delete_of_assigned"] += len(delete_of_assigned)
        store = open_store("rust", str(root / "warehouse"))
        if plan.items:
            stats["examples_with_items"] += 1
            approval.register_plan(store, plan, actor="gen", policy=policy, now=now)
            approval.approve(store, plan.plan_id, by="reviewer", policy=policy, now=now)
            outcomes = _apply_everywhere(c, store, plan.plan_id)
            skipped = {(i.broker_id, i.log_dir, i.dir_name) for i in plan.items if outcomes[i.item_id] != "quarantined"}
            # Planner and executor agree: every planned item is quarantined (a -delete copy of an assigned replica,
            # matched by topic id or, with no readable id, by name, is never planned: the executor would refuse it).
            assert not skipped, f"planned but refused: {sorted(skipped)}\n{outcomes}\n{context}"
        else:
            skipped = set()
        after = W.log_dir_digest(c.config)
        for key in assigned:
            assert after.get(key) == before[key], f"assigned dir {key} changed by the plan\n{context}"
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        assert changed == planned - skipped, f"changed {sorted(changed)}, planned {sorted(planned)}\n{context}"

        # 2. a detector that calls every assigned dir garbage: emission refuses, no plan is written
        lies = W.lying_findings(c, assigned)  # internal topics left out: protection alone would refuse them
        if lies:
            with pytest.raises(PlanError, match="re-check refused"):
                emit_plan(lies, c.image, cluster=c.config.cluster, run_id=W.RUN_ID, created_by="gen", policy=policy,
                          out_dir=str(root / "lies"), config=c.config.detect, now=now, cluster_id=cluster_id)
            reports = sorted((root / "lies").glob("*.json"))
            assert [p.name.endswith(".disagreements.json") for p in reports] == [True], context
            refused = {(d["broker_id"], d["log_dir"], d["dir_name"]): d["problem"]
                       for d in json.loads(reports[0].read_text())["disagreements"]}
            assert refused.keys() == {(r["broker_id"], r["log_dir"], r["dir_name"]) for r in lies}, context
            assert all(p.startswith("re-check says") for p in refused.values()), f"{refused}\n{context}"

        # 3. a forged, approved plan of every assigned dir: the executor skips each item
        forged = W.forged_plan(c, assigned)
        if forged.items:
            approval.register_plan(store, forged, actor="forger", policy=policy, now=now)
            approval.approve(store, forged.plan_id, by="reviewer", policy=policy, now=now)
            outcomes = _apply_everywhere(c, store, forged.plan_id)
            assert set(outcomes.values()) == {"skipped"} and len(outcomes) == len(forged.items), \
                f"{outcomes}\n{context}"
        final = W.log_dir_digest(c.config)
        for key in assigned:
            assert final.get(key) == before[key], f"assigned dir {key} changed by the forged plan\n{context}"

        stats["examples"] += 1
        stats["assigned"] += len(assigned)
        stats["assigned_tempting"] += sum(1 for k in assigned.values() if k != "live")
        stats["planned"] += len(plan.items)
        stats["forged_items"] += len(forged.items)
        stats["lies"] += len(lies)


def run_property(max_examples: int) -> Counter[str]:
    stats: Counter[str] = Counter()

    # No shrinking: one example costs about a second, and every assertion message already names the spec and
    # the mutations that were applied.
    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(spec=specs, rng=st.randoms(use_true_random=False), steps=st.integers(0, 8))
    def prop(spec: ClusterSpec, rng: random.Random, steps: int) -> None:
        check_one(spec, rng, steps, stats)

    prop()
    return stats


def _assert_not_vacuous(stats: Counter[str]) -> None:
    print(dict(stats))  # shown with -s: how much the run exercised
    assert stats["examples"] > 0
    assert stats["examples_with_items"] > stats["examples"] / 2, stats
    assert stats["assigned_tempting"] > 0, stats  # -stray/-future copies of assigned replicas were generated
    assert stats["forged_items"] > 0 and stats["lies"] > 0, stats


def test_assigned_replicas_are_never_planned_or_touched() -> None:
    _assert_not_vacuous(run_property(10))  # 200 in the slow tier below


@pytest.mark.slow
def test_assigned_replicas_are_never_planned_or_touched_many_clusters() -> None:
    _assert_not_vacuous(run_property(200))
