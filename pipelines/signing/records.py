"""``gc_plan_signatures``: where signed statements are kept, beside the audit rows they belong to.

The table is a shared store and trusted for nothing: a reader takes a row's ``statement`` and ``signature`` and
checks them itself (:mod:`pipelines.signing.decision`); the other columns are copies for people and notebooks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pipelines.signing.signer import SignedStatement
from pipelines.tables.base import TableStore

TABLE = "gc_plan_signatures"


@dataclass(frozen=True, slots=True)
class SignatureRow:
    plan_id: str
    at: datetime
    action: str
    signer: str
    content_hash: str
    key_fingerprint: str
    statement: str
    signature: str


def store_signature(store: TableStore, plan_id: str, at: datetime, signed: SignedStatement) -> SignatureRow:
    """Append one signed statement (``at``: the time of the audit row it belongs to)."""
    st = signed.statement
    row = SignatureRow(plan_id, at, st.action, st.signer, st.content_hash, signed.key_fingerprint, signed.text,
                       signed.signature)
    store.ensure_tables([TABLE])
    store.append(TABLE, [{
        "plan_id": row.plan_id, "at": row.at, "action": row.action, "signer": row.signer,
        "content_hash": row.content_hash, "key_fingerprint": row.key_fingerprint, "statement": row.statement,
        "signature": row.signature,
    }])
    return row


def read_signatures(store: TableStore, plan_id: str) -> list[SignatureRow]:
    """Every stored signature row of ``plan_id`` in ``at`` order; none when the table does not exist yet."""
    if not store.exists(TABLE):
        return []
    out = [row_of(r) for r in store.read_rows(TABLE, {"plan_id": plan_id})]
    return sorted(out, key=lambda r: (r.at, r.signer))


def row_of(r: dict) -> SignatureRow:
    """One ``gc_plan_signatures`` row, typed (missing text as empty strings)."""
    return SignatureRow(r["plan_id"], r["at"], r.get("action") or "", r.get("signer") or "",
                        r.get("content_hash") or "", r.get("key_fingerprint") or "", r.get("statement") or "",
                        r.get("signature") or "")
