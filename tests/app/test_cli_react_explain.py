"""`attest react` and `attest explain` beside `attest tag`; stdin, empty input, nonsense options, --help."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from attest.backends.settings import Settings
from attest.backends.stub import StubBackend
from attest.backends.types import Backend
from attest.cli import build_parser, main
from attest.explain import generate_explanation
from attest.simulate import react_to_item
from tests.fakes import FakeBackend, RecordingChat, seed_stub

PERSONA = "A synthetic chemist who develops palladium-catalysed coupling reactions."
INTERESTS = "I read new cross-coupling reactions and catalysts, with substrate tables."
ITEMS = [
    {"id": "item-01", "title": "Pd-catalysed C-N coupling at room temperature", "summary": "A new ligand couples."},
    {"id": 2, "title": "Stable AdamW without warmup", "summary": "Clipping the update norm removes warmup."},
    {"title": "Operando Raman of copper electrodes", "summary": "Spectra track adsorbed CO on Cu(100)."},
]
COMMANDS = {
    "tag": [],
    "react": ["--persona", PERSONA, "--interests", INTERESTS],
    "explain": ["--interests", INTERESTS],
}


def _run(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None, backend: Backend | None = None
) -> tuple[int, str, str]:
    factory = (lambda settings: backend) if backend is not None else None
    code = main(list(argv), stdin=io.StringIO(stdin) if stdin is not None else None, backend_factory=factory)
    out, err = capsys.readouterr()
    return code, out, err


def _jsonl(path: Path, items: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def _expected_react(item: dict[str, object]) -> dict[str, object]:
    chat = seed_stub().chat_json
    return react_to_item(PERSONA, INTERESTS, str(item["title"]), str(item["summary"]), chat_json=chat).model_dump()


def _expected_explain(item: dict[str, object]) -> dict[str, object]:
    chat = seed_stub().chat_json
    return generate_explanation(INTERESTS, str(item["title"]), str(item["summary"]), chat_json=chat).model_dump()


def _with_id(item: dict[str, object], answer: dict[str, object]) -> dict[str, object]:
    return {"id": str(item["id"]), **answer} if "id" in item else answer


# --- react and explain -------------------------------------------------------------------


def test_react_prints_the_reaction_for_one_item(capsys: pytest.CaptureFixture[str]) -> None:
    item = ITEMS[0]
    code, out, err = _run(capsys, "react", "--backend", "stub", *COMMANDS["react"], item["title"], item["summary"])
    assert (code, err) == (0, "")
    assert json.loads(out) == _expected_react(item)
    assert set(json.loads(out)) == {"verdict", "confidence", "reasoning"}


def test_explain_prints_the_explanation_for_one_item(capsys: pytest.CaptureFixture[str]) -> None:
    item = ITEMS[0]
    code, out, err = _run(capsys, "explain", "--backend", "stub", *COMMANDS["explain"], item["title"], item["summary"])
    assert (code, err) == (0, "")
    assert json.loads(out) == _expected_explain(item) == {"text": _expected_explain(item)["text"]}


@pytest.mark.parametrize("command", ["react", "explain"])
def test_file_gives_one_line_per_item_keeping_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = _jsonl(tmp_path / "items.jsonl", ITEMS)
    code, out, err = _run(capsys, command, "--backend", "stub", *COMMANDS[command], "--file", str(path))
    assert (code, err) == (0, "")
    expected = _expected_react if command == "react" else _expected_explain
    assert [json.loads(line) for line in out.splitlines()] == [_with_id(i, expected(i)) for i in ITEMS]


@pytest.mark.parametrize("command", COMMANDS)
def test_file_dash_reads_stdin(capsys: pytest.CaptureFixture[str], command: str) -> None:
    stdin = "".join(json.dumps(item) + "\n" for item in ITEMS)
    code, out, err = _run(capsys, command, "--backend", "stub", *COMMANDS[command], "--file", "-", stdin=stdin)
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == len(ITEMS)
    assert [json.loads(line).get("id") for line in out.splitlines()] == ["item-01", "2", None]


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["react", "--persona", "  ", "--interests", INTERESTS], "--persona"),
        (["react", "--persona", PERSONA, "--interests", "\t"], "--interests"),
        (["explain", "--interests", ""], "--interests"),
    ],
    ids=["blank-persona", "blank-interests", "empty-interests"],
)
def test_a_blank_reader_is_refused_naming_the_option(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    code, out, err = _run(capsys, *argv, "--backend", "stub", "A title", "A summary")
    assert (code, out) == (1, "")
    assert err == f"attest: error: option {option}: must not be blank\n"


@pytest.mark.parametrize("command", ["react", "explain"])
def test_react_and_explain_require_the_reader(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--backend", "stub", "A title", "A summary"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    required = "--persona, --interests" if command == "react" else "--interests"
    assert f"the following arguments are required: {required}" in err


# --- empty input ---------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "\n\n", "   \n\t\n"], ids=["empty", "newlines", "blank-lines"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_without_items_is_an_error_not_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, content: str
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(content, encoding="utf-8")
    code, out, err = _run(capsys, command, "--backend", "stub", *COMMANDS[command], "--file", str(path))
    assert (code, out) == (1, "")
    assert err == f'attest: error: {path}: no items in it: give one {{"title", "summary"}} JSON object per line\n'


def test_empty_stdin_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "tag", "--backend", "stub", "--file", "-", stdin="")
    assert (code, out) == (1, "")
    assert err.startswith("attest: error: <stdin>: no items in it")


def test_a_blank_field_on_stdin_names_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    stdin = json.dumps(ITEMS[0]) + "\n\n" + json.dumps({"title": "  ", "summary": "s"}) + "\n"
    code, out, err = _run(capsys, "tag", "--backend", "stub", "--file", "-", stdin=stdin)
    assert (code, out) == (1, "")
    assert err == "attest: error: <stdin>:3: field 'title': must not be blank\n"


def test_nothing_is_asked_of_the_model_when_a_later_line_is_bad(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = RecordingChat(lambda messages, schema: {"tags": ["catalysis"]})
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(ITEMS[0]) + "\n" + '{"title": "t"}\n', encoding="utf-8")
    code, _, err = _run(capsys, "tag", "--file", str(path), backend=FakeBackend(chat))
    assert code == 1 and "items.jsonl:2: field 'summary': Field required" in err
    assert chat.history == []


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--timeout", "-1", "'-1' is not a positive, finite number of seconds"),
        ("--timeout", "0", "'0' is not a positive, finite number of seconds"),
        ("--timeout", "nan", "'nan' is not a positive, finite number of seconds"),
        ("--timeout", "inf", "'inf' is not a positive, finite number of seconds"),
        ("--timeout", "-inf", "'-inf' is not a positive, finite number of seconds"),
        ("--timeout", "soon", "'soon' is not a number of seconds"),
        ("--retries", "0", "'0': give at least 1 attempt"),
        ("--retries", "-3", "'-3': give at least 1 attempt"),
        ("--retries", "1.5", "'1.5' is not a whole number"),
    ],
)
@pytest.mark.parametrize("command", COMMANDS)
def test_nonsense_option_values_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], command: str, option: str, value: str, says: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, *COMMANDS[command], f"{option}={value}", "A title", "A summary"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == f"attest {command}: error: argument {option}: {says} (see attest {command} --help)\n"


def test_the_options_reach_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[Settings] = []

    def factory(settings: Settings) -> Backend:
        seen.append(settings)
        return StubBackend(settings.options, settings.stub_answer)  # the command supplies the tag answerer

    argv = ["tag", "--backend", "stub", "--model", "m1", "--retries", "5", "--timeout", "2.5", "A title", "A summary"]
    assert main(argv, backend_factory=factory) == 0
    capsys.readouterr()
    assert (seen[0].backend, seen[0].model, seen[0].retry.attempts, seen[0].retry.timeout_s) == ("stub", "m1", 5, 2.5)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_of_every_command_has_help_text() -> None:
    commands = _subparsers(build_parser())
    assert set(commands) == set(COMMANDS)
    missing = [
        f"{name} {action.dest}"
        for name, parser in commands.items()
        for action in parser._actions
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []


@pytest.mark.parametrize("command", COMMANDS)
def test_help_lists_the_shared_options(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--backend", "--model", "--retries", "--timeout", "--file"):
        assert option in out


# --- what the model says is printed as JSON, never raw ----------------------------------------


def test_terminal_escapes_in_an_answer_never_reach_stdout_raw(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "You read \x1b[2J\x1b]0;pwned\x07 catalysis\r\u009b31m."
    chat = RecordingChat([{"text": hostile}])
    code, out, err = _run(capsys, "explain", *COMMANDS["explain"], "A title", "A summary", backend=FakeBackend(chat))
    assert (code, err) == (0, "")
    assert not any(ch in out for ch in "\x1b\x07\r\u009b")
    assert json.loads(out) == {"text": hostile}
