"""The flows fixture (examples/flows/corpus/: items, personas, labels) and the reaction corpus's `fx-*`
cases built from it: the strict models of its three files, its own label coverage, and the check that
every fixture persona x item pair has its case with the fixture's inputs and label."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, StringConstraints

from evals.corpus.cases import CaseId, NonEmpty, ReactionCase
from evals.corpus.read import CorpusError, read_cases

__all__ = ["Fixture", "FixtureItem", "FixtureLabel", "FixturePersona", "fixture_problems", "load_fixture"]

M = TypeVar("M", bound=BaseModel)

ItemId = Annotated[str, StringConstraints(pattern=r"^item-[0-9]{2}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FixtureItem(_Strict):
    """One entry of examples/flows/corpus/items.json."""

    id: ItemId
    title: NonEmpty
    summary: NonEmpty


class FixturePersona(_Strict):
    """One entry of examples/flows/corpus/personas.json."""

    id: CaseId
    name: NonEmpty
    persona: NonEmpty
    interests: NonEmpty


class FixtureLabel(_Strict):
    """One entry of examples/flows/corpus/labels.json."""

    persona: CaseId
    item: ItemId
    would_read: bool


@dataclass(frozen=True)
class _Paths:
    directory: Path

    @property
    def items(self) -> Path:
        return self.directory / "items.json"

    @property
    def personas(self) -> Path:
        return self.directory / "personas.json"

    @property
    def labels(self) -> Path:
        return self.directory / "labels.json"


@dataclass(frozen=True)
class Fixture:
    paths: _Paths
    items: dict[str, FixtureItem]
    personas: dict[str, FixturePersona]
    labels: dict[tuple[str, str], bool]


def load_fixture(directory: Path, problems: list[str]) -> Fixture | None:
    """The fixture in `directory`, its problems appended to `problems`; None when a file does not load."""
    paths = _Paths(directory)
    items = _load(paths.items, FixtureItem, problems)
    personas = _load(paths.personas, FixturePersona, problems)
    labels = _load(paths.labels, FixtureLabel, problems)
    if items is None or personas is None or labels is None:
        return None
    problems.extend(_label_coverage(paths.labels, items, personas, labels))
    return Fixture(
        paths=paths,
        items={item.id: item for item in items},
        personas={persona.id: persona for persona in personas},
        labels={(label.persona, label.item): label.would_read for label in labels},
    )


def fixture_problems(path: Path, cases: Sequence[ReactionCase], directory: Path) -> Iterator[str]:
    """The `fx-*` cases of the reaction corpus at `path` against the fixture in `directory`: every persona x
    item pair present, with the fixture's inputs and label. A fixture that does not load is reported by
    `load_fixture` (corpus-check runs it on its own), not here."""
    fixture = load_fixture(directory, [])
    if fixture is not None:
        yield from _check_fx(path, list(cases), fixture)


def _load(path: Path, model: type[M], problems: list[str]) -> list[M] | None:
    try:
        return read_cases(path, model)
    except CorpusError as exc:
        problems.extend(exc.problems)
        return None


def _check_fx(path: Path, cases: list[ReactionCase], fixture: Fixture) -> Iterator[str]:
    expected = _fx_pairs(fixture)
    yield from _fx_ids_known(path, cases, expected)
    yield from _fx_pairs_present(path, cases, expected)
    for case in cases:
        if case.id in expected:
            yield from _fx_matches(path, case, fixture, expected[case.id])


def _fx_pairs(fixture: Fixture) -> dict[str, tuple[str, str]]:
    return {f"fx-{persona}-{item}": (persona, item) for persona in fixture.personas for item in fixture.items}


def _fx_ids_known(path: Path, cases: Sequence[ReactionCase], expected: dict[str, tuple[str, str]]) -> Iterator[str]:
    for case in cases:
        if case.id.startswith("fx-") and case.id not in expected:
            yield (
                f"{path}: case {case.id}: field 'id': names no fixture persona and item; "
                "fx ids are fx-<persona id>-<item id>"
            )


def _fx_pairs_present(path: Path, cases: Sequence[ReactionCase], expected: dict[str, tuple[str, str]]) -> Iterator[str]:
    ids = {case.id for case in cases}
    for case_id in expected:
        if case_id not in ids:
            yield f"{path}: case {case_id}: missing; every fixture persona x item pair needs its fx case"


def _fx_matches(path: Path, case: ReactionCase, fixture: Fixture, pair: tuple[str, str]) -> Iterator[str]:
    paths = fixture.paths
    persona, item = fixture.personas[pair[0]], fixture.items[pair[1]]
    sources = (
        ("persona", persona.persona, f"{paths.personas} {persona.id}"),
        ("interests", persona.interests, f"{paths.personas} {persona.id}"),
        ("title", item.title, f"{paths.items} {item.id}"),
        ("summary", item.summary, f"{paths.items} {item.id}"),
    )
    for field, wanted, source in sources:
        got = getattr(case, field)
        if got != wanted:
            yield f"{path}: case {case.id}: field '{field}': is {got!r} but {source} has {wanted!r}"
    label = fixture.labels.get(pair)
    if label is not None and case.verdict != label:
        yield (
            f"{path}: case {case.id}: field 'verdict': is {str(case.verdict).lower()} "
            f"but {paths.labels} has would_read {str(label).lower()}"
        )
    if item.id not in case.note:
        yield f"{path}: case {case.id}: field 'note': does not name fixture item {item.id}"


def _label_coverage(
    path: Path,
    items: Sequence[FixtureItem],
    personas: Sequence[FixturePersona],
    labels: Sequence[FixtureLabel],
) -> Iterator[str]:
    wanted = {(persona.id, item.id) for persona in personas for item in items}
    counts = Counter((label.persona, label.item) for label in labels)
    for pair, count in counts.items():
        if pair not in wanted:
            yield f"{path}: label {pair[0]}/{pair[1]}: names an unknown persona or item"
        elif count > 1:
            yield f"{path}: label {pair[0]}/{pair[1]}: labelled {count} times; keep one"
    for persona, item in sorted(wanted - counts.keys()):
        yield f"{path}: label {persona}/{item}: missing; label every item x persona pair once"
