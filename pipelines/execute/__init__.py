"""The executor: runs on a broker host, no Spark. Applies approved plans by quarantine, then purges or restores."""

from pipelines.execute.apply import ApplyReport, ItemOutcome, apply_plan
from pipelines.execute.purge import PurgeReport, purge
from pipelines.execute.restore import RestoreReport, restore

__all__ = ["ApplyReport", "ItemOutcome", "PurgeReport", "RestoreReport", "apply_plan", "purge", "restore"]
