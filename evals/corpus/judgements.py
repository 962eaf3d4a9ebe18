"""The human-graded judgement corpus: explanations a person graded pass or fail, to measure a judge by.

`evals/explanation_judgements.json` is a JSON list of entries (`JudgementEntry`): the
case inputs an explanation was written for (interests, title, summary), the explanation
`text`, the human `grade`, where the text came from (`source`) and a `note` saying why.
`judge_check` grades every entry with a judge and compares; corpus-check runs
`judgement_rules` on the file. Its sha256 (`judgements_sha256`) names the corpus a
judge's validation was measured on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from evals.corpus.cases import SPLITS, CaseId, NonEmpty, Split
from evals.corpus.read import read_cases, split_sha256

__all__ = [
    "GRADES",
    "SOURCES",
    "Grade",
    "JudgementEntry",
    "Source",
    "judgement_rules",
    "judgements_sha256",
    "load_judgements",
]

Grade = Literal["pass", "fail"]
GRADES: tuple[Grade, ...] = get_args(Grade)
Source = Literal[
    "stub",
    "builtin-model",
    "trick-word-list",
    "trick-interest-echo",
    "hand-good",
    "hand-false-link",
    "refusal-right",
    "refusal-wrong",
]
SOURCES: tuple[Source, ...] = get_args(Source)


class JudgementEntry(BaseModel):
    """One human-graded explanation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: CaseId
    split: Split
    interests: NonEmpty
    title: NonEmpty
    summary: NonEmpty
    text: NonEmpty
    grade: Grade
    source: Source
    note: NonEmpty


def load_judgements(path: Path, split: str | None = None) -> list[JudgementEntry]:
    """The entries of `path` (all, or one split); CorpusError lists every problem, one line each."""
    entries = read_cases(path, JudgementEntry)
    return entries if split in (None, "all") else [e for e in entries if e.split == split]


def judgement_rules(path: Path, entries: Sequence[JudgementEntry]) -> Iterable[str]:
    """Both grades in each split: a judge cannot be measured on a split graded one way only."""
    for split in SPLITS:
        grades = {e.grade for e in entries if e.split == split}
        for grade in GRADES:
            if grade not in grades:
                yield (
                    f"{path}: field 'grade': no entry graded {grade!r} in split {split!r}; "
                    f"add {grade} entries to {split} (kappa needs both grades)"
                )


def judgements_sha256(entries: Sequence[JudgementEntry]) -> str:
    """sha256 of the whole corpus's canonical content, in file order: what a validation was measured on."""
    return split_sha256(entries)
