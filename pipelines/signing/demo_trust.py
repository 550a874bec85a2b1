"""Keys for ``logdir-gc demo``: an approver key, the plan job's key and the allowed_signers file a broker host of
the demo trusts.

The demo's plan job signs its proposal with ``<out>/keys/plan-job`` (``signing.service_key``) as the plan's author,
its walkthrough approves with ``--key <out>/keys/alice`` and applies with ``executor.allowed_signers`` set, so it
shows the signed path a production host runs. Demo keys have no passphrase: never use them elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.signing.openssh import SigningError, last_line, run
from pipelines.signing.statement import NAMESPACE, PRINCIPAL

#: the key the demo's plan job signs its proposals with (``signing.service_key``)
PLAN_JOB = "plan-job"


def write_demo_trust(out: Path, approvers: tuple[str, ...] = ("alice",), author: str | None = None) -> dict[str, Any]:
    """``<out>/keys/<name>`` per approver and ``<out>/trust/allowed_signers``; returns the executor config keys.
    With ``author`` (the plan's ``created_by``, a principal name), also ``<out>/keys/plan-job``, listed for it.

    Raises SigningError when ssh-keygen is missing or fails.
    """
    keys, trust = out / "keys", out / "trust"
    keys.mkdir(parents=True, exist_ok=True, mode=0o700)
    trust.mkdir(parents=True, exist_ok=True, mode=0o755)
    lines = []
    signers = [(name, name) for name in approvers] + ([(author, PLAN_JOB)] if author is not None else [])
    for name, key_name in signers:
        key = keys / key_name
        if not key.exists():
            done = run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", f"{name} (logdir-gc demo)", "-f",
                                      str(key)])
            if done.returncode != 0:
                raise SigningError(f"ssh-keygen could not make the demo key {key}: {last_line(done.stderr)}")
        public = " ".join(Path(f"{key}.pub").read_text(encoding="utf-8").split()[:2])
        lines.append(f'{name} namespaces="{NAMESPACE}" {public}')
    allowed = trust / "allowed_signers"
    allowed.write_text("# logdir-gc demo approvers\n" + "\n".join(lines) + "\n", encoding="utf-8")
    allowed.chmod(0o644)
    return {"require_signatures": True, "allowed_signers": str(allowed)}


def demo_config_sections(out: Path, author: str) -> dict[str, dict[str, Any]]:
    """The demo config's ``executor`` section and, when ``author`` (who runs the demo: its plans' ``created_by``)
    can be a principal, its ``signing`` section: the plan job then signs each proposal as ``author``.

    Raises SigningError when ssh-keygen is missing or fails.
    """
    if not PRINCIPAL.fullmatch(author):
        return {"executor": write_demo_trust(out)}
    return {"executor": write_demo_trust(out, author=author), "signing": {"service_key": str(out / "keys" / PLAN_JOB)}}
