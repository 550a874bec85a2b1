"""``java.util.Properties`` text: ``load`` (from a byte stream, so ISO-8859-1) and ``store`` (to a Writer).

Load rules (JDK ``Properties.LineReader`` and ``load0``):

- natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``; leading blanks (space, tab, form feed) are skipped;
- a logical line whose first non-blank character is ``#`` or ``!`` is a comment; blank lines are skipped;
- a line ending in an odd number of backslashes continues on the next natural line, whose leading blanks are
  dropped; at end of input a dangling backslash is dropped;
- the key ends at the first unescaped ``=``, ``:`` or blank; blanks and at most one ``=``/``:`` follow;
- escapes: ``\\t \\n \\r \\f``, ``\\uXXXX`` (exactly four hex digits, else an error), ``\\x`` means ``x``;
- a repeated key keeps its last value.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pipelines.errors import DecodeError

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class MalformedProperties(DecodeError):
    """A malformed ``\\uXXXX`` escape (Kafka's loader throws IllegalArgumentException)."""


def _logical_lines(text: str) -> list[str]:
    """Logical lines as ``Properties.LineReader.readLine`` returns them (comments and blank lines dropped)."""
    out: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    skip_blank = True  # skipping leading blanks of a line
    appended = False  # the current line continues a previous one (its empty body ends the logical line)
    backslash = False
    while i < n:
        c = text[i]
        i += 1
        if skip_blank:
            if c in _BLANKS or (not appended and c in "\r\n"):
                continue
            skip_blank = appended = False
        if not buf and c in "#!":
            while i < n and text[i] not in "\r\n":
                i += 1
            skip_blank = True
            continue
        if c not in "\r\n":
            buf.append(c)
            backslash = (not backslash) if c == "\\" else False
            continue
        if not buf:
            skip_blank = True
            continue
        at_eof = i >= n
        if c == "\r" and i < n and text[i] == "\n":
            i += 1
        if backslash:
            buf.pop()
            backslash = False
            if not at_eof:
                skip_blank = appended = True
                continue
        out.append("".join(buf))
        buf = []
        skip_blank = True
    if buf:
        if backslash:
            buf.pop()
        out.append("".join(buf))
    return out


def _unescape(s: str, line_no: int) -> str:
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        if i >= n:  # cannot happen for a logical line (odd trailing backslashes are continuations)
            break
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i : i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise MalformedProperties(f"malformed \\uxxxx encoding: \\u{digits}", line_no)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def load_properties(data: bytes | str) -> dict[str, str]:
    """Parse properties text; bytes are decoded as ISO-8859-1 like ``Properties.load(InputStream)``.

    Raises:
        MalformedProperties: a bad ``\\uXXXX`` escape.
    """
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    props: dict[str, str] = {}
    for line_no, line in enumerate(_logical_lines(text), start=1):
        key_end, value_start, has_sep, backslash = 0, len(line), False, False
        while key_end < len(line):
            c = line[key_end]
            if not backslash and c in "=:":
                value_start, has_sep = key_end + 1, True
                break
            if not backslash and c in _BLANKS:
                value_start = key_end + 1
                break
            backslash = (not backslash) if c == "\\" else False
            key_end += 1
        while value_start < len(line):
            c = line[value_start]
            if c not in _BLANKS:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        props[_unescape(line[:key_end], line_no)] = _unescape(line[value_start:], line_no)
    return props


def _escape(s: str, *, is_key: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if (i == 0 or is_key) else " ")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def java_date(moment: datetime) -> str:
    """``java.util.Date.toString`` for a UTC instant: ``Thu Oct 24 12:00:00 UTC 2024``."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%a %b %d %H:%M:%S UTC %Y")


def store_properties(items: list[tuple[str, str]], *, moment: datetime | None = None) -> bytes:
    """``Properties.store(writer, "")`` as Kafka calls it: ``#``, ``#<date>``, then ``key=value`` lines, UTF-8.

    The writer path does not ``\\u``-escape non-ASCII characters (Kafka reads the file back as ISO-8859-1, so such
    values do not survive a Kafka round trip either).
    """
    when = moment or datetime.now(timezone.utc)
    lines = ["#", "#" + java_date(when)]
    lines += [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in items]
    return "".join(line + "\n" for line in lines).encode("utf-8")
