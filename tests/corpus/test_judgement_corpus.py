"""corpus-check on a judgement corpus: one line naming the file, the entry and the field for each problem."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evals.corpus_check import main
from tests.corpus.test_corpus_check import base_corpora, judgement_entries, problem_lines, write_corpora

Entries = list[dict[str, Any]]


def _check(tmp_path: Path, entries: Entries, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    argv = write_corpora(tmp_path, base_corpora())
    (tmp_path / "judgements.json").write_text(json.dumps(entries), encoding="utf-8")
    code = main(argv)
    out = capsys.readouterr().out
    return code, problem_lines(out, tmp_path), out


def test_a_valid_judgement_corpus_passes_with_its_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, problems, out = _check(tmp_path, judgement_entries(), capsys)
    assert (code, problems) == (0, [])
    assert f"explanation judgements  {tmp_path}/judgements.json" in out


def _duplicate(entries: Entries) -> None:
    entries[3]["id"] = entries[0]["id"]


def _no_grade(entries: Entries) -> None:
    del entries[1]["grade"]


def _one_grade(entries: Entries) -> None:
    entries[3]["grade"] = "pass"


def _no_note(entries: Entries) -> None:
    entries[2]["note"] = "  "


def _bad_source(entries: Entries) -> None:
    entries[2]["source"] = "vibes"


def _bad_grade(entries: Entries) -> None:
    entries[0]["grade"] = "PASS"


def _bad_split(entries: Entries) -> None:
    entries[0]["split"] = "test"


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (_duplicate, "case judged-0: field 'id': duplicate id"),
        (_no_grade, "case judged-1: field 'grade': Field required"),
        (_one_grade, "field 'grade': no entry graded 'fail' in split 'dev'"),
        (_no_note, "case judged-2: field 'note'"),
        (_bad_source, "case judged-2: field 'source'"),
        (_bad_grade, "case judged-0: field 'grade'"),
        (_bad_split, "case judged-0: field 'split'"),
    ],
)
def test_each_problem_is_one_line_naming_file_entry_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: Callable[[Entries], None], expected: str
) -> None:
    entries = judgement_entries()
    broken(entries)
    code, problems, _ = _check(tmp_path, entries, capsys)
    assert code == 1
    assert len(problems) == 1 and problems[0].startswith(f"{tmp_path}/judgements.json: "), problems
    assert expected in problems[0], problems
