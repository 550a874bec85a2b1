"""Verifying one signed statement against the host's trust with ``ssh-keygen -Y verify``.

OpenSSH decides: the signature must be a valid SSHSIG over exactly the statement bytes, under
:data:`~pipelines.signing.statement.NAMESPACE`, made by a key that ``allowed_signers`` lists for the statement's
``signer`` principal (its ``namespaces`` and ``valid-after``/``valid-before`` options honoured at the verification
time), and not in ``revoked_keys``. Why ssh-keygen rather than a Python library: it is the implementation every
OpenSSH and git user already trusts, it reads ``allowed_signers`` and ``revoked_keys`` (KRLs too) with all of
their options, and it verifies every key type OpenSSH signs with, FIDO ``sk-`` keys and certificates included.

When ssh-keygen refuses, :func:`verify_signature` names the rule that failed (see
:mod:`pipelines.signing.allowed_signers`); the refusal itself never depends on that explanation.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipelines.signing.allowed_signers import read_signer_lines
from pipelines.signing.envelope import Envelope, EnvelopeError, read_envelope
from pipelines.signing.openssh import DEFAULT_SSH_KEYGEN, last_line, run
from pipelines.signing.ssh_key import PublicKey
from pipelines.signing.statement import NAMESPACE
from pipelines.signing.trust import HostTrust


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """ssh-keygen's verdict on one signature; ``rule`` and ``reason`` say why when it is not ``ok``. ``key``: the
    key that signed (a certificate's certified key), None when the signature could not be read."""

    ok: bool
    key: PublicKey | None
    rule: str | None = None
    reason: str = ""

    @property
    def key_fingerprint(self) -> str | None:
        return self.key.fingerprint if self.key else None


def verify_time(at: datetime) -> str:
    """``-O verify-time=`` value: UTC, seconds."""
    return at.astimezone(timezone.utc).strftime("%Y%m%d%H%M%SZ")


def _verify(message: bytes, sig_file: Path, signer: str, trust: HostTrust, revoked: Path | None, at: datetime,
            ) -> bool:
    args = ["-Y", "verify", "-f", str(trust.allowed_signers), "-I", signer, "-n", NAMESPACE, "-s", str(sig_file),
            "-O", f"verify-time={verify_time(at)}"]
    if revoked is not None:
        args += ["-r", str(revoked)]
    return run(str(trust.ssh_keygen), args, stdin=message).returncode == 0


def check_novalidate(message: bytes, signature: str, ssh_keygen: str | Path = DEFAULT_SSH_KEYGEN) -> bool:
    """Only the cryptography: is ``signature`` a valid SSHSIG over ``message`` under our namespace (any key)?"""
    with tempfile.TemporaryDirectory(prefix="logdir-gc-verify-") as tmp:
        sig_file = Path(tmp) / "statement.sig"
        sig_file.write_text(signature, encoding="ascii", errors="replace")
        done = run(str(ssh_keygen), ["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig_file)], stdin=message)
    return done.returncode == 0


def verify_signature(message: bytes, signature: str, signer: str, trust: HostTrust, at: datetime) -> SignatureCheck:
    """Whether ``signer`` signed exactly ``message`` with a key this host trusts at time ``at``."""
    try:
        envelope = read_envelope(signature)
    except EnvelopeError as exc:
        return SignatureCheck(False, None, "signature_invalid", f"not an SSH signature: {exc}")
    fingerprint, key = envelope.fingerprint, envelope.key
    if envelope.namespace != NAMESPACE:
        return SignatureCheck(False, key, "signature_namespace",
                              f"signed under namespace {envelope.namespace!r}, not {NAMESPACE!r}")
    with tempfile.TemporaryDirectory(prefix="logdir-gc-verify-") as tmp:
        sig_file = Path(tmp) / "statement.sig"
        sig_file.write_text(signature, encoding="ascii", errors="replace")
        if _verify(message, sig_file, signer, trust, trust.revoked_keys, at):
            return SignatureCheck(True, key)
        if not check_novalidate(message, signature, trust.ssh_keygen):
            return SignatureCheck(False, key, "signature_invalid",
                                  f"key {fingerprint}: the signature does not match the statement")
        if trust.revoked_keys is not None and _verify(message, sig_file, signer, trust, None, at):
            return SignatureCheck(False, key, "key_revoked",
                                  f"key {fingerprint} is listed in {trust.revoked_keys}")
        rule, reason = _explain(envelope, signer, trust.allowed_signers, at)
        if rule == "signature_rejected":
            probe = run(str(trust.ssh_keygen), ["-Y", "find-principals", "-f", str(trust.allowed_signers), "-s",
                                                str(sig_file), "-O", f"verify-time={verify_time(at)}"])
            reason += f" ({last_line(probe.stderr)})"
    return SignatureCheck(False, key, rule, reason)


def _explain(envelope: Envelope, signer: str, allowed: Path, at: datetime) -> tuple[str, str]:
    cert = envelope.certificate
    if cert is None:
        lines = [ln for ln in read_signer_lines(allowed) if not ln.cert_authority and ln.public_key() == envelope.key]
        who = f"key {envelope.fingerprint}"
    else:
        lines = [ln for ln in read_signer_lines(allowed)
                 if ln.cert_authority and ln.public_key() == cert.signature_key]
        who = f"key {envelope.fingerprint} (certified by {cert.signature_key.fingerprint})"
    if not lines:
        return "signer_not_allowed", f"{who} is not in {allowed}"
    if cert is not None and signer not in cert.principals:
        return "signer_not_allowed", f"{who}: its certificate is for {','.join(cert.principals)}, not for {signer}"
    mine = [ln for ln in lines if ln.matches_principal(signer)]
    if not mine:
        listed = ",".join(p for ln in lines for p in ln.principals)
        return "signer_not_allowed", f"{who} is allowed for {listed}, not for {signer}"
    if not any(ln.permits_namespace(NAMESPACE) for ln in mine):
        return "signature_namespace", f"{allowed} does not permit {who} to sign in namespace {NAMESPACE}"
    problems = [p for ln in mine if (p := ln.validity_problem(at)) is not None]
    if len(problems) == len(mine):
        return "key_validity", f"{who} of {signer}: {problems[0]}"
    return "signature_rejected", f"ssh-keygen refused {who} of {signer}"
