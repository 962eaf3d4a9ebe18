"""The structural rules each corpus must meet, one generator of problem lines per corpus.

Every line names the file, the case and the field, and says what to do. The
command line, the fixture checks and the table are in evals/corpus_check.py; the
growth targets (sizes, coverage) in evals/corpus/targets.py.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from attest.features import TAGS
from evals.corpus.cases import REACTION_FAMILIES, SPLITS, Case, ExplanationCase, ReactionCase, TaggingCase
from evals.corpus.words import mentions_a_form

__all__ = ["explanation_rules", "in_split", "reaction_rules", "tagging_rules"]

C = TypeVar("C", bound=Case)

# The design note's family rules, checked by id prefix as the note names them (adjacent-*, bait-*, terse-*)
# as well as by the family field: adjacent and bait are false and dev-only, terse true, crossover labelled
# per persona (each reader gets both verdicts); near-miss and brief-off are ours.
_NOTE_PREFIXES = ("adjacent", "bait", "terse")  # the note's families, each named by its id prefix <family>-*
_DEV_ONLY_FAMILIES = ("bait", "adjacent")
_FAMILY_VERDICT = {"adjacent": False, "bait": False, "terse": True, "brief-off": False, "near-miss": True}
_FAMILY_WHY = {
    "adjacent": "the field next door that the reader skips",
    "bait": "AI-for-science prose with nothing in it",
    "terse": "a one-line summary that is nonetheless clearly on the reader's topic",
    "brief-off": "a one-line summary off the reader's topic",
    "near-miss": "a neighbouring field that touches a stated interest, so the reader reads it",
}
_OTHER_FAMILY = {True: "brief-off", False: "terse"}  # where a short item with the other label belongs


def tagging_rules(path: Path, cases: Sequence[TaggingCase]) -> Iterator[str]:
    """Every structural problem of the tagging corpus, one line each."""
    yield from _splits_present(path, cases)
    yield from _tags_used(path, cases)
    yield from _tags_repeated(path, cases)
    yield from _duplicate_inputs(path, cases, ("title", "summary"))
    yield from _items_in_both_splits(path, cases)


def reaction_rules(path: Path, cases: Sequence[ReactionCase]) -> Iterator[str]:
    """Every structural problem of the reaction corpus (the fixture is checked in corpus_check), one line each."""
    yield from _splits_present(path, cases)
    yield from _both_classes(path, cases, "verdict", lambda case: case.verdict)
    yield from _duplicate_inputs(path, cases, ("persona", "interests", "title", "summary"))
    yield from _reaction_families(path, cases)
    yield from _families_in_dev(path, cases)
    yield from _family_verdicts(path, cases)
    yield from _crossover_per_persona(path, cases)
    yield from _items_in_both_splits(path, cases)


def explanation_rules(path: Path, cases: Sequence[ExplanationCase]) -> Iterator[str]:
    """Every structural problem of the explanation corpus, one line each."""
    yield from _splits_present(path, cases)
    yield from _both_classes(path, cases, "refuse", lambda case: case.refuse)
    yield from _duplicate_inputs(path, cases, ("interests", "title", "summary"))
    yield from _mentions_match_refuse(path, cases)
    yield from _mentions_in_interests(path, cases)
    yield from _refusals_in_dev(path, cases)
    yield from _items_in_both_splits(path, cases)


# --- rules shared by every corpus --------------------------------------------------------


def in_split(cases: Sequence[C], split: str) -> list[C]:
    return [case for case in cases if case.split == split]


def _splits_present(path: Path, cases: Sequence[Case]) -> Iterator[str]:
    for split in SPLITS:
        if not in_split(cases, split):
            yield f"{path}: field 'split': no case in '{split}'; put some cases in {split}"


def _both_classes(path: Path, cases: Sequence[C], field: str, value: Callable[[C], bool]) -> Iterator[str]:
    for split in SPLITS:
        group = in_split(cases, split)
        for wanted in (True, False):
            if group and not any(value(case) is wanted for case in group):
                yield (
                    f"{path}: field '{field}': split '{split}' has no case with {field} {str(wanted).lower()}; add one"
                )


def _duplicate_inputs(path: Path, cases: Sequence[Case], fields: tuple[str, ...]) -> Iterator[str]:
    seen: dict[tuple[str, ...], str] = {}
    for case in cases:
        key = tuple(" ".join(str(getattr(case, name)).casefold().split()) for name in fields)
        if key in seen:
            yield f"{path}: case {case.id}: field '{'+'.join(fields)}': same inputs as case {seen[key]}"
        else:
            seen[key] = case.id


def _text_key(text: str) -> str:
    return " ".join(text.casefold().split())


def _items_in_both_splits(path: Path, cases: Sequence[TaggingCase | ReactionCase | ExplanationCase]) -> Iterator[str]:
    """No item (its title, or its summary) in both splits: a dev case must not be seen in training."""
    train = [case for case in cases if case.split == "train"]
    titles = {_text_key(case.title): case.id for case in train}
    summaries = {_text_key(case.summary): case.id for case in train}
    for case in in_split(cases, "dev"):
        same_title, same_summary = titles.get(_text_key(case.title)), summaries.get(_text_key(case.summary))
        if same_title is None and same_summary is None:
            continue
        field = "title+summary" if same_title and same_summary else ("title" if same_title else "summary")
        yield (
            f"{path}: case {case.id}: field '{field}': the same item is in train as case {same_title or same_summary}; "
            "put every case of one item in one split"
        )


# --- tagging -----------------------------------------------------------------------------


def _tags_used(path: Path, cases: Sequence[TaggingCase]) -> Iterator[str]:
    used = {tag for case in cases for tag in case.tags}
    for tag in TAGS:
        if tag not in used:
            yield f"{path}: field 'tags': tag '{tag}' is used by no case; add a case that carries it"


def _tags_repeated(path: Path, cases: Sequence[TaggingCase]) -> Iterator[str]:
    for case in cases:
        for tag, count in Counter(case.tags).items():
            if count > 1:
                yield f"{path}: case {case.id}: field 'tags': '{tag}' is listed {count} times"


# --- reaction ----------------------------------------------------------------------------


def _family_prefix(family: str) -> str:
    return "fx-" if family == "fixture" else f"{family}-"


def _reaction_families(path: Path, cases: Sequence[ReactionCase]) -> Iterator[str]:
    """A reaction id names its family: fx-* for the fixture, <family>-* for the rest (the longest that fits)."""
    for case in cases:
        prefix = _family_prefix(case.family)
        named = max((p for p in map(_family_prefix, REACTION_FAMILIES) if case.id.startswith(p)), key=len, default=None)
        if named is None or not named.startswith(prefix):
            yield (
                f"{path}: case {case.id}: field 'id': does not start with {prefix!r} for family "
                f"'{case.family}'; rename the case or correct its family"
            )
        elif named != prefix:
            yield (
                f"{path}: case {case.id}: field 'id': starts with {named!r}, another family's prefix, but its "
                f"family is '{case.family}'; rename the case or correct its family"
            )


def _rule_families(case: ReactionCase) -> Iterator[tuple[str, str]]:
    """The families whose rules bind the case, as (family, how to name it): first the design note's family its
    id names (adjacent-*, bait-*, terse-*), whatever its family field says, then its family field."""
    named = next((family for family in _NOTE_PREFIXES if case.id.startswith(f"{family}-")), None)
    if named is not None:
        yield named, f"{named}-*"
    if case.family != named:
        yield case.family, case.family


def _families_in_dev(path: Path, cases: Sequence[ReactionCase]) -> Iterator[str]:
    for case in cases:
        broken = [shown for family, shown in _rule_families(case) if family in _DEV_ONLY_FAMILIES]
        if broken and case.split != "dev":
            yield f"{path}: case {case.id}: field 'split': is '{case.split}'; every {broken[0]} case belongs in dev"


def _family_verdicts(path: Path, cases: Sequence[ReactionCase]) -> Iterator[str]:
    """One line per case whose label breaks a family rule: the id prefix's first, else the family field's."""
    for case in cases:
        for family, shown in _rule_families(case):
            if _FAMILY_VERDICT.get(family, case.verdict) is not case.verdict:
                yield _verdict_problem(path, case, family, shown)
                break


def _verdict_problem(path: Path, case: ReactionCase, family: str, shown: str) -> str:
    wanted = _FAMILY_VERDICT[family]
    move = (
        f" (a one-line item labelled {str(case.verdict).lower()} belongs in '{_OTHER_FAMILY[wanted]}')"
        if family in _OTHER_FAMILY.values()
        else ""
    )
    return (
        f"{path}: case {case.id}: field 'verdict': is {str(case.verdict).lower()}, but {shown} cases are "
        f"{_FAMILY_WHY[family]}, labelled {str(wanted).lower()}; relabel it or {_fix(shown)}{move}"
    )


def _fix(shown: str) -> str:
    return f"rename it out of {shown} and change its family" if shown.endswith("-*") else "change its family"


def _crossover_per_persona(path: Path, cases: Sequence[ReactionCase]) -> Iterator[str]:
    """Crossover items are labelled per persona: each reader's crossover cases hold a yes and a no."""
    readers: dict[str, list[ReactionCase]] = {}
    for case in cases:
        if case.family == "crossover":
            readers.setdefault(case.persona, []).append(case)
    for group in readers.values():
        verdicts = {case.verdict for case in group}
        if len(verdicts) == 1:
            (only,) = verdicts
            yield (
                f"{path}: case {group[-1].id}: field 'verdict': every crossover case for this reader is "
                f"{str(only).lower()} ({len(group)} case(s)); crossover items are labelled per persona, so add one "
                f"this reader would {'skip' if only else 'read'}, or move the case to the family its label fits"
            )


