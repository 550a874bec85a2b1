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
        "explains, and how it all moves across crawl runs. Set `warehouse` (and `cluster` when the warehouse "
        "holds several) in the next cell."),
    new_code_cell('warehouse = "warehouse"\ncluster = None\nrun_id = None\nfigures_out = None',
                  metadata={"tags": ["parameters"]}),
    new_code_cell(SETUP + "\n\nwh = a.open_warehouse(warehouse, cluster)\nrun = wh.run_or_latest(run_id)\n"
                  "print(f\"cluster {wh.cluster}, run {run}\")\nwh.runs()"),
    new_markdown_cell("## Disk by broker, by log dir (JBOD skew), by topic"),
    new_code_cell("by_broker = a.disk_by_broker(wh, run)\ndisplay(by_broker)\na.plot_disk_by_broker(by_broker)"),
    new_code_cell("by_log_dir = a.disk_by_log_dir(wh, run)\ndisplay(by_log_dir)\na.plot_jbod_skew(by_log_dir)"),
    new_code_cell("topics = a.top_topics(wh, 10, run)\ndisplay(topics)\na.plot_top_topics(topics)"),
    new_code_cell("partitions = a.partitions_per_broker(wh, run)\ndisplay(partitions)\n"
                  "a.plot_partitions_per_broker(partitions)"),
    new_markdown_cell("## Reclaimable bytes\n\nGarbage classes, not protected. `former_names` come from the "
                      "durable `metadata_events` history; `garbage_days` is the grace clock."),
    new_code_cell("by_class = a.reclaimable_by_class(wh, run)\ndisplay(by_class)\n"
                  "a.plot_reclaimable_by_class(by_class)"),
    new_code_cell("by_reclaim_broker = a.reclaimable_by_broker(wh, run)\ndisplay(by_reclaim_broker)\n"
                  "a.plot_reclaimable_by_broker(by_reclaim_broker)"),
    new_code_cell("a.garbage_dirs(wh, run)"),
    new_markdown_cell("## Unexplained-bytes ledger\n\nFilesystem used bytes (statvfs during the crawl) against "
                      "the bytes the crawl attributed to partition dirs and Kafka's known files."),
    new_code_cell("ledger = a.unexplained_ledger(wh, run)\ndisplay(ledger)\ndisplay(a.filesystem_ledger(wh, run))\n"
                  "a.plot_ledger(ledger)"),
    new_markdown_cell("## Trends across crawl runs"),
    new_code_cell("topic_growth = a.growth_by_topic(wh)\ndisplay(topic_growth.head(10))\n"
                  "a.plot_growth(topic_growth)"),
    new_code_cell("broker_growth = a.growth_by_broker(wh)\ndisplay(broker_growth)\n"
                  "a.plot_growth(broker_growth, \"broker_id\")"),
    new_code_cell("over_time = a.reclaimable_over_time(wh)\ndisplay(over_time)\n"
                  "a.plot_reclaimable_over_time(over_time)"),
    new_code_cell("display(a.table_history(wh, \"partition_dirs\"))\na.bytes_by_version(wh, \"partition_dirs\")"),
    new_markdown_cell("## Key figures"),
    new_code_cell("import json\n\nfigures = a.key_figures(wh, run)\nprint(json.dumps(figures, indent=1))\n"
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
