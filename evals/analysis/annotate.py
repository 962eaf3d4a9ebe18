"""The figures a run's report carries beside its score, computed from the run, never from a store's kind.

`annotate` puts the uncertainty block (evals/analysis/uncertainty.py, baselines.py) into the
run's `Report`; `degenerate_warnings` says, in words, which answers are degenerate (constant,
or the stub's own). The block costs a stub run over the cases and importing scipy (about a
second on a small machine; fig5's warm rerun, benchmarks/RESULTS.md, is within its 2% of
cold only without that second), so `annotate` first looks for it in the latest reports of
the same task. A block is reused only when every input it is computed from is the same, each
by value (`inputs_sha256`, kept in the block): the cases with their labels and families,
every sample's score and verdict, the repeat count, the interval method, the baselines'
answers on these cases (the stub's, and each cheap strategy's), the scorer and prompt
fingerprints, numpy's and scipy's versions, and `BLOCK_VERSION`, the version of the block's
own computation (raise it with any change to what the block computes). Reading is all this
module does with a store; the command line saves the report.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
from collections.abc import Mapping, Sequence
from typing import Any

from evals.analysis import baselines
from evals.analysis.degenerate import degenerate
from evals.analysis.stub_texts import stub_texts
from evals.engine.execute import RunOutcome
from evals.engine.task import Strategy
from evals.store.protocols import Runs
from evals.store.records import RunError

__all__ = ["BLOCK_VERSION", "StubAnswers", "annotate", "degenerate_warnings", "inputs_sha256", "stub_answers"]

BLOCK_VERSION = 2  # the uncertainty block's computation: raise it when what the block computes changes
REUSE_LOOKBACK = 3  # how many of the task's latest reports to look in for a block to reuse


StubAnswers = Mapping[str, str] | None  # case id -> the stub's answer text (None: the task has no stub)


def stub_answers(outcome: RunOutcome) -> StubAnswers:
    """The stub's answers on the run's cases (a stub run in memory: a quarter second for 144 cases, so a
    command computes them once for both `annotate` and `degenerate_warnings`)."""
    return stub_texts(outcome.spec.task, outcome.spec.cases) if outcome.spec is not None else None


def annotate(outcome: RunOutcome, store: Runs | None = None, *, stub: StubAnswers = None) -> RunOutcome:
    """The outcome with its report's uncertainty block filled in; unchanged if it does not know its cases.

    With a `store`, a block computed from the same inputs by one of the task's latest
    runs is reused instead of computed again; `stub` is `stub_answers(outcome)` if already computed.
    """
    if outcome.spec is None:
        return outcome
    options = _strategies(outcome)
    key = inputs_sha256(outcome, stub=stub, options=options)
    block = _reusable(store, outcome, key) if store is not None else None
    if block is None:
        block = {**_compute(outcome, options), "inputs_sha256": key}
    return dataclasses.replace(outcome, report=outcome.report.replace(uncertainty=block))


def _strategies(outcome: RunOutcome) -> list[Strategy[Any]]:
    """The task's cheap strategies on the run's cases, fitted once for both the key and the block."""
    spec = outcome.spec
    return spec.task.strategies(spec.cases) if spec is not None and spec.cases else []


def _compute(outcome: RunOutcome, options: Sequence[Strategy[Any]]) -> dict[str, Any]:
    from evals.analysis import uncertainty  # deferred: it imports scipy, which a reused block does not need

    spec = outcome.spec
    assert spec is not None
    found = baselines.baselines(spec.task, spec.cases, options)
    return uncertainty.block(spec.task, spec.cases, outcome.result.results, found, spec.repeat)


def inputs_sha256(
    outcome: RunOutcome, *, stub: StubAnswers = None, options: Sequence[Strategy[Any]] | None = None
) -> str:
    """sha256 of every input the uncertainty block is computed from, by value (see the module docstring);
    `stub` and `options` are the stub's answers and the fitted strategies if already computed."""
    spec = outcome.spec
    if spec is None:
        raise ValueError("an outcome without its RunSpec has no uncertainty inputs")
    stub = stub if stub is not None else stub_answers(outcome)
    options = options if options is not None else _strategies(outcome)
    task, cases = spec.task, spec.cases
    inputs = {
        "block": BLOCK_VERSION,
        "task": task.name,
        "interval": task.interval,
        "repeat": spec.repeat,
        "versions": [importlib.metadata.version(p) for p in ("numpy", "scipy")],
        "prompt": outcome.manifest.provenance.prompt_fingerprint,
        "scorer": outcome.manifest.provenance.scorer_fingerprint,
        "cases": [c.model_dump(mode="json", exclude={"note"}) for c in cases],
        "results": [[r.id, r.sample, r.score, r.details.get("verdict")] for r in outcome.result.results],
        "stub": stub,
        "strategies": [[s.describe, [s.answer(c) for c in cases]] for s in options],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _reusable(store: Runs, outcome: RunOutcome, key: str) -> dict[str, Any] | None:
    mark = f"-{outcome.manifest.task}-"
    recent = [r for r in store.run_ids() if mark in r and r != outcome.run_id][-REUSE_LOOKBACK:]
    for run_id in reversed(recent):
        try:
            report = store.report(run_id)
        except RunError:
            continue  # unreadable: `runs list` says so; it is no source of figures
        if report is not None and report.uncertainty.get("inputs_sha256") == key:
            return dict(report.uncertainty)
    return None


def degenerate_warnings(
    outcome: RunOutcome, texts: Mapping[tuple[str, int], str | None], *, stub: StubAnswers = None
) -> list[str]:
    """Degenerate answers in words (evals/analysis/degenerate.py), checked against the stub's answers
    on the same cases unless the run is the stub's own."""
    if outcome.manifest.backend == "stub":
        return degenerate([(case, text) for (case, _), text in texts.items()], None)
    stub = stub if stub is not None else stub_answers(outcome)
    return degenerate([(case, text) for (case, _), text in texts.items()], stub)
