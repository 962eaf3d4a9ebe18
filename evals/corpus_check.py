"""Check every registered task's corpus and the flows fixture: ``python -m evals.corpus_check``.

Prints a small table per corpus (cases, class balance and sha256 per split), then
every problem found, one line each, naming the file, the case and the field, then
the growth targets not yet met (each task's `checks.targets`: sizes, readers,
families and tags in dev) as their own labelled group; ``--skip-targets`` leaves that
group out. What is checked is the task's (`Task.checks`, evals/engine/task.py); this
command knows no task by name: it has one ``--NAME PATH`` option per registered task.
Exit status: 0 when clean, 1 when any problem (or unmet target) was found.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attest.errors import run_main
from attest.options import OneLineErrorParser
from evals import tasks
from evals.corpus.cases import SPLITS
from evals.corpus.fixture import load_fixture
from evals.corpus.judgements import judgement_rules, load_judgements
from evals.corpus.read import CorpusError, read_cases, split_sha256
from evals.corpus.rules import in_split
from evals.engine.task import CheckContext, Task

__all__ = ["main"]

DEFAULT_FIXTURE = Path("examples/flows/corpus")


@dataclass(frozen=True)
class _Paths:
    corpora: dict[str, Path]  # task name -> corpus file
    fixture: Path
    skip_targets: bool = False
    judgements: dict[str, Path] = field(default_factory=dict)  # task name -> its judge's human-graded corpus


@dataclass
class _Report:
    tables: list[str]
    problems: list[str]
    targets: list[str]


def main(argv: Sequence[str] | None = None) -> int:
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
        description="Validate every task's corpus and the flows fixture; one line per problem naming file, case and "
        "field. Exit 0 when clean, 1 when a problem is found.",
    )
    for task in tasks.all_tasks():
        parser.add_argument(
            f"--{task.name}", type=Path, default=task.corpus, metavar="PATH", help=f"{task.name} corpus"
        )
        if task.judge is not None:
            parser.add_argument(
                f"--{task.name}-judgements",
                type=Path,
                default=task.judge.corpus,
                metavar="PATH",
                help=f"{task.name} judgement corpus (human grades a judge is measured against)",
            )
    parser.add_argument(
        "--fixture",
        type=Path,
        default=_default_fixture(),
        help="the flows fixture directory (items.json, personas.json, labels.json)",
    )
    parser.add_argument(
        "--skip-targets", action="store_true", help="leave out the growth targets (sizes, readers, coverage in dev)"
    )
    return parser


def _default_fixture() -> Path:
    """examples/flows/corpus of the checkout this module sits in, else of the working directory."""
    checkout = Path(__file__).resolve().parent.parent / DEFAULT_FIXTURE
    return checkout if checkout.is_dir() else DEFAULT_FIXTURE


def _parse_args(argv: Sequence[str] | None) -> _Paths:
    args = _parser().parse_args(argv)
    corpora = {task.name: getattr(args, task.name.replace("-", "_")) for task in tasks.all_tasks()}
    judged = [task.name for task in tasks.all_tasks() if task.judge is not None]
    judgements = {name: getattr(args, f"{name.replace('-', '_')}_judgements") for name in judged}
    return _Paths(corpora, args.fixture, args.skip_targets, judgements)


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
    load_fixture(paths.fixture, report.problems)
    context = CheckContext(fixture=paths.fixture)
    for name, path in paths.corpora.items():
        _check_task(tasks.get(name), path, context, paths.skip_targets, report)
    for name, path in paths.judgements.items():
        _check_judgements(name, path, report)
    return report


def _check_judgements(name: str, path: Path, report: _Report) -> None:
    """A judgement corpus: valid entries (grade, source, split, a note each), unique ids, both grades per split."""
    try:
        entries = load_judgements(path)
    except CorpusError as exc:
        report.problems.extend(exc.problems)
        return
    groups = [(split, [e for e in entries if e.split == split]) for split in SPLITS] + [("all", entries)]
    rows = [["split", "entries", "pass", "fail", "sha256"]]
    for split, group in groups:
        passed = sum(e.grade == "pass" for e in group)
        rows.append([split, str(len(group)), str(passed), str(len(group) - passed), split_sha256(group)[:12]])
    report.tables.append(f"{name} judgements  {path}\n" + _aligned(rows))
    report.problems.extend(judgement_rules(path, entries))


def _check_task(task: Task[Any], path: Path, context: CheckContext, skip_targets: bool, report: _Report) -> None:
    try:
        cases = read_cases(path, task.case_model)
    except CorpusError as exc:
        report.problems.extend(exc.problems)
        return
    report.tables.append(_table(task, path, cases))
    report.problems.extend(task.checks.rules(path, cases, context))
    if not skip_targets:
        report.targets.extend(task.checks.targets(path, cases))


# --- the table ---------------------------------------------------------------------------


def _table(task: Task[Any], path: Path, cases: list[Any]) -> str:
    groups = [(split, in_split(cases, split)) for split in SPLITS] + [("all", cases)]
    rows = [["split", "cases", *task.checks.headers, "sha256"]]
    rows += [[split, str(len(group)), *task.checks.classes(group), split_sha256(group)[:12]] for split, group in groups]
    return f"{task.name}  {path}\n" + _aligned(rows)


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
