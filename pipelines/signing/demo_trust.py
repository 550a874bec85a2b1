"""Keys for ``logdir-gc demo``: an approver key and the allowed_signers file a broker host of the demo trusts.

The demo's walkthrough approves with ``--key <out>/keys/alice`` and applies with ``executor.allowed_signers`` set,
so it shows the signed path a production host runs. Demo keys have no passphrase: never use them elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.signing.openssh import SigningError, last_line, run
from pipelines.signing.statement import NAMESPACE


def write_demo_trust(out: Path, approvers: tuple[str, ...] = ("alice",)) -> dict[str, str]:
    """``<out>/keys/<name>`` per approver and ``<out>/trust/allowed_signers``; returns the executor config keys.

    Raises SigningError when ssh-keygen is missing or fails.
    """
    keys, trust = out / "keys", out / "trust"
    keys.mkdir(parents=True, exist_ok=True, mode=0o700)
    trust.mkdir(parents=True, exist_ok=True, mode=0o755)
    lines = []
    for name in approvers:
        key = keys / name
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
