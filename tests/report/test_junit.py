"""JUnit XML for CI: a failed run's log tail (colours, hyperlinks, control characters) never makes the file
unreadable; every text is kept, made XML-safe."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from benchbed.record import ErrorInfo, SuiteInfo
from benchbed.report.nightly import junit_xml, xml_text

TAIL = (
    "\x1b[31mTraceback\x1b[0m (most recent call last):\n"
    "\x1b]8;;file:///x.py\x1b\\x.py\x1b]8;;\x1b\\ \x00\x08\x0b\x0c\ufffe ok ✓"
)


def test_a_failed_runs_coloured_log_tail_gives_parseable_junit(sim_pair, make_record) -> None:
    _, trace = sim_pair
    record = make_record(
        trace, {}, status="failed",
        error=ErrorInfo(message="launch failed: \x1b[1mexit 1\x1b[0m\x07", exit_code=1, log_tail=TAIL),
        suite=SuiteInfo(name="s", entry="q\x1b[0m", night="20261201T000000Z-abc123"),
    )  # fmt: skip
    root = ET.fromstring(junit_xml("suite\x1b[2K", [], [record]).encode())
    case = root.find("testsuite/testcase")
    assert root.find("testsuite").get("name") == "suite" and case.get("classname") == "suite.q"
    error = case.find("error")
    assert error.get("message") == "launch failed: exit 1\ufffd"
    assert error.text == "Traceback (most recent call last):\nx.py \ufffd\ufffd\ufffd\ufffd\ufffd ok ✓"


def test_xml_text_keeps_tabs_line_breaks_and_astral_characters() -> None:
    assert xml_text("a\tb\r\nc 🌙") == "a\tb\r\nc 🌙"
    assert xml_text("\x1b[32mgreen\x1b[0m\x01") == "green\ufffd"
