"""The corpora's growth targets (issue 15): sizes, readers, family sizes, and coverage in dev.

These are what make dev able to decide: enough cases for a paired test to see a
ten-point change, every family and every tag represented in dev, more than two
readers. `python -m evals.corpus_check` reports them as one labelled group, apart
from the structural rules, and `--skip-targets` leaves them out (the corpora in the
repository meet them only once the new hand-written cases are merged). Every
problem is one line naming the file and the field, and saying how many cases to add.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from attest.features import TAGS
from evals.corpus.cases import (
    EXPLANATION_FAMILIES,
    REACTION_FAMILIES,
    TAGGING_FAMILIES,
    Case,
    ExplanationCase,
    ReactionCase,
    TaggingCase,
)

__all__ = ["HARD_FAMILIES", "ISSUE_15", "Targets", "explanation_targets", "reaction_targets", "tagging_targets"]

HARD_FAMILIES: tuple[str, ...] = ("adjacent", "bait", "terse", "crossover", "near-miss")


@dataclass(frozen=True)
class Targets:
    """The minimum sizes: (all cases, dev cases) per corpus, and the per-group floors."""

    tagging: tuple[int, int] = (160, 80)
    reaction: tuple[int, int] = (220, 110)
    explanation: tuple[int, int] = (120, 60)
    dev_refusals: int = 20
    readers: int = 4
    hard_family: int = 10
    tag_in_dev: int = 3


ISSUE_15 = Targets()


def tagging_targets(path: Path, cases: Sequence[TaggingCase], targets: Targets = ISSUE_15) -> Iterator[str]:
    yield from _sizes(path, cases, targets.tagging)
    yield from _families_in_dev(path, cases, TAGGING_FAMILIES)
    dev = Counter(tag for case in cases if case.split == "dev" for tag in case.tags)
    for tag in TAGS:
        if dev[tag] < targets.tag_in_dev:
            yield (
                f"{path}: field 'tags': tag '{tag}' is gold in {dev[tag]} dev case(s), below the target of "
                f"{targets.tag_in_dev}; add {targets.tag_in_dev - dev[tag]} dev case(s) that carry it"
            )


def reaction_targets(path: Path, cases: Sequence[ReactionCase], targets: Targets = ISSUE_15) -> Iterator[str]:
    yield from _sizes(path, cases, targets.reaction)
    yield from _families_in_dev(path, cases, REACTION_FAMILIES)
    readers = len({(case.persona, case.interests) for case in cases})
    if readers < targets.readers:
        yield (
            f"{path}: field 'persona': {readers} distinct reader(s), below the target of {targets.readers}; "
            f"add cases for {targets.readers - readers} more reader(s) from other fields"
        )
    sizes: Counter[str] = Counter(case.family for case in cases)
    for family in HARD_FAMILIES:
        if sizes[family] < targets.hard_family:
            yield (
                f"{path}: field 'family': family '{family}' has {sizes[family]} case(s), below the target of "
                f"{targets.hard_family}; add {targets.hard_family - sizes[family]}"
            )


def explanation_targets(path: Path, cases: Sequence[ExplanationCase], targets: Targets = ISSUE_15) -> Iterator[str]:
    yield from _sizes(path, cases, targets.explanation)
    yield from _families_in_dev(path, cases, EXPLANATION_FAMILIES)
    refusals = sum(1 for case in cases if case.split == "dev" and case.refuse)
    if refusals < targets.dev_refusals:
        yield (
            f"{path}: field 'refuse': dev holds {refusals} refusal case(s), below the target of "
            f"{targets.dev_refusals}; add {targets.dev_refusals - refusals} refusal case(s) to dev"
        )


def _sizes(path: Path, cases: Sequence[Case], wanted: tuple[int, int]) -> Iterator[str]:
    total, dev = len(cases), sum(1 for case in cases if case.split == "dev")
    if total < wanted[0]:
        yield f"{path}: field 'id': {total} cases, below the target of {wanted[0]}; add {wanted[0] - total}"
    if dev < wanted[1]:
        yield f"{path}: field 'split': {dev} dev cases, below the target of {wanted[1]}; add {wanted[1] - dev} to dev"


def _families_in_dev(path: Path, cases: Sequence[Case], families: Sequence[str]) -> Iterator[str]:
    present = {case.family for case in cases if case.split == "dev"}
    for family in families:
        if family not in present:
            yield f"{path}: field 'family': no dev case of family '{family}'; add dev cases of that family"
