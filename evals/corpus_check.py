"""Check the three task corpora and the flows fixture: ``python -m evals.corpus_check``.

Prints a small table per corpus (cases, class balance and sha256 per split), then
every problem found, one line each, naming the file, the case and the field, then
the growth targets not yet met (evals/corpus/targets.py: sizes, readers, families
and tags in dev) as their own labelled group; ``--skip-targets`` leaves that group out.
Exit status: 0 when clean, 1 when any problem (or unmet target) was found.

A little over 300 lines: the fixture's three strict models live here beside the
command that reads them; the rules themselves are in corpus_rules.py and
corpus_targets.py.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, StringConstraints

from attest.errors import run_main
from attest.options import OneLineErrorParser
from evals.corpus.cases import (
    SPLITS,
    AnyCase,
    CaseId,
    ExplanationCase,
    NonEmpty,
    ReactionCase,
    TaggingCase,
)
from evals.corpus.read import CorpusError, read_cases, split_sha256
from evals.corpus.rules import explanation_rules, in_split, reaction_rules, tagging_rules
from evals.corpus.targets import explanation_targets, reaction_targets, tagging_targets

_ROOT = Path(__file__).resolve().parent.parent

__all__ = [
    "FixtureItem",
    "FixtureLabel",
    "FixturePersona",
    "main",
]

C = TypeVar("C", bound=AnyCase)
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
    tagging: Path
    reaction: Path
    explanation: Path
    fixture: Path
    skip_targets: bool = False

    @property
    def items(self) -> Path:
        return self.fixture / "items.json"

    @property
    def personas(self) -> Path:
        return self.fixture / "personas.json"

    @property
    def labels(self) -> Path:
        return self.fixture / "labels.json"


@dataclass(frozen=True)
class _Fixture:
    items: dict[str, FixtureItem]
    personas: dict[str, FixturePersona]
    labels: dict[tuple[str, str], bool]


@dataclass
class _Report:
    tables: list[str]
    problems: list[str]
    targets: list[str]


def main(argv: list[str] | None = None) -> int:
    """Run every check; print tables and problems; return the exit status."""
    paths = _parse_args(argv)
    return run_main("corpus-check", lambda: _run(paths))


def _run(paths: _Paths) -> int:
    report = _check_all(paths)
    _print(report)
    return 1 if report.problems or report.targets else 0


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="python -m evals.corpus_check",
        description="Validate the three corpora and the flows fixture; one line per problem naming file, case and "
        "field. Exit 0 when clean, 1 when a problem is found.",
    )
    parser.add_argument("--tagging", type=Path, default=_ROOT / "evals/tagging_cases.json", help="tagging corpus")
    parser.add_argument("--reaction", type=Path, default=_ROOT / "evals/reaction_cases.json", help="reaction corpus")
    parser.add_argument(
        "--explanation", type=Path, default=_ROOT / "evals/explanation_cases.json", help="explanation corpus"
    )
    parser.add_argument(
        "--fixture",
        type=Path,
        default=_ROOT / "examples/flows/corpus",
        help="the flows fixture directory (items.json, personas.json, labels.json)",
    )
    parser.add_argument(
        "--skip-targets", action="store_true", help="leave out the growth targets (sizes, readers, coverage in dev)"
    )
    return parser


def _parse_args(argv: list[str] | None) -> _Paths:
    parser = _parser()
    args = parser.parse_args(argv)
    return _Paths(args.tagging, args.reaction, args.explanation, args.fixture, args.skip_targets)


def _print(report: _Report) -> None:
    for table in report.tables:
        print(table, end="\n\n")
    for problem in report.problems:
        print(problem)
    if report.targets:
        print(f"\ngrowth targets not met (issue 15; --skip-targets leaves them out): {len(report.targets)}")
        for target in report.targets:
            print(target)
    count = len(report.problems) + len(report.targets)
    of_them = f" ({len(report.targets)} of them growth targets)" if report.targets else ""
    print(f"corpus-check: {count} problem{'s' if count != 1 else ''}{of_them}" if count else "corpus-check: clean")


# --- running the checks ------------------------------------------------------------------


def _check_all(paths: _Paths) -> _Report:
    report = _Report(tables=[], problems=[], targets=[])
    fixture = _load_fixture(paths, report.problems)
    tagging = _load(paths.tagging, TaggingCase, report.problems)
    reaction = _load(paths.reaction, ReactionCase, report.problems)
    explanation = _load(paths.explanation, ExplanationCase, report.problems)
    if tagging is not None:
        report.tables.append(_table("tagging", paths.tagging, tagging, ["tags"], _tag_count))
        report.problems.extend(tagging_rules(paths.tagging, tagging))
        report.targets.extend([] if paths.skip_targets else tagging_targets(paths.tagging, tagging))
    if reaction is not None:
        report.tables.append(_table("reaction", paths.reaction, reaction, _bool_headers("verdict"), _verdicts))
        report.problems.extend(reaction_rules(paths.reaction, reaction))
        if fixture is not None:
            report.problems.extend(_check_fx(paths, reaction, fixture))
        report.targets.extend([] if paths.skip_targets else reaction_targets(paths.reaction, reaction))
    if explanation is not None:
        report.tables.append(_table("explanation", paths.explanation, explanation, _bool_headers("refuse"), _refusals))
        report.problems.extend(explanation_rules(paths.explanation, explanation))
        report.targets.extend([] if paths.skip_targets else explanation_targets(paths.explanation, explanation))
    return report


def _load(path: Path, model: type[M], problems: list[str]) -> list[M] | None:
    try:
        return read_cases(path, model)
    except CorpusError as exc:
        problems.extend(exc.problems)
        return None


def _load_fixture(paths: _Paths, problems: list[str]) -> _Fixture | None:
    items = _load(paths.items, FixtureItem, problems)
    personas = _load(paths.personas, FixturePersona, problems)
    labels = _load(paths.labels, FixtureLabel, problems)
    if items is None or personas is None or labels is None:
        return None
    problems.extend(_label_coverage(paths.labels, items, personas, labels))
    return _Fixture(
        items={item.id: item for item in items},
        personas={persona.id: persona for persona in personas},
        labels={(label.persona, label.item): label.would_read for label in labels},
    )


def _check_fx(paths: _Paths, cases: list[ReactionCase], fixture: _Fixture) -> Iterator[str]:
    expected = _fx_pairs(fixture)
    yield from _fx_ids_known(paths.reaction, cases, expected)
    yield from _fx_pairs_present(paths.reaction, cases, expected)
    for case in cases:
        if case.id in expected:
            yield from _fx_matches(paths, case, fixture, expected[case.id])


def _fx_pairs(fixture: _Fixture) -> dict[str, tuple[str, str]]:
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


def _fx_matches(paths: _Paths, case: ReactionCase, fixture: _Fixture, pair: tuple[str, str]) -> Iterator[str]:
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
            yield f"{paths.reaction}: case {case.id}: field '{field}': is {got!r} but {source} has {wanted!r}"
    label = fixture.labels.get(pair)
    if label is not None and case.verdict != label:
        yield (
            f"{paths.reaction}: case {case.id}: field 'verdict': is {str(case.verdict).lower()} "
            f"but {paths.labels} has would_read {str(label).lower()}"
        )
    if item.id not in case.note:
        yield f"{paths.reaction}: case {case.id}: field 'note': does not name fixture item {item.id}"


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


# --- the table ---------------------------------------------------------------------------


def _bool_headers(field: str) -> list[str]:
    return [f"{field}=true", f"{field}=false"]


def _tag_count(cases: Sequence[TaggingCase]) -> list[str]:
    return [str(len({tag for case in cases for tag in case.tags}))]


def _verdicts(cases: Sequence[ReactionCase]) -> list[str]:
    return _true_false([case.verdict for case in cases])


def _refusals(cases: Sequence[ExplanationCase]) -> list[str]:
    return _true_false([case.refuse for case in cases])


def _true_false(values: list[bool]) -> list[str]:
    return [str(values.count(True)), str(values.count(False))]


def _table(
    name: str,
    path: Path,
    cases: list[C],
    headers: list[str],
    classes: Callable[[Sequence[C]], list[str]],
) -> str:
    groups = [(split, in_split(cases, split)) for split in SPLITS] + [("all", cases)]
    rows = [["split", "cases", *headers, "sha256"]]
    rows += [[split, str(len(group)), *classes(group), split_sha256(group)[:12]] for split, group in groups]
    return f"{name}  {path}\n" + _aligned(rows)


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
