"""Mutation audit of the executor's safety rules: disable each check in a scratch copy and run the safety tests.

Each mutation below removes or inverts one check (one source edit). The tests must fail for every one of them
("caught"); a survivor is a rule no test holds. Usage::

    .venv/bin/python scripts/mutation_audit.py [--signing] [--only SUBSTRING] [--jobs N]

The copy lives in a temporary directory (``pipelines/`` and ``tests/`` plus the pytest config), so the checkout is
never touched; ``PYTHONPATH`` puts the copy first for every process the tests start. Prints one line per mutation
and the count caught.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Most specific first: with ``-x`` a caught mutation stops at its first failing test.
TESTS = [
    f"tests/execute/test_{name}.py"
    for name in (
        "identity",
        "lying_plans",
        "quarantine_confinement",
        "damage_stays_local",
        "plan_state_truth",
        "fifo_inputs",
        "refusals",
        "safety_gaps",
        "apply",
        "journal",
        "locks",
        "reference_recheck",
        "cli_workflow",
        "crash_injection",
    )
] + [
    "tests/safety/test_executor_against_lies.py",
    "tests/safety/test_assigned_replicas_never_touched.py",
    "tests/plan/test_approval_gaps.py",
]


@dataclass(frozen=True)
class Mutation:
    label: str
    path: str
    old: str
    new: str


E = "pipelines/execute/"
MUTATIONS = [
    # apply: facts from the disk, host policy
    Mutation("consistency check skipped", E + "preconditions.py", "    _consistent(item, d)\n", ""),
    Mutation(
        "topic/partition/id claims not compared",
        E + "preconditions.py",
        "        if claimed != seen:",
        "        if False:",
    ),
    Mutation(
        "class vs kind not compared", E + "preconditions.py", "    if item.class_ not in allowed:", "    if False:"
    ),
    Mutation("metadata/unparseable kinds allowed", E + "preconditions.py", "    if not allowed:\n", "    if False:\n"),
    Mutation(
        "live dir without topic id allowed",
        E + "preconditions.py",
        '    if d.topic_id is None and d.kind != "delete":',
        "    if False:",
    ),
    Mutation(
        "fingerprint not compared",
        E + "preconditions.py",
        "    if d.fingerprint != normalise_fingerprint(item.fingerprint):",
        "    if False:",
    ),
    Mutation("protection skipped", E + "preconditions.py", "    if hit is not None:", "    if False:"),
    Mutation(
        "protection by disk name only",
        E + "controller_check.py",
        "        if topic is not None:\n            names.add",
        "        if False:\n            names.add",
    ),
    Mutation(
        "assignment check skipped",
        E + "preconditions.py",
        "    if reason is not None:\n        raise ItemSkipped(reason",
        "    if False:\n        raise ItemSkipped(reason",
    ),
    Mutation("adding_replicas ignored", E + "controller_check.py", " or broker_id in part.adding_replicas", ""),
    Mutation(
        "incomplete image treated as complete",
        E + "controller_check.py",
        '            if topic is None and not image.complete:\n                return (f"topic id',
        '            if False:\n                return (f"topic id',
    ),
    Mutation(
        "grace floor skipped", E + "preconditions.py", "    if host.now - since < host.min_grace:", "    if False:"
    ),
    Mutation(
        "unknown age allowed",
        E + "preconditions.py",
        "    if since is None:\n        raise",
        "    if since is None and False:\n        raise",
    ),
    Mutation(
        "grace from the plan-side floor only",
        E + "preconditions.py",
        "max(policy.min_grace_ms, MIN_GRACE_FLOOR_MS)",
        "MIN_GRACE_FLOOR_MS",
    ),
    Mutation(
        "host budget not measured",
        E + "preconditions.py",
        "    if host.max_broker_bytes is not None and size > host.max_broker_bytes:",
        "    if False:",
    ),
    Mutation("plan claims not re-checked at apply", E + "apply.py", "    rules.check_plan(plan, config.policy)\n", ""),
    Mutation(
        "metadata kinds without a re-read allowed",
        E + "controller_check.py",
        '    if metadata.kind not in ("metadata_log", "zookeeper"):',
        "    if False:",
    ),
    Mutation(
        "log dir registration not checked", E + "apply.py", '.rstrip("/") not in registered:', '.rstrip("/") in ():'
    ),
    Mutation(
        "host binding skipped", E + "apply.py", "        check_host(plan, broker_id, d,", "        (plan, broker_id, d,"
    ),
    Mutation(
        "symlink component allowed",
        E + "confine.py",
        '        if stat.S_ISLNK(st.st_mode):\n            raise ConfinementError(f"log dir',
        '        if False:\n            raise ConfinementError(f"log dir',
    ),
    Mutation(
        "symlinked child allowed",
        E + "confine.py",
        '    if stat.S_ISLNK(st.st_mode):\n        raise ConfinementError(f"{child} is a symlink")',
        '    if False:\n        raise ConfinementError(f"{child} is a symlink")',
    ),
    Mutation("symlinks inside a dir allowed", E + "observe.py", "    if links:", "    if False:"),
    # quarantine area
    Mutation(
        "quarantine root symlink allowed",
        E + "quarantine.py",
        "        if stat.S_ISLNK(st.st_mode):\n            raise QuarantineError",
        "        if False:\n            raise QuarantineError",
    ),
    Mutation(
        "quarantine root ownership unchecked",
        E + "quarantine.py",
        "        if st.st_uid != os.geteuid():",
        "        if False:",
    ),
    Mutation(
        "quarantine root mode unchecked",
        E + "quarantine.py",
        "        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):",
        "        if False:",
    ),
    Mutation(
        "quarantine root may contain a log dir",
        E + "quarantine.py",
        "            if d == self.root or self.root in d.parents:",
        "            if False:",
    ),
    Mutation(
        "quarantine root may sit in a log dir",
        E + "quarantine.py",
        "            if d in self.root.parents:",
        "            if False:",
    ),
    Mutation(
        "manifest paths not checked",
        E + "quarantine.py",
        "        error = self._disagreement(plan_id, item_id, manifest)",
        "        error = None",
    ),
    Mutation("rename may replace", E + "safe_fs.py", "_RENAME_NOREPLACE = 1", "_RENAME_NOREPLACE = 0"),
    Mutation(
        "removal follows symlinks",
        E + "safe_fs.py",
        "            if stat.S_ISDIR(st.st_mode):\n                if st.st_dev",
        "            if stat.S_ISDIR(os.stat(child, dir_fd=fd).st_mode):\n                if st.st_dev",
    ),
    # restore
    Mutation(
        "restore ignores the content hash", E + "restore.py", "    if m.content_hash != content_hash:", "    if False:"
    ),
    Mutation(
        "restore ignores the plan item",
        E + "restore.py",
        "    if item is None or item.broker_id != broker_id",
        "    if False and item.broker_id != broker_id",
    ),
    Mutation(
        "restore ignores the journal",
        E + "restore.py",
        '    if moved is None or moved.detail.get("dst") != str(q.data_path)',
        '    if False and moved.detail.get("dst") != str(q.data_path)',
    ),
    Mutation(
        "restore ignores a taken name",
        E + "restore.py",
        '        if original is not None:\n            return "skip"',
        '        if False:\n            return "skip"',
    ),
    Mutation(
        "restore ignores a changed copy", E + "restore.py", "    if why is not None:\n        return \"fail\"",
        "    if False:\n        return \"fail\""
    ),
    Mutation(
        "restore without Kafka's lock",
        E + "restore.py",
        "                locks.append(kafka_dir_lock(d).acquire())",
        "                pass",
    ),
    # purge
    Mutation("purge below the retention floor", E + "purge.py", "    if retention_ms < floor:", "    if False:"),
    Mutation(
        "purge ignores the journal",
        E + "purge.py",
        '    if moved is None or moved.detail.get("dst") != str(q.data_path)',
        '    if False and moved.detail.get("dst") != str(q.data_path)',
    ),
    Mutation(
        "purge ignores a changed copy",
        E + "purge.py",
        "    if mismatch is not None:\n        return \"fail\"",
        "    if False:\n        return \"fail\"",
    ),
    Mutation(
        "purge ignores another broker's manifest", E + "purge.py", "    if m.broker_id != broker_id:", "    if False:"
    ),
    Mutation(
        "purge without the executor lock",
        E + "purge.py",
        "    with executor_lock(sdir, broker_id) if execute else nullcontext():",
        "    with nullcontext():",
    ),
    Mutation(
        "purge dates items by now", E + "purge.py", "    if datetime.fromisoformat(moved.at) > cutoff:", "    if False:"
    ),
    # locks, journal, plan state
    Mutation(
        "apply without Kafka's lock",
        E + "apply.py",
        "                locks.append(kafka_dir_lock(d).acquire())",
        "                pass",
    ),
    Mutation(
        "apply re-applies restored items",
        E + "apply.py",
        '    if any(step in ("restore", "purge") for step, _ in seen):',
        "    if False:",
    ),
    Mutation(
        "recovery trusts the destination",
        E + "apply.py",
        "        if mismatch is None:\n            journal.write(",
        "        if True:\n            journal.write(",
    ),
    Mutation(
        "plan restored with items still quarantined",
        E + "restore.py",
        "        still = any(area.scan(plan_id) for area in areas.values() if area is not None)",
        "        still = False",
    ),
    Mutation(
        "approvals not re-derived from the audit",
        E + "plan_source.py",
        "    approvers = set(record.approvals) & audited",
        "    approvers = set(record.approvals)",
    ),
    Mutation(
        "plan file hash not compared",
        E + "plan_source.py",
        "        if compute_content_hash(from_file) != record.content_hash:",
        "        if False:",
    ),
    # identity, not names (issue 27 point 2): one mutation per check
    Mutation(
        "apply renames without checking the name still points at the verified dir",
        E + "apply.py",
        "    if st is None or not is_real_dir(st) or identity(st) != verified:",
        "    if st is None:",
    ),
    Mutation(
        "apply keeps whatever arrived in the quarantine",
        E + "apply.py",
        "    if arrived is not None and identity(arrived) == verified:",
        "    if True:",
    ),
    Mutation(
        "restore keeps whatever arrived in the log dir",
        E + "restore.py",
        "    if arrived is not None and identity(arrived) == checked:",
        "    if True:",
    ),
    Mutation(
        "quarantined copy's identity not compared",
        E + "quarantine.py",
        "    if m.has_identity and (st.st_ino != m.inode or st.st_dev != q.area.device):",
        "    if False:",
    ),
    Mutation(
        "quarantined copy's topic id not compared",
        E + "quarantine.py",
        "    if topic_id != m.topic_id:",
        "    if False:",
    ),
    Mutation(
        "quarantined copy's partition not compared",
        E + "quarantine.py",
        "    if (parsed.topic, parsed.partition) != (m.topic, m.partition):",
        "    if False:",
    ),
    Mutation(
        "manifest identity not compared with the journal",
        E + "quarantine.py",
        "    if recorded != (m.device, m.inode):",
        "    if False:",
    ),
    Mutation(
        "purge accepts a manifest without identity",
        E + "purge.py",
        "    if not m.has_identity:\n        return \"fail\"",
        "    if False:\n        return \"fail\"",
    ),
    Mutation(
        "purge removes without binding to the checked identity",
        E + "purge.py",
        "remove_tree_at(fd, m.dir_name, pacer.account, (q.area.device, m.inode or 0))",
        "remove_tree_at(fd, m.dir_name, pacer.account)",
    ),
    Mutation(
        "quarantine opened by path after validation",
        E + "quarantine.py",
        "        return fd\n\n    @property\n    def device",
        "        return os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)\n\n    @property\n    def device",
    ),
    Mutation(
        "open_path follows links in the path",
        E + "safe_fs.py",
        '    fd = os.open("/" if text.startswith("/") else ".", _DIR_FLAGS)\n'
        '    try:\n        for name in text.split("/"):',
        "    fd = os.open(text, os.O_RDONLY | os.O_DIRECTORY)\n    try:\n        for name in ():",
    ),
    Mutation(
        "fingerprint ignores the topic id",
        "pipelines/kafka/fingerprint.py",
        "    return fingerprint_of_text(f\"topic_id\\0{topic_id or ''}\\0{entries_digest}\\n\".encode(\"ascii\"))",
        "    return fingerprint_of_text(f\"topic_id\\0\\0{entries_digest}\\n\".encode(\"ascii\"))",
    ),
]

# The signing package (issue 27 point 8): who may ask for an apply (docs/safety.md §8). Run with ``--signing``,
# against the signing tests (most specific first) and the CLI workflow that holds them.
SIGNING_TESTS = [
    "tests/signing/test_executor_signatures.py",
    "tests/signing/test_one_key_one_vote.py",
    "tests/signing/test_statement.py",
    "tests/signing/test_trust_files.py",
    "tests/signing/test_signing_cli.py",
    "tests/signing/test_verifier_crosscheck.py",
    "tests/signing/test_demo_trust.py",
    "tests/signing/test_agent_signing.py",
    "tests/execute/test_cli_workflow.py",
]
S = "pipelines/signing/"
SIGNING_MUTATIONS = [
    # statement fields
    Mutation("signature for another plan id counts", S + "decision.py", "    if st.plan_id != plan.plan_id:",
             "    if False:"),
    Mutation("signature over other content counts", S + "decision.py", "    if st.content_hash != content_hash:",
             "    if False:"),
    Mutation("signature for another cluster name counts", S + "decision.py",
             "    if st.cluster != plan.cluster or st.cluster != host.cluster:", "    if False:"),
    Mutation("signature for another cluster id counts", S + "decision.py",
             "    if st.cluster_id != plan.cluster_id or st.cluster_id != host_id:", "    if False:"),
    Mutation("signature for other brokers counts", S + "decision.py",
             "        if host.broker_id is not None and host.broker_id not in st.brokers:", "        if False:"),
    Mutation("expired approval counts", S + "decision.py", "        if now >= st.expires_at:", "        if False:"),
    Mutation("non-canonical statement text accepted", S + "statement.py",
             "        if statement.render() != text:", "        if False:"),
    Mutation("proposal counts as an approval", S + "decision.py",
             '    status = {"propose": AUTHOR, "reject": VETO}.get(st.action, COUNTED)',
             '    status = {"reject": VETO}.get(st.action, COUNTED)'),
    Mutation("signed rejection ignored", S + "decision.py", "    if vetoes:", "    if False:"),
    Mutation("approvals_required ignored", S + "decision.py", "    elif len(counted) < policy.approvals_required:",
             "    elif len(counted) < 1:"),
    # namespace
    Mutation("another namespace accepted", S + "verify.py", "    if envelope.namespace != NAMESPACE:", "    if False:"),
    Mutation("signs under another namespace", S + "signer.py", '"-Y", "sign", "-n", NAMESPACE,',
             '"-Y", "sign", "-n", "file",'),
    # trust-file permissions (every node of the path is judged by owned_path.check_node)
    Mutation("trust file of another owner accepted", S + "owned_path.py", "    if st.st_uid not in trusted:",
             "    if False:"),
    Mutation("writable trust file accepted", S + "owned_path.py",
             "    if writable and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):", "    if False:"),
    Mutation("trust file's directories not checked", S + "owned_path.py",
             "        check_node(node, st, trusted, rule)\n",
             "        if not pending:\n            check_node(node, st, trusted, rule)\n"),
    Mutation("trust file need not be a regular file", S + "trust.py", "    if not stat.S_ISREG(vetted.st.st_mode):",
             "    if False:"),
    # revocation
    Mutation("revoked_keys not passed to ssh-keygen", S + "verify.py",
             '    if revoked is not None:\n        args += ["-r", str(revoked)]', '    if False:\n        pass'),
    Mutation("revoked_keys not loaded", S + "trust.py", "    if executor.revoked_keys:", "    if False:"),
    # principal and validity
    Mutation("principal taken from the row, not the statement", S + "decision.py",
             "    check = verify_signature(st.to_bytes(), row.signature, st.signer, trust, now)",
             "    check = verify_signature(st.to_bytes(), row.signature, row.signer or st.signer, trust, now)"),
    Mutation("refusal explanation ignores the principal", S + "verify.py",
             "    mine = [ln for ln in lines if ln.matches_principal(signer)]", "    mine = lines"),
    Mutation("refusal explanation ignores a certificate's principals", S + "verify.py",
             "    if cert is not None and signer not in cert.principals:", "    if False:"),
    Mutation("key validity judged now, not at the apply's time", S + "verify.py",
             '"-n", NAMESPACE, "-s", str(sig_file),\n            "-O", f"verify-time={verify_time(at)}"]',
             '"-n", NAMESPACE, "-s", str(sig_file)]'),
    Mutation("valid-after explanation dropped", S + "allowed_signers.py",
             "        if after is not None and (t := parse_openssh_time(after)) is not None and at < t:",
             "        if False:"),
    # key counting
    Mutation("one key under two principals counts twice", S + "decision.py",
             "            elif v.who in names or v.key in keys:", "            elif v.who in names:"),
    Mutation("one principal counts twice", S + "decision.py",
             "            elif v.who in names or v.key in keys:", "            elif v.key in keys:"),
    # the certificate-key rule
    Mutation("a certificate counts as itself, not its key", S + "ssh_key.py",
             "    return KeyBlob(key, Certificate(principals, valid_after, valid_before, authority.key))",
             "    return KeyBlob(PublicKey(key_type, blob), Certificate(principals, valid_after, valid_before, "
             "authority.key))"),
    Mutation("RSA integers compared as bytes", S + "ssh_key.py",
             '        blob += _string(_mpint(value) if kind == "m" else value)', "        blob += _string(value)"),
    Mutation("key parser reads past its buffer", S + "ssh_key.py",
             "        if size < 0 or self.offset + size > len(self.data):", "        if size < 0:"),
    Mutation("key parser accepts trailing bytes", S + "ssh_key.py",
             "        key = _key_fields(reader, key_type)\n        reader.end()",
             "        key = _key_fields(reader, key_type)"),
    # author exclusion
    Mutation("author's key counts under another name", S + "decision.py",
             "            if v.who in authors or v.key in author_keys:", "            if v.who in authors:"),
    Mutation("author's name counts with another key", S + "decision.py",
             "            if v.who in authors or v.key in author_keys:", "            if v.key in author_keys:"),
    Mutation("plan without a signed proposal applies", S + "decision.py", "    elif unsigned_author:",
             "    elif False:"),
    Mutation("workflow lets the registrant approve", "pipelines/plan/approval.py",
             "        check_not_author(plan, policy, by, authors_of(store, plan))", "        pass"),
]


def run_one(m: Mutation, tests: list[str]) -> tuple[Mutation, str, float]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        copy = Path(tmp)
        for name in ("pipelines", "tests"):
            shutil.copytree(
                REPO / name, copy / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis")
            )
        shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
        target = copy / m.path
        text = target.read_text()
        if text.count(m.old) != 1:
            return m, f"NOT APPLIED ({text.count(m.old)} matches)", 0.0
        target.write_text(text.replace(m.old, m.new))
        env = {**os.environ, "PYTHONPATH": str(copy)}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow", *tests],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        verdict = (
            "caught" if proc.returncode == 1 else "SURVIVED" if proc.returncode == 0 else f"error {proc.returncode}"
        )
    return m, verdict, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutations whose label contains this")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--signing", action="store_true",
                        help="the signing package's mutations, against the signing tests, instead of the executor's")
    args = parser.parse_args()
    mutations, tests = (SIGNING_MUTATIONS, SIGNING_TESTS) if args.signing else (MUTATIONS, TESTS)
    chosen = [m for m in mutations if args.only in m.label]
    caught = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for m, verdict, seconds in pool.map(lambda m: run_one(m, tests), chosen):
            caught += verdict == "caught"
            print(f"{verdict:<10} {seconds:6.0f}s  {m.label}  ({m.path})", flush=True)
    print(f"{caught} of {len(chosen)} mutations caught")


if __name__ == "__main__":
    main()
