"""Names from disks, metadata logs, plans and the warehouse, made safe to show to a person.

Anyone who can create a directory, a topic or a plan row chooses the bytes of its name. Printed raw, a name can
clear or rewrite lines of an approver's terminal (ESC sequences, ``\\r``), forge whole lines (``\\n``) or reorder
the text around it (Unicode bidi overrides such as U+202E). Every such value goes through one of these functions
before it reaches a terminal, a text or Markdown file, an HTML page or a chart:

* :func:`escape`: every character that is not visible text (categories Cc, Cf, Cs, Cn, Zl, Zp: C0/C1 controls
  with ESC, DEL, newline, CR and tab, bidi overrides and isolates, zero-width and other format characters, lone
  surrogates of undecodable file names, unassigned code points, line and paragraph separators) is shown as a
  Python-style escape (``\\x1b``, ``\\u202e``, ``\\U000e0001``), and a backslash as ``\\\\``, so the result is one
  line of visible characters that :func:`unescape` turns back into the original;
* :func:`shown`: :func:`escape` of a value cut to ``limit`` characters, with ``...`` and its full length;
* :func:`md_text`, :func:`md_code`: the same for Markdown (table cells cannot be split or forged, no link, HTML
  or math is made of a name);
* :func:`html_text`: the same for HTML text and attributes;
* :func:`plot_label`: the same for a matplotlib label (a ``$`` never starts mathtext).

JSON output needs none of this: ``json.dumps`` (ASCII by default) writes every control and non-ASCII character as
a ``\\u`` escape, and a JSON value must stay exactly what was read.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["LIMIT", "escape", "html_text", "md_code", "md_text", "plot_label", "shown", "unescape"]

LIMIT = 256
"""Characters of one name shown before it is cut: any file name (255 bytes at most) and any Kafka topic name show
whole; paths and messages are given a larger limit where they are printed."""

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})
#: Markdown's active characters that Kafka names never hold (``_`` is legal in topic names and only makes emphasis
#: at word boundaries, so it stays as it is).
_MARKDOWN_ACTIVE = re.compile(r"([`|*\[\]<>&$~#!])")
_ESCAPE = re.compile(r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|U([0-9a-f]{8})|(\\))")


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN


def _code(ch: str) -> str:
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def escape(text: str) -> str:
    """``text`` with every invisible or layout-changing character written as an escape (one visible line)."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text  # the common case: plain ASCII names
    return "".join("\\\\" if ch == "\\" else (_code(ch) if _hidden(ch) else ch) for ch in text)


def unescape(text: str) -> str:
    """The original of :func:`escape`'s output."""
    def original(m: re.Match[str]) -> str:
        if m.group(4):
            return "\\"
        return chr(int(m.group(1) or m.group(2) or m.group(3), 16))

    return _ESCAPE.sub(original, text)


def shown(value: object, limit: int = LIMIT) -> str:
    """``value`` as one safe line: escaped, and cut after ``limit`` characters (``...`` and the full length)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return f"{escape(text[:limit])}...({len(text):,} chars)"
    return escape(text)


def md_text(value: object, limit: int = LIMIT) -> str:
    """``value`` as Markdown text (a table cell, a list item): :func:`shown`, and every character Markdown would
    act on (``|`` of a table, code, emphasis, links, HTML and entities, math) backslash-escaped."""
    return _MARKDOWN_ACTIVE.sub(r"\\\1", shown(value, limit))


def md_code(value: object, limit: int = LIMIT, *, in_table: bool = False) -> str:
    """``value`` as a Markdown code span: :func:`shown`, fenced by more backticks than it holds; in a table a
    ``|`` is escaped too (GitHub's tables split cells before they read code spans)."""
    text = shown(value, limit)
    if in_table:
        text = text.replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(value: object, limit: int = LIMIT) -> str:
    """``value`` as HTML text or attribute content: :func:`shown`, then ``html.escape``."""
    return html.escape(shown(value, limit))


def plot_label(value: object, limit: int = 60) -> str:
    """``value`` as a matplotlib label or title: :func:`shown` (short), every ``$`` escaped so it stays text."""
    return shown(value, limit).replace("$", "\\$")
