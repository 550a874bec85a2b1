"""The remote executor: ``apply/restore/purge --remote`` on a KIP-405 remote tier (no Spark, no broker host).

It runs wherever the bucket's credentials are, with the local executor's plan loading, signatures, journal, exit
codes and dry-run default; quarantine is a verified server-side copy, then the delete of the original.
"""
