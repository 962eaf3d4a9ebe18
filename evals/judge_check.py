"""Measure a judge against the human grades: `python -m evals.judge_check TASK --judge-backend B --judge-model M`.

The judge grades every entry of the task's judgement corpus (its `JudgeSpec.corpus`,
e.g. evals/explanation_judgements.json), through the same cache and store as answers.
It prints Cohen's kappa against the human grades with its 95% interval (`kappa 0.83
[0.74, 0.91] n=60`), accuracy, the confusion matrix, one row per `source` (which
tricks fool this judge) and, with `--repeat K`, the judge's agreement with itself
(meaningful at `--judge-temperature` above 0). Kappa is computed on each entry's first
sample. The result (judge identity, judge prompt fingerprint, corpus sha256, kappa and
its interval) is recorded in the store, where `compare --metric judged` looks for it.
Exit 0 when kappa's lower bound is at least 0.6 (validated), 3 when it is not, 1 on an
error (no reachable judge: one line naming its URL), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import Backend
from attest.errors import AttestError, run_main
from attest.options import (
    OneLineErrorParser,
    add_transport_options,
    at_least,
)
from attest.text import printable
from evals import tasks
from evals.analysis.judged import Agreement, agreement, kappa
from evals.cli.options import add_judge_options, judge_settings, temperature_type
from evals.cli.runner import BackendFactory
from evals.corpus.judgements import JudgementEntry, judgements_sha256, load_judgements
from evals.corpus.paths import corpus_ref
from evals.engine.bounded import run_bounded
from evals.engine.chat import CachedChat
from evals.engine.judge import judge_fingerprint, parse_judgement
from evals.engine.task import JudgeSpec
from evals.render.judge_status import THRESHOLD as JUDGE_THRESHOLD
from evals.store.keys import Identity, request_key
from evals.store.models import JudgeRef
from evals.store.open import Opened, open_store
from evals.store.settings import add_store_arguments, resolve_cache_dir, resolve_store_url
from evals.store.validation import Validation, validation_id

__all__ = ["THRESHOLD", "main"]

THRESHOLD = JUDGE_THRESHOLD  # kappa's lower bound at or above this: the judge is validated
PROG = "python -m evals.judge_check"


@dataclasses.dataclass(frozen=True)
class _Graded:
    entry: JudgementEntry
    passed: list[bool]  # one per sample
    unparseable: int


def main(argv: Sequence[str] | None = None, *, backend_factory: BackendFactory = make_backend) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.task not in tasks.names():
        parser.error(f"unknown task {args.task!r} ({tasks.known()})")
    if not (args.judge_backend or os.environ.get("ATTEST_JUDGE_BACKEND", "").strip()):
        parser.error("no judge: give --judge-backend B --judge-model M (or ATTEST_JUDGE_BACKEND)")
    return run_main("judge_check", lambda: _run(args, backend_factory))


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog=PROG, description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("task", metavar="TASK", help="the task whose judge is checked, e.g. explanation")
    parser.add_argument("--split", choices=("train", "dev", "all"), default="dev", help="entries (default dev)")
    parser.add_argument("--repeat", type=at_least(1), default=1, help="judgements per entry (self-agreement)")
    parser.add_argument(
        "--judge-temperature", type=temperature_type, help="the judge's sampling temperature, 0-2 (default 0)"
    )
    parser.add_argument("--corpus", type=Path, help="the judgement corpus (default: the task's)")
    parser.add_argument("--concurrency", type=at_least(1), default=1, help="judge calls in flight (default 1)")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    add_store_arguments(parser)
    add_transport_options(parser)  # the judge is named by the --judge-* options
    add_judge_options(parser, what="the judge's backend (env ATTEST_JUDGE_BACKEND)")
    return parser


def _run(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    task = tasks.get(args.task)
    if task.judge is None:
        raise AttestError(f"the {task.name} task has no judge stage: nothing to check")
    settings = _settings(args)
    path = args.corpus or task.judge.corpus
    everything = load_judgements(path)
    entries = [e for e in everything if args.split in ("all", e.split)]
    if not entries:
        raise AttestError(f"{path}: no entries in split {args.split!r}")
    store = open_store(resolve_store_url(args.store, args.store_file), resolve_cache_dir(args.cache_dir))
    try:
        backend = backend_factory(dataclasses.replace(settings, stub_answer=task.judge.stub_answer))
        try:
            graded, ref = _grade(task.judge, entries, backend, store, args)
        finally:
            backend.close()
        found = agreement([g.entry.grade == "pass" for g in graded], [g.passed[0] for g in graded])
        record = _validation(task.name, ref, path, judgements_sha256(everything), args.split, found, graded)
        _print(ref, path, record, found, graded, args)
        with store.runs.writing(record.run_id):
            store.runs.save(record.run_id, "validation", record)
        print(f"recorded        {record.run_id} in {store.where}")
    finally:
        store.close()
    return 0 if record.validated else 3


def _settings(args: argparse.Namespace) -> Settings:
    settings = judge_settings(args)
    if settings is None:
        raise AttestError("no judge: give --judge-backend B --judge-model M (or ATTEST_JUDGE_BACKEND)")
    if args.judge_temperature is None:
        return settings
    return dataclasses.replace(settings, options={**settings.options, "temperature": args.judge_temperature})


def _grade(
    spec: JudgeSpec[Any], entries: Sequence[JudgementEntry], backend: Backend, store: Opened, args: argparse.Namespace
) -> tuple[list[_Graded], JudgeRef]:
    """Every entry judged `repeat` times through the cache; the judge's reference without samples."""
    chat = CachedChat.from_backend(backend, store.answers, Identity.of(backend))
    schema = spec.schema
    requests = [(e, spec.render_entry(e), i) for e in entries for i in range(args.repeat)]
    keys = [request_key(chat.identity, m, schema, i) for _, m, i in requests]
    texts: dict[str, str] = {}

    def ask(n: int) -> None:
        _, messages, sample = requests[n]
        texts[keys[n]] = chat.fetch(keys[n], messages, schema, sample)[0].text

    run_bounded(ask, range(len(requests)), args.concurrency)
    graded = []
    for start in range(0, len(requests), args.repeat):
        parsed = [parse_judgement(spec, texts[k]) for k in keys[start : start + args.repeat]]
        graded.append(_Graded(requests[start][0], [p[0] for p in parsed], sum(p[2] for p in parsed)))
    identity = chat.identity
    ref = JudgeRef(
        backend=identity.kind,
        model=identity.model,
        digest=identity.digest,
        options=dict(identity.options),
        prompt_fingerprint=judge_fingerprint(spec),
    )
    return graded, ref


