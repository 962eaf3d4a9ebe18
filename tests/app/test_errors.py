"""The one error boundary (`run_main`) and `printable`, which everything shown on a terminal goes through."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from attest.backends.settings import Settings
from attest.backends.stub import StubBackend
from attest.backends.types import Backend
from attest.cli import main
from attest.errors import AttestError, ConfigError, run_main, run_reporting_errors
from attest.text import printable

SECRET = "sk-live-0123456789abcdef"
BUG_LINE = re.compile(
    r"^prog: internal error: (\w+) at test_errors\.py:\d+ in (\w+); this is a bug: "
    r"the traceback is in (\S+) \(rerun with ATTEST_DEBUG=1 to print it\)\n$"
)


def _boundary(work: object) -> tuple[int, str]:
    err = io.StringIO()
    code = run_main("prog", work, stderr=err)  # type: ignore[arg-type]
    return code, err.getvalue()


def _raise(exc: BaseException) -> int:
    raise exc


# --- user errors -----------------------------------------------------------------------------


def test_success_returns_the_work_s_code_and_prints_nothing() -> None:
    assert _boundary(lambda: 3) == (3, "")


def test_an_attest_error_is_one_line_and_exit_1() -> None:
    code, err = _boundary(lambda: _raise(AttestError("cache dir /x is a file: give a directory")))
    assert (code, err) == (1, "prog: error: cache dir /x is a file: give a directory\n")


def test_a_config_error_is_an_attest_error_and_a_value_error() -> None:
    assert issubclass(ConfigError, AttestError) and issubclass(ConfigError, ValueError)
    assert _boundary(lambda: _raise(ConfigError("bad"))) == (1, "prog: error: bad\n")


def test_terminal_escapes_and_newlines_in_a_message_are_escaped() -> None:
    code, err = _boundary(lambda: _raise(AttestError("server said \x1b[2J\x1b]0;owned\x07\r\nfake line\u202e")))
    assert code == 1
    assert err == "prog: error: server said \\x1b[2J\\x1b]0;owned\\x07\\r\\nfake line\\u202e\n"


def test_the_old_name_is_the_same_boundary() -> None:
    assert run_reporting_errors is run_main


# --- bugs ------------------------------------------------------------------------------------


def _buggy() -> int:
    return {"a": 1}[SECRET]


def test_an_unexpected_exception_is_one_line_naming_a_traceback_file() -> None:
    code, err = _boundary(_buggy)
    assert code == 1
    match = BUG_LINE.match(err)
    assert match, err
    assert match.group(1, 2) == ("KeyError", "_buggy")
    saved = Path(match.group(3))
    try:
        text = saved.read_text(encoding="utf-8")
        assert text.startswith("Traceback (most recent call last):")
        assert f"KeyError: '{SECRET}'" in text
    finally:
        saved.unlink()


def test_an_unexpected_exception_s_message_is_not_printed() -> None:
    code, err = _boundary(_buggy)
    assert code == 1
    assert SECRET not in err
    Path(BUG_LINE.match(err).group(3)).unlink()  # type: ignore[union-attr]


def test_attest_debug_re_raises_both_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTEST_DEBUG", "1")
    with pytest.raises(AttestError, match="plain"):
        _boundary(lambda: _raise(AttestError("plain")))
    with pytest.raises(KeyError):
        _boundary(_buggy)


def test_keyboard_interrupt_passes_through_for_the_entry_point_to_handle() -> None:
    with pytest.raises(KeyboardInterrupt):
        _boundary(lambda: _raise(KeyboardInterrupt()))


def test_the_attest_command_reports_a_bug_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def factory(settings: object) -> Backend:
        raise TypeError(f"unexpected {SECRET}")

    assert main(["tag", "A title", "A summary"], backend_factory=factory) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("attest: internal error: TypeError at test_errors.py:")
    assert SECRET not in err
    Path(err.split("the traceback is in ")[1].split(" ")[0]).unlink()


def test_the_attest_command_closes_its_backend(capsys: pytest.CaptureFixture[str]) -> None:
    closed: list[bool] = []

    class Closing(StubBackend):
        def close(self) -> None:
            closed.append(True)

    def factory(settings: Settings) -> Closing:
        return Closing(settings.options, settings.stub_answer)  # the command supplies its stub answerer

    assert main(["tag", "A title", "A summary"], backend_factory=factory) == 0
    capsys.readouterr()
    assert closed == [True]


# --- printable -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, punctuation: é 中 ✓", "plain text, punctuation: é 中 ✓"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("a\rb", "a\\rb"),
        ("a\nb", "a\\nb"),
        ("a\tb", "a\\tb"),
        ("bell\x07 del\x7f nul\x00", "bell\\x07 del\\x7f nul\\x00"),
        ("c1 csi \u009b31m", "c1 csi \\x9b31m"),
        ("bidi \u202eevil\u202c isolate \u2066x\u2069", "bidi \\u202eevil\\u202c isolate \\u2066x\\u2069"),
        ("zero\u200bwidth \ufeffbom", "zero\\u200bwidth \\ufeffbom"),
        ("line\u2028sep para\u2029sep", "line\\u2028sep para\\u2029sep"),
        ("no\u00a0break", "no break"),
        ("tag \U000e0041", "tag \\U000e0041"),
    ],
    ids=["plain", "csi", "cr", "lf", "tab", "c0", "c1", "bidi", "zero-width", "separators", "nbsp", "tag-char"],
)
def test_printable_escapes_what_could_drive_a_terminal(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_printable_keeps_newlines_only_when_asked() -> None:
    assert printable("one\ntwo\x1b[K\r\n", multiline=True) == "one\ntwo\\x1b[K\\r\n"


def test_printable_output_is_always_one_printable_line() -> None:
    every = "".join(chr(c) for c in range(0x0, 0x3000))
    shown = printable(every)
    assert all(ch.isprintable() for ch in shown)


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "evals.runs", "--cache-dir", "{cache}", "list", "--json"],
        ["-m", "attest.cli", "tag", "--backend", "stub", "T", "S"],
    ],
    ids=["runs-list-json", "attest-tag"],
)
def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    """`... | head` where head has gone: no "internal error: BrokenPipeError", no "Exception ignored"."""
    import os
    import subprocess
    import sys

    (tmp_path / "runs").mkdir()
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails with EPIPE
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{repo / 'src'}:{repo}"}
    try:
        done = subprocess.run(
            [sys.executable, *(a.format(cache=tmp_path) for a in argv)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 1
