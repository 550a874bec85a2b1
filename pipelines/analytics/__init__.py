"""Capacity analytics over the warehouse's Delta tables: pandas + delta-rs + matplotlib, no Spark, no JVM.

Notebooks (``notebooks/``) and ``logdir-gc report`` call these functions; each returns a pandas DataFrame (or a
:class:`~pipelines.analytics.plots.Chart` with its one-line takeaway).
"""

from pipelines.analytics.capacity import (
    disk_by_broker,
    disk_by_log_dir,
    disk_by_topic,
    partitions_per_broker,
    top_topics,
)
from pipelines.analytics.fleet import (
    Fleet,
    fleet_by_class,
    fleet_by_cluster,
    fleet_growth,
    fleet_plans,
    fleet_reclaimable_over_time,
    fleet_runs,
    fleet_top_topics,
    open_fleet,
)
from pipelines.analytics.fleet_figures import fleet_figures
from pipelines.analytics.fleet_plots import (
    plot_fleet_disk,
    plot_fleet_growth,
    plot_fleet_over_time,
    plot_fleet_reclaimable,
    plot_remote_beside_local,
)
from pipelines.analytics.fleet_remote import fleet_remote_figures, fleet_remote_view
from pipelines.analytics.fmt import human_bytes, pct, shown_frame
from pipelines.analytics.ledger import filesystem_ledger, unexplained_ledger
from pipelines.analytics.plots import (
    Chart,
    plot_disk_by_broker,
    plot_growth,
    plot_jbod_skew,
    plot_ledger,
    plot_partitions_per_broker,
    plot_reclaimable_by_broker,
    plot_reclaimable_by_class,
    plot_reclaimable_over_time,
    plot_top_topics,
)
from pipelines.analytics.reclaim import former_topic_names, garbage_dirs, reclaimable_by_broker, reclaimable_by_class
from pipelines.analytics.remote_bytes import RemoteView, remote_by_class, remote_by_topic, remote_figures, remote_view
from pipelines.analytics.report import key_figures, render_report
from pipelines.analytics.review import (
    decision_commands,
    plan_breakdown,
    plan_diff,
    plan_evidence,
    plan_items,
    plan_record,
    policy_checks,
    previous_plan,
    review_policy,
    review_state,
    review_summary,
    signature_status,
)
from pipelines.analytics.trends import (
    bytes_by_version,
    growth_by_broker,
    growth_by_topic,
    reclaimable_over_time,
    table_history,
)
from pipelines.analytics.warehouse import Warehouse, clusters_in, open_warehouse

__all__ = [
    "Chart",
    "Fleet",
    "RemoteView",
    "Warehouse",
    "bytes_by_version",
    "clusters_in",
    "decision_commands",
    "disk_by_broker",
    "disk_by_log_dir",
    "disk_by_topic",
    "filesystem_ledger",
    "fleet_by_class",
    "fleet_by_cluster",
    "fleet_figures",
    "fleet_growth",
    "fleet_plans",
    "fleet_reclaimable_over_time",
    "fleet_remote_figures",
    "fleet_remote_view",
    "fleet_runs",
    "fleet_top_topics",
    "former_topic_names",
    "garbage_dirs",
    "growth_by_broker",
    "growth_by_topic",
    "human_bytes",
    "key_figures",
    "open_fleet",
    "open_warehouse",
    "partitions_per_broker",
    "pct",
    "plan_breakdown",
    "plan_diff",
    "plan_evidence",
    "plan_items",
    "plan_record",
    "plot_disk_by_broker",
    "plot_fleet_disk",
    "plot_fleet_growth",
    "plot_fleet_over_time",
    "plot_fleet_reclaimable",
    "plot_growth",
    "plot_jbod_skew",
    "plot_ledger",
    "plot_partitions_per_broker",
    "plot_reclaimable_by_broker",
    "plot_reclaimable_by_class",
    "plot_reclaimable_over_time",
    "plot_remote_beside_local",
    "plot_top_topics",
    "policy_checks",
    "previous_plan",
    "reclaimable_by_broker",
    "reclaimable_by_class",
    "reclaimable_over_time",
    "remote_by_class",
    "remote_by_topic",
    "remote_figures",
    "remote_view",
    "render_report",
    "review_policy",
    "review_state",
    "review_summary",
    "shown_frame",
    "signature_status",
    "table_history",
    "top_topics",
    "unexplained_ledger",
]
