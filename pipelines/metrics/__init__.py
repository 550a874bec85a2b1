"""Prometheus metrics: what a Spark run found and what an executor did, in Prometheus' text format.

- ``catalog``: every metric the product writes (name, type, help, labels); the docs/monitoring.md table and the
  monitoring tests read it.
- ``families``: building metric families and rendering them as text (prometheus_client's exposition format).
- ``textfile``: atomic local writes (temp file + rename) and reading a file back.
- ``run_metrics``: a finished (or failed) ``logdir-gc run``: a file per run, and a Pushgateway push when configured.
- ``executor_metrics``: the node_exporter textfile the executor keeps on the broker host (cumulative counters).
- ``push``: the Pushgateway client.

No Spark here: the executor imports this package on broker hosts.
"""