# --- explanation -------------------------------------------------------------------------


def _mentions_match_refuse(path: Path, cases: Sequence[ExplanationCase]) -> Iterator[str]:
    for case in cases:
        if case.refuse and case.must_mention_any:
            yield f"{path}: case {case.id}: field 'must_mention_any': must be empty when refuse is true"
        if not case.refuse and not case.must_mention_any:
            yield (
                f"{path}: case {case.id}: field 'must_mention_any': is empty but refuse is false; "
                "list the topic words a correct explanation names"
            )


def _mentions_in_interests(path: Path, cases: Sequence[ExplanationCase]) -> Iterator[str]:
    """Each term names the shared topic as the reader does: it occurs in the interests (whole words, with the
    scorer's variant matching), or every word of it is another form of an interests word (calibration/calibrated).

    A word only the item uses would let an answer that echoes the title earn the topic credit.
    """
    for case in cases:
        for index, word in enumerate([] if case.refuse else case.must_mention_any):
            if not mentions_a_form(case.interests, word):
                yield (
                    f"{path}: case {case.id}: field 'must_mention_any.{index}': {word!r} does not occur in the "
                    "interests; list the shared topic in the reader's own words (or another form of them), "
                    "not the item's"
                )


def _refusals_in_dev(path: Path, cases: Sequence[ExplanationCase]) -> Iterator[str]:
    refusals = [case for case in cases if case.refuse]
    in_dev = len(in_split(refusals, "dev"))
    needed = math.ceil(len(refusals) / 2)
    if in_dev < needed:
        yield (
            f"{path}: field 'split': dev holds {in_dev} of {len(refusals)} refusals; "
            f"move {needed - in_dev} more refusal case(s) to dev"
        )
