"""Write ``capacity_analysis.ipynb`` and ``gc_plan_review.ipynb`` (no outputs) from the cell lists below.

Edit the cells here, run ``python notebooks/make_notebooks.py``, commit both. Cells only call
``pipelines.analytics``; the ``parameters``-tagged cell is what papermill/nbclient runs replace.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = "from IPython.display import display\n\nfrom pipelines import analytics as a"
#: The review notebook shows names escaped (``a.shown_frame``) and tells MathJax to leave tables alone: names are
#: chosen by whoever creates a directory, a topic or a plan row, and a reviewer signs what they read.
REVIEW_SETUP = (SETUP + "\nimport pandas as pd\n\npd.set_option(\"display.html.use_mathjax\", False)\n"
                "from pipelines.terminal_text import shown")

CAPACITY = [
    new_markdown_cell(
        "# Capacity analysis\n\n"
        "Where the bytes are (brokers, log dirs, topics), what is reclaimable and since when, what no partition "
        "explains, and how it all moves across crawl runs. Set `warehouse` in the next cell, and `cluster` for one "
        "cluster's view: left `None` on a warehouse of several clusters, the notebook shows the fleet (every "
        "cluster's newest run side by side, and the fleet's totals)."),
    new_code_cell('warehouse = "warehouse"\ncluster = None\nrun_id = None\nfigures_out = None',
                  metadata={"tags": ["parameters"]}),
    new_code_cell(SETUP + "\n\nfleet = a.open_fleet(warehouse)\n"
                  "fleet_view = cluster is None and len(a.clusters_in(fleet.store)) > 1\n"
                  "wh = None if fleet_view else a.open_warehouse(warehouse, cluster)\n"
                  "run = None if fleet_view else wh.run_or_latest(run_id)\n"
                  "print(f\"fleet of {len(fleet.clusters)} clusters\" if fleet_view\n"
                  "      else f\"cluster {wh.cluster}, run {run}\")\n"
                  "a.fleet_runs(fleet) if fleet_view else wh.runs()"),
    new_markdown_cell("## Fleet: every cluster's newest run\n\nShown when `cluster` is None and the warehouse holds "
                      "several clusters; aggregated inside delta-rs, so a fleet of millions of dirs stays light."),
    new_code_cell("if fleet_view:\n    by_cluster = a.fleet_by_cluster(fleet)\n    display(a.shown_frame(by_cluster))\n"
                  "    display(a.plot_fleet_disk(by_cluster))\n    display(a.plot_fleet_reclaimable(by_cluster))"),
    new_code_cell("if fleet_view:\n    fleet_classes = a.fleet_by_class(fleet)\n    display(fleet_classes)\n"
                  "    display(a.plot_reclaimable_by_class(fleet_classes))\n"
                  "    display(a.shown_frame(a.fleet_top_topics(fleet, 10)))"),
    new_code_cell("if fleet_view:\n    cluster_growth = a.fleet_growth(fleet)\n"
                  "    display(a.shown_frame(cluster_growth))\n"
                  "    display(a.plot_fleet_growth(cluster_growth))\n"
                  "    fleet_over_time = a.fleet_reclaimable_over_time(fleet)\n    display(fleet_over_time)\n"
                  "    display(a.plot_fleet_over_time(fleet_over_time))\n"
                  "    display(a.shown_frame(a.fleet_plans(fleet)))"),
    new_markdown_cell("## Disk by broker, by log dir (JBOD skew), by topic\n\nThis and the next sections show one "
                      "cluster (`cluster`, or the warehouse's only one)."),
    new_code_cell("if not fleet_view:\n    by_broker = a.disk_by_broker(wh, run)\n    display(by_broker)\n"
                  "    display(a.plot_disk_by_broker(by_broker))"),
    new_code_cell("if not fleet_view:\n    by_log_dir = a.disk_by_log_dir(wh, run)\n    display(by_log_dir)\n"
                  "    display(a.plot_jbod_skew(by_log_dir))"),
    new_code_cell("if not fleet_view:\n    topics = a.top_topics(wh, 10, run)\n    display(topics)\n"
                  "    display(a.plot_top_topics(topics))"),
    new_code_cell("if not fleet_view:\n    partitions = a.partitions_per_broker(wh, run)\n    display(partitions)\n"
                  "    display(a.plot_partitions_per_broker(partitions))"),
    new_markdown_cell("## Reclaimable bytes\n\nGarbage classes, not protected. `former_names` come from the "
                      "durable `metadata_events` history; `garbage_days` is the grace clock."),
    new_code_cell("if not fleet_view:\n    by_class = a.reclaimable_by_class(wh, run)\n    display(by_class)\n"
                  "    display(a.plot_reclaimable_by_class(by_class))"),
    new_code_cell("if not fleet_view:\n    by_reclaim_broker = a.reclaimable_by_broker(wh, run)\n"
                  "    display(by_reclaim_broker)\n    display(a.plot_reclaimable_by_broker(by_reclaim_broker))"),
    new_code_cell("if not fleet_view:\n    display(a.garbage_dirs(wh, run))"),
    new_markdown_cell("## Unexplained-bytes ledger\n\nFilesystem used bytes (statvfs during the crawl) against "
                      "the bytes the crawl attributed to partition dirs and Kafka's known files."),
    new_code_cell("if not fleet_view:\n    ledger = a.unexplained_ledger(wh, run)\n    display(ledger)\n"
                  "    display(a.filesystem_ledger(wh, run))\n    display(a.plot_ledger(ledger))"),
    new_markdown_cell("## Trends across crawl runs"),
    new_code_cell("if not fleet_view:\n    topic_growth = a.growth_by_topic(wh)\n    display(topic_growth.head(10))\n"
                  "    display(a.plot_growth(topic_growth))"),
    new_code_cell("if not fleet_view:\n    broker_growth = a.growth_by_broker(wh)\n    display(broker_growth)\n"
                  "    display(a.plot_growth(broker_growth, \"broker_id\"))"),
    new_code_cell("if not fleet_view:\n    over_time = a.reclaimable_over_time(wh)\n    display(over_time)\n"
                  "    display(a.plot_reclaimable_over_time(over_time))"),
    new_code_cell("if not fleet_view:\n    display(a.table_history(wh, \"partition_dirs\"))\n"
                  "    display(a.bytes_by_version(wh, \"partition_dirs\"))"),
    new_markdown_cell("## Remote tier (KIP-405) beside the local bytes\n\nFor the fleet or the one cluster: remote "
                      "bytes (as listed in the tier, `remote_ok` included) per cluster, class and topic, beside the "
                      "crawl's partition-dir bytes. A warehouse without the remote tier says so."),
    new_code_cell("remote = a.fleet_remote_view(fleet, 10) if fleet_view else a.remote_view(wh, run, 10)\n"
                  "print(remote.note)\n"
                  "if remote.configured:\n    display(a.shown_frame(remote.by_cluster))\n"
                  "    display(a.plot_remote_beside_local(remote.by_cluster))\n"
                  "    display(a.shown_frame(remote.by_class))\n"
                  "    display(a.shown_frame(remote.by_cluster_class))\n"
                  "    display(a.shown_frame(remote.top_topics))"),
    new_markdown_cell("## Key figures"),
    new_code_cell("import json\n\nfigures = a.fleet_figures(fleet) if fleet_view else a.key_figures(wh, run)\n"
                  "print(json.dumps(figures, indent=1))\n"
                  "if figures_out:\n    with open(figures_out, \"w\") as fh:\n        json.dump(figures, fh)"),
]

REVIEW = [
    new_markdown_cell(
        "# GC plan review\n\n"
        "For an approver: what the plan removes (by class, broker, log dir), the evidence for each item, what "
        "changed since the cluster's previous plan, the policy rules that apply, and who signed what. It never "
        "approves anything: the last cell prints the command to run."),
    new_code_cell('warehouse = "warehouse"\ncluster = None\nplan_id = None\napprover = "YOUR_NAME"\n'
                  "config_path = None\nallowed_signers = None\nsigning_key = None\nfigures_out = None",
                  metadata={"tags": ["parameters"]}),
    new_code_cell(REVIEW_SETUP + "\n\nwh = a.open_warehouse(warehouse, cluster)\nrecord = a.plan_record(wh, plan_id)\n"
                  "plan = record.plan()\n"
                  "# the state `plans list` shows: from signatures that verify under the reviewers' allowed_signers\n"
                  "state = a.review_state(wh, record, config_path=config_path, allowed_signers=allowed_signers)\n"
                  "print(f\"{shown(record.plan_id)}: {state['status']}, {len(plan.items)} items, "
                  "{a.human_bytes(plan.total_bytes)}, run {plan.run_id}, metadata offset {plan.metadata_offset}\")\n"
                  "print(f\"content hash {record.content_hash}\")\n"
                  "for u in state[\"unverified_decisions\"]:\n"
                  "    print(f\"UNVERIFIED {shown(u['action'])} by {shown(u['actor'])} ({u['source']}): "
                  "{shown(u['reason'])}\")\n"
                  "if state[\"recorded_status\"] != state[\"status\"]:\n"
                  "    print(f\"gc_plans records {shown(state['recorded_status'])}; the signatures say "
                  "{state['status']}\")"),
    new_markdown_cell("## Items by class, broker and log dir"),
    new_code_cell("display(a.shown_frame(a.plan_breakdown(plan, \"class\")))\n"
                  "display(a.shown_frame(a.plan_breakdown(plan, \"broker_id\")))\n"
                  "a.shown_frame(a.plan_breakdown(plan, [\"broker_id\", \"log_dir\"]))"),
    new_markdown_cell("## Evidence\n\nTopic id on disk vs the controller's id for the name, metadata offset, "
                      "grace clock, and the names the id had."),
    new_code_cell("evidence = a.plan_evidence(wh, plan)\n"
                  "a.shown_frame(evidence[[\"item_id\", \"class\", \"bytes\", \"topic_id\", "
                  "\"controller_topic_id\", \"former_names\", \"metadata_offset\", \"garbage_since\", "
                  "\"grace_days\", \"reason\"]])"),
    new_markdown_cell("## Since the previous plan"),
    new_code_cell("previous = a.previous_plan(wh, plan)\nprint(\"previous plan:\", shown(previous.plan_id) if previous "
                  "else \"none\")\ndiff = a.plan_diff(plan, previous.plan() if previous else None)\n"
                  "a.shown_frame(diff)"),
    new_markdown_cell("## Policy checks"),
    new_code_cell("policy, detect_grace_ms = a.review_policy(config_path)\n"
                  "checks = a.policy_checks(plan, policy, detect_grace_ms=detect_grace_ms, approver=approver,\n"
                  "                         existing_approvals=tuple(state[\"approvals\"]))\na.shown_frame(checks)"),
    new_markdown_cell("## Signatures\n\nEach signed proposal, approval and rejection, judged as a broker host "
                      "trusting `allowed_signers` (default: the config's `executor.allowed_signers`) would judge it; "
                      "an approval recorded without a signature is `unsigned` and never counts where signatures are "
                      "required."),
    new_code_cell("signatures = a.signature_status(wh, record, config_path=config_path, "
                  "allowed_signers=allowed_signers)\na.shown_frame(signatures)"),
    new_markdown_cell("## Decision"),
    new_code_cell("import json\n\nsummary = a.review_summary(record, diff, checks, state)\n"
                  "print(json.dumps(summary, indent=1))\n"
                  "commands = a.decision_commands(record, wh.root, approver=approver, config_path=config_path,\n"
                  "                              key=signing_key)\n"
                  "print(\"To approve:\\n  \" + commands[\"approve\"])\n"
                  "print(\"To reject:\\n  \" + commands[\"reject\"])\n"
                  "if figures_out:\n    with open(figures_out, \"w\") as fh:\n"
                  "        json.dump({**summary, \"commands\": commands,\n"
                  "                   \"signatures\": signatures.to_dict(orient=\"records\")}, fh)"),
]


def write(name: str, cells: list) -> Path:
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name.split('_')[0]}-{i:02d}"
    path = HERE / f"{name}.ipynb"
    nbformat.validate(nb)
    path.write_text(nbformat.writes(nb) + "\n")
    return path


if __name__ == "__main__":
    for name, cells in (("capacity_analysis", CAPACITY), ("gc_plan_review", REVIEW)):
        print(write(name, cells))
