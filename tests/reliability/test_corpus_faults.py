"""Malformed corpus files: each gives exactly one problem line, exit 1, never a traceback.

Every fault breaks one corpus file of an otherwise valid set (built in tmp_path by
tests/corpus/test_corpus_check.py's base) and goes through both ``read_cases`` and
``corpus_check.main``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from attest.errors import run_reporting_errors
from evals.corpus.cases import ExplanationCase, ReactionCase, TaggingCase
from evals.corpus.read import CorpusError, read_cases
from evals.corpus_check import main
from tests.corpus.test_corpus_check import base_corpora, problem_lines, write_corpora

Cases = list[Any]
Fault = Callable[[Path, Cases], object]

_MODELS: dict[str, type[BaseModel]] = {
    "tagging": TaggingCase,
    "reaction": ReactionCase,
    "explanation": ExplanationCase,
}


def _dump(cases: object) -> str:
    return json.dumps(cases, indent=1)


def _raw(data: bytes) -> Fault:
    return lambda path, cases: path.write_bytes(data)


def _text(edit: Callable[[str], str]) -> Fault:
    return lambda path, cases: path.write_text(edit(_dump(cases)), encoding="utf-8")


def _bytes(edit: Callable[[bytes], bytes]) -> Fault:
    return lambda path, cases: path.write_bytes(edit(_dump(cases).encode("utf-8")))


def _cases(edit: Callable[[Cases], object]) -> Fault:
    def write(path: Path, cases: Cases) -> None:
        broken = copy.deepcopy(cases)
        edit(broken)
        path.write_text(_dump(broken), encoding="utf-8")

    return write


def _set(index: int, field: str, value: object) -> Fault:
    return _cases(lambda cases: cases[index].__setitem__(field, value))


def _drop(index: int, field: str) -> Fault:
    return _cases(lambda cases: cases[index].pop(field))


def _replace(index: int, value: object) -> Fault:
    return _cases(lambda cases: cases.__setitem__(index, value))


def _directory(path: Path, cases: Cases) -> None:
    path.mkdir()


def _missing(path: Path, cases: Cases) -> None:
    """Write nothing: the file does not exist."""


def _nested_in_case(path: Path, cases: Cases) -> None:
    text = _dump(cases)
    depth = 100_000
    path.write_text(text.replace('"note": ', '"note": ' + "[" * depth + "]" * depth + ', "n": ', 1), encoding="utf-8")


def _duplicate_key(path: Path, cases: Cases) -> None:
    path.write_text(_dump(cases).replace('"verdict": true', '"verdict": true, "verdict": false', 1), encoding="utf-8")


_FX1 = "case fx-chemist-item-01"  # the reaction base's case #0 (verdict true)
_TOO_BIG = 10 * 1024 * 1024

FAULTS = [
    # the file as a whole
    pytest.param("reaction", _missing, ["no such file"], id="missing-file"),
    pytest.param("reaction", _directory, ["not a regular file"], id="directory"),
    pytest.param("reaction", _raw(b""), ["file is empty"], id="empty-file"),
    pytest.param("reaction", _raw(b" \n\t\n"), ["file is empty"], id="whitespace-only"),
    pytest.param("reaction", _bytes(lambda data: b"\xef\xbb\xbf" + data), ["UTF-8 byte-order mark"], id="bom"),
    pytest.param(
        "reaction",
        _bytes(lambda data: data.replace(b"Room", b"R\xf6om", 1)),
        ["not valid UTF-8 (byte 0xf6 at line 9 column 14)"],
        id="invalid-utf8",
    ),
    pytest.param("reaction", _text(lambda t: t[:-2] + ",\n]"), ["trailing comma at line 78 column 3"], id="comma-list"),
    pytest.param(
        "reaction",
        _text(lambda t: t.replace('"verdict": true\n', '"verdict": true,\n', 1)),
        ["trailing comma at line 11 column 18"],
        id="comma-object",
    ),
    pytest.param("reaction", _text(lambda t: t[: len(t) // 2]), ["not JSON: "], id="truncated"),
    pytest.param("reaction", _text(lambda t: t.replace('"', "'")), ["not JSON: Expecting property name"], id="quotes"),
    pytest.param(
        "reaction",
        _text(lambda t: t.replace("\n {", "\n // a comment\n {", 1)),
        ["not JSON: Expecting value at line 2 column 2"],
        id="comment",
    ),
    pytest.param(
        "reaction",
        _text(lambda t: t.replace("Room-", "Room\u0007-", 1)),
        ["not JSON: Invalid control character at line 9 column 17"],
        id="control-character",
    ),
    pytest.param("reaction", _raw(b'{"cases": []}'), ["top level is a JSON object, not a list"], id="object-top"),
    pytest.param("reaction", _raw(b"42"), ["top level is a number, not a list"], id="number-top"),
    pytest.param("reaction", _raw(b'"cases"'), ["top level is a string, not a list"], id="string-top"),
    pytest.param("reaction", _raw(b"null"), ["top level is null, not a list"], id="null-top"),
    pytest.param("reaction", _raw(b"[]"), ["the list holds no cases"], id="empty-list"),
    pytest.param(
        "reaction", _raw(b" " * _TOO_BIG), [f"file is {_TOO_BIG} bytes, over the 5242880-byte (5 MB) cap"], id="10mb"
    ),
    pytest.param("reaction", _raw(b"[" * 100_000 + b"]" * 100_000), ["JSON nested too deeply"], id="nested-lists"),
    pytest.param(
        "reaction", _raw(b'{"a":' * 100_000 + b"1" + b"}" * 100_000), ["JSON nested too deeply"], id="nested-objects"
    ),
    pytest.param("reaction", _nested_in_case, ["JSON nested too deeply"], id="nested-in-a-case"),
    pytest.param(
        "reaction",
        _text(lambda t: t.replace('"verdict": true', '"verdict": 1' + "0" * 5000, 1)),
        ["not JSON: Exceeds the limit (4300 digits)"],
        id="huge-integer",
    ),
    # one element of the list
    pytest.param("reaction", _replace(3, None), ["case #3: is null, not a JSON object"], id="null-case"),
    pytest.param("reaction", _replace(3, 7), ["case #3: is a number, not a JSON object"], id="number-case"),
    pytest.param("reaction", _replace(3, ["fx"]), ["case #3: is a JSON list, not a JSON object"], id="list-case"),
    pytest.param("reaction", _replace(3, "fx"), ["case #3: is a string, not a JSON object"], id="string-case"),
    # one field of one case
    pytest.param("reaction", _drop(0, "verdict"), [_FX1, "field 'verdict': Field required"], id="missing-field"),
    pytest.param(
        "reaction", _set(0, "mood", "keen"), [_FX1, "field 'mood': Extra inputs are not permitted"], id="extra-field"
    ),
    pytest.param(
        "reaction",
        _set(0, "verdict", "true"),
        [_FX1, "field 'verdict': Input should be a valid boolean"],
        id="str-bool",
    ),
    pytest.param(
        "reaction", _set(0, "verdict", 1), [_FX1, "field 'verdict': Input should be a valid boolean"], id="int-bool"
    ),
    pytest.param(
        "reaction", _set(0, "title", 12), [_FX1, "field 'title': Input should be a valid string"], id="int-str"
    ),
    pytest.param(
        "reaction", _set(0, "summary", ["a"]), [_FX1, "field 'summary': Input should be a valid string"], id="list-str"
    ),
    pytest.param(
        "reaction",
        _text(lambda t: t.replace('"verdict": true', '"verdict": NaN', 1)),
        [_FX1, "field 'verdict': Input should be a valid boolean"],
        id="nan",
    ),
    pytest.param(
        "reaction",
        _set(1, "id", "fx-chemist-item-01"),
        [_FX1, "field 'id': duplicate id (also case #0)"],
        id="duplicate-id",
    ),
    pytest.param("reaction", _duplicate_key, [_FX1, "field 'verdict': duplicate key"], id="duplicate-key"),
    pytest.param(
        "reaction",
        _set(0, "split", "test"),
        [_FX1, "field 'split': Input should be 'train' or 'dev'"],
        id="unknown-split",
    ),
    pytest.param(
        "reaction",
        _set(0, "split", "Train"),
        [_FX1, "field 'split': Input should be 'train' or 'dev'"],
        id="split-case",
    ),
    pytest.param(
        "reaction",
        _set(0, "note", ""),
        [_FX1, "field 'note': String should have at least 1 character"],
        id="empty-note",
    ),
    pytest.param(
        "reaction",
        _set(0, "note", " \n "),
        [_FX1, "field 'note': String should have at least 1 character"],
        id="blank-note",
    ),
    pytest.param(
        "reaction", _set(0, "note", None), [_FX1, "field 'note': Input should be a valid string"], id="null-note"
    ),
    pytest.param(
        "reaction",
        _set(6, "id", "Terse_01"),
        ["case Terse_01: field 'id': String should match pattern"],
        id="id-not-kebab",
    ),
    pytest.param(
        "reaction",
        _set(6, "id", "terse-01-"),
        ["case terse-01-: field 'id': String should match pattern"],
        id="id-dash",
    ),
    pytest.param("reaction", _drop(6, "id"), ["case #6: field 'id': Field required"], id="id-missing"),
    pytest.param(
        "reaction", _set(6, "id", None), ["case #6: field 'id': Input should be a valid string"], id="id-null"
    ),
    pytest.param(
        "reaction",
        _set(6, "id", "terse 01\nsecond line"),
        ["case #6: field 'id': String should match pattern"],
        id="id-multiline",
    ),
    pytest.param(
        "tagging",
        _set(2, "tags", ["catalysis", "astrobiology"]),
        ["case tag-02: field 'tags.1': Input should be 'organic-synthesis'"],
        id="unknown-tag",
    ),
    pytest.param(
        "tagging", _set(2, "tags", []), ["case tag-02: field 'tags': List should have at least 1 item"], id="no-tags"
    ),
    pytest.param(
        "tagging",
        _set(2, "tags", ["catalysis", "statistics", "optimization", "spectroscopy", "biochemistry"]),
        ["case tag-02: field 'tags': List should have at most 4 items"],
        id="five-tags",
    ),
    pytest.param(
        "tagging",
        _set(2, "tags", "catalysis"),
        ["case tag-02: field 'tags': Input should be a valid list"],
        id="tags-str",
    ),
    pytest.param(
        "explanation",
        _set(0, "must_mention_any", ["nickel", " "]),
        ["case match-01: field 'must_mention_any.1': String should have at least 1 character"],
        id="blank-mention",
    ),
    pytest.param(
        "explanation",
        _set(0, "refuse", "false"),
        ["case match-01: field 'refuse': Input should be a valid boolean"],
        id="refuse-str",
    ),
]


def _break(tmp_path: Path, task: str, fault: Fault) -> tuple[Path, list[str]]:
    corpora = base_corpora()
    argv = write_corpora(tmp_path, corpora)
    path = tmp_path / f"{task}_cases.json"
    path.unlink()
    fault(path, corpora[task])
    return path, argv


@pytest.mark.parametrize(("task", "fault", "expected"), FAULTS)
def test_read_cases_reports_one_line(tmp_path: Path, task: str, fault: Fault, expected: list[str]) -> None:
    path, _ = _break(tmp_path, task, fault)
    with pytest.raises(CorpusError) as raised:
        read_cases(path, _MODELS[task])
    assert len(raised.value.problems) == 1, raised.value.problems
    line = raised.value.problems[0]
    assert str(raised.value) == line
    assert line.startswith(f"{path}: ")
    for wanted in expected:
        assert wanted in line, (wanted, line)


@pytest.mark.parametrize(("task", "fault", "expected"), FAULTS)
def test_main_exits_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str, fault: Fault, expected: list[str]
) -> None:
    path, argv = _break(tmp_path, task, fault)
    assert main(argv) == 1
    captured = capsys.readouterr()
    lines = problem_lines(captured.out, tmp_path)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{path}: ")
    for wanted in expected:
        assert wanted in lines[0], (wanted, lines[0])
    assert "Traceback" not in captured.out + captured.err
    assert captured.out.rstrip().endswith("corpus-check: 1 problem")


def test_at_least_thirty_faults() -> None:
    assert len(FAULTS) >= 30


def test_a_bad_corpus_is_one_line_at_any_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CorpusError is an AttestError: the shared boundary prints its problem line and exits 1, no traceback."""
    path, _ = _break(tmp_path, "reaction", _set(0, "verdict", "true"))
    assert run_reporting_errors("attest-eval", lambda: len(read_cases(path, ReactionCase))) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"attest-eval: error: {path}: {_FX1}: field 'verdict': Input should be a valid boolean"]
