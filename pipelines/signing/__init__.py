"""Signed plan decisions: OpenSSH signatures (SSHSIG) over one canonical statement, checked on the broker host.

- :mod:`~pipelines.signing.statement`: what is signed, under the namespace ``kafka-logdir-gc-plan@v1``.
- :mod:`~pipelines.signing.signer`: ``ssh-keygen -Y sign`` with a key file or the ssh-agent's key.
- :mod:`~pipelines.signing.trust`: the host's ``allowed_signers``/``revoked_keys``, refused when others can write them.
- :mod:`~pipelines.signing.verify`: ``ssh-keygen -Y verify`` of one signature, and the rule it broke.
- :mod:`~pipelines.signing.decision`: which stored signatures let this host apply a plan.
- :mod:`~pipelines.signing.records`: the ``gc_plan_signatures`` table; :mod:`~pipelines.signing.workflow`: sign,
  transition, store.

No Spark, no JVM: this runs on broker hosts and reviewers' machines.
"""
