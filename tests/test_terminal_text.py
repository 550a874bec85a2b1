"""``terminal_text``: whatever a name holds, what is printed is one line of visible characters that gives the name
back; the executor's text reports keep one line per item whatever the plan's fields hold."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.cli import executor_text
from pipelines.execute.apply import ApplyReport, ItemOutcome
from pipelines.execute.purge import PurgeReport
from pipelines.execute.restore import RestoreReport
from pipelines.terminal_text import LIMIT, escape, md_code, md_text, plot_label, shown, unescape

#: Every code point, surrogates included (undecodable file names arrive as lone surrogates).
NAMES = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=300)
HIDDEN = ("Cc", "Cf", "Cs", "Cn", "Zl", "Zp")


def _hidden(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) in HIDDEN]


@settings(max_examples=500)
@given(NAMES)
def test_escaped_names_are_visible_and_round_trip(name: str) -> None:
    out = escape(name)
    assert _hidden(out) == []
    assert unescape(out) == name


@settings(max_examples=300)
@given(NAMES)
def test_every_output_form_is_one_visible_line(name: str) -> None:
    for out in (shown(name), md_text(name), md_code(name, in_table=True), plot_label(name)):
        assert _hidden(out) == [] and "\n" not in out
    cut = shown(name)
    if len(name) > LIMIT:
        assert cut.endswith(f"...({len(name):,} chars)") and unescape(cut.rsplit("...(", 1)[0]) == name[:LIMIT]
    else:
        assert unescape(cut) == name


@settings(max_examples=300)
@given(NAMES)
def test_markdown_cells_cannot_be_split(name: str) -> None:
    """In a table row, a name never adds a cell: every ``|`` it holds is escaped."""
    for cell in (md_text(name), md_code(name, in_table=True)):
        assert cell.replace("\\\\", "").replace("\\|", "").count("|") == 0


def test_known_attacks_are_shown_not_performed() -> None:
    assert escape("a\x1b[2Kb\rc\u202ed\u2066e\u200ff\x7f\x9b") == "a\\x1b[2Kb\\x0dc\\u202ed\\u2066e\\u200ff\\x7f\\x9b"
    assert escape("C:\\x1b") == "C:\\\\x1b" and unescape(escape("C:\\x1b")) == "C:\\x1b"  # a literal backslash
    assert md_text("a|b`c[d](e)<f>&g$h$") == "a\\|b\\`c\\[d\\](e)\\<f\\>\\&g\\$h\\$"
    assert md_code("x`y") == "``x`y``" and md_code("a|b", in_table=True) == "`a\\|b`"
    assert plot_label("$\\alpha$") == "\\$\\\\alpha\\$"


@settings(max_examples=150)
@given(st.lists(st.tuples(NAMES, NAMES), min_size=1, max_size=4), NAMES)
def test_executor_reports_print_one_line_per_item(items: list[tuple[str, str]], problem: str) -> None:
    apply = ApplyReport("plan\n1", 1, True, "applied",
                        [ItemOutcome(f"i{n}", path, "skipped", why) for n, (path, why) in enumerate(items)],
                        problems=[problem])
    restore = RestoreReport("plan\r1", 1, restored=["i0"], skipped={f"i{n}": why for n, (_, why) in enumerate(items)},
                            paths={f"i{n}": path for n, (path, _) in enumerate(items)}, problems=[problem])
    purge = PurgeReport(1, True, measured_bytes={path: 1 for path, _ in items},
                        failed={f"p/{path}": why for path, why in items}, problems=[problem])
    outcomes = [apply.to_dict(), {"plan_id": problem, "refused": problem}, {"error": problem}]
    for lines, expected in ((executor_text.apply_lines(apply), 1 + len(items) + 1 + 1),
                            (executor_text.restore_lines(restore), 1 + 1 + len(items) + 1 + 1),
                            (executor_text.purge_lines([purge]), 1 + len({f"p/{p}" for p, _ in items}) + 1),
                            (executor_text.prestart_lines(outcomes), 3)):
        assert len(lines) == expected
        assert all(_hidden(line) == [] and "\n" not in line for line in lines)


def test_prestart_prints_text_lines_not_dict_reprs() -> None:
    report = ApplyReport("plan-1", 1, True, "applied", [ItemOutcome("a", "/d/x-0", "quarantined", bytes=2048),
                                                        ItemOutcome("b", "/d/y-0", "skipped", "young")])
    lines = executor_text.prestart_lines([report.to_dict(), {"plan_id": "plan-2", "skipped": "time budget exhausted"},
                                          {"error": "prestart: ConfigError: bad"}])
    assert lines == ["plan plan-1 on broker 1: 1 quarantined, 1 skipped; 2.0 KiB quarantined; status applied",
                     "plan plan-2: not started (time budget exhausted)",
                     "prestart: ConfigError: bad"]
    assert executor_text.prestart_lines([]) == ["prestart: nothing to apply"]


def test_progress_lines_escape_names_and_mask_url_passwords() -> None:
    import io

    from pipelines.cli.progress import LineReporter, TerminalReporter

    for reporter_type in (LineReporter, TerminalReporter):
        stream = io.StringIO()
        reporter = reporter_type(stream)
        reporter.note("crawl of sftp://gc:Pw-Planted-1@h/data\x1b[2K failed\r")
        reporter.step_finished("apply plan p\u202e1", 1, 1, 0.5, "1 quarantined\n")
        text = stream.getvalue().replace("\r\x1b[K", "")  # the live reporter's own redraw code
        assert "Pw-Planted-1" not in text and "sftp://gc:***@h/data\\x1b[2K failed\\x0d" in text
        assert _hidden(text.replace("\n", "")) == [] and "p\\u202e1" in text and "quarantined\\x0a" in text
