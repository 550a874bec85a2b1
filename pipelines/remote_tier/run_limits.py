"""What a whole run may plan of the remote tier, on top of each segment's own class (pure; the Spark path and any
re-check apply the same limits).

* ``remote_tier.owned_prefix`` unset: nothing is plannable (keys carry no cluster id; two clusters may share a
  bucket, so the operator must claim a prefix);
* a segment with a key outside ``owned_prefix`` is not plannable;
* a listing that is incomplete (a folder or an inventory data file could not be read) plans nothing: a segment
  could miss keys, and the run cannot tell.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from pipelines.remote_tier.classify import PLANNABLE_REMOTE_CLASSES, RemoteFinding

__all__ = ["limit_findings"]

_NOT_PLANNABLE = "; not plannable: "


def _blockers(f: RemoteFinding, owned_prefix: str | None, incomplete: str | None) -> list[str]:
    if f.class_name not in PLANNABLE_REMOTE_CLASSES:
        return []
    out = []
    if not owned_prefix:
        out.append("remote_tier.owned_prefix is unset (nothing remote is planned)")
    else:
        outside = [k for k in f.keys if not k.startswith(owned_prefix)]
        if outside:
            out.append(f"{len(outside)} key(s) outside remote_tier.owned_prefix {owned_prefix!r}, e.g. {outside[0]!r}")
    if incomplete:
        out.append(f"the listing is incomplete ({incomplete})")
    return out


def limit_findings(findings: Iterable[RemoteFinding], *, owned_prefix: str | None, incomplete: str | None = None
                   ) -> Iterator[RemoteFinding]:  # fmt: skip
    """``findings`` with the run's limits applied: each one they block is not plannable and its reason says why."""
    for f in findings:
        more = _blockers(f, owned_prefix, incomplete)
        if not more:
            yield f
            continue
        joiner = "; " if _NOT_PLANNABLE in f.reason else _NOT_PLANNABLE
        yield replace(f, plannable=False, reason=f.reason + joiner + "; ".join(more))