def _validation(
    task: str, ref: JudgeRef, path: Path, sha: str, split: str, found: Agreement, graded: Sequence[_Graded]
) -> Validation:
    judge = ref.identity()
    return Validation(
        run_id=validation_id(judge, sha),
        judge=judge,
        task=task,
        corpus=corpus_ref(path),
        corpus_sha256=sha,
        split=split,
        n=found.n,
        kappa=max(-1.0, min(1.0, found.kappa)),
        low=max(-1.0, min(1.0, found.interval.low)),
        high=max(-1.0, min(1.0, found.interval.high)),
        accuracy=found.accuracy,
        unparseable=sum(g.unparseable for g in graded),
        threshold=THRESHOLD,
        validated=found.interval.low >= THRESHOLD,
        checked_at=time.time(),
    )


def _print(
    ref: JudgeRef,
    path: Path,
    record: Validation,
    found: Agreement,
    graded: Sequence[_Graded],
    args: argparse.Namespace,
) -> None:
    print(
        f"judge_check {record.task}: judge {printable(ref.backend)} {printable(ref.model)} "
        f"(judge prompt {ref.prompt_fingerprint[:12]}), {printable(record.corpus)} "
        f"(sha256 {record.corpus_sha256[:12]}), split {record.split}"
    )
    print(found.kappa_text())
    right = round(found.accuracy * found.n)
    print(f"accuracy        {found.accuracy:.2f} ({right} of {found.n} entries graded as the human graded them)")
    c = found.confusion
    print("confusion       judge pass  judge fail")
    print(f"  human pass    {c['human pass / judge pass']:>10}  {c['human pass / judge fail']:>10}")
    print(f"  human fail    {c['human fail / judge pass']:>10}  {c['human fail / judge fail']:>10}")
    for line in _source_lines(graded):
        print(line)
    if record.unparseable:
        print(f'unparseable     {record.unparseable} judgement(s) counted as fail ("unparseable judgement")')
    if args.repeat > 1:
        print(_self_agreement(graded, ref))
    verdict = "validated" if record.validated else "NOT validated"
    print(f"{verdict:<15} kappa's lower bound {record.low:.2f} {'>=' if record.validated else '<'} {THRESHOLD}")


def _source_lines(graded: Sequence[_Graded]) -> list[str]:
    """Per source: entries, accuracy, and how often the judge and the human said pass (which tricks fool it)."""
    rows = ["by source                  n  accuracy  judge pass  human pass"]
    counts = Counter(g.entry.source for g in graded)
    for source in sorted(counts):
        mine = [g for g in graded if g.entry.source == source]
        right = sum((g.entry.grade == "pass") == g.passed[0] for g in mine)
        judge = sum(g.passed[0] for g in mine)
        human = sum(g.entry.grade == "pass" for g in mine)
        rows.append(f"  {source:<22} {len(mine):>3}  {right / len(mine):>8.2f}  {judge:>10}  {human:>10}")
    return rows


def _self_agreement(graded: Sequence[_Graded], ref: JudgeRef) -> str:
    """How often the judge's repeats agree: entries graded alike in every sample, and kappa of sample 0 with 1."""
    alike = sum(len(set(g.passed)) == 1 for g in graded)
    first, second = [g.passed[0] for g in graded], [g.passed[1] for g in graded]
    temperature = ref.options.get("temperature", 0)
    note = "" if isinstance(temperature, int | float) and temperature > 0 else " (temperature 0: repeats are alike)"
    return (
        f"self-agreement  {alike} of {len(graded)} entries graded alike in all {len(graded[0].passed)} samples; "
        f"kappa sample 1 vs 2 {kappa(first, second):.2f}{note}"
    )


if __name__ == "__main__":
    sys.exit(main())
