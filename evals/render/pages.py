"""The pages from the records: a run's page (`runs show --html`, every eval run's report.html) and a
comparison's page (`compare --html`). Reads the run store, the answer cache and the corpus
file a run recorded; never a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attest.errors import AttestError
from attest.files import read_text_bounded
from evals.analysis.comparison import Comparison, RunScores
from evals.analysis.degenerate import degenerate
from evals.analysis.pairing import load_run
from evals.analysis.tokens import PriceList
from evals.corpus import paths
from evals.render import html
from evals.render.comparison_tokens import token_lines
from evals.render.judge_status import judge_line
from evals.render.page_compare import compare_page_data, overview
from evals.render.page_run import META, answer_texts, run_page_data
from evals.store.models import Manifest, Prompts, Report
from evals.store.protocols import Answers, Runs

__all__ = ["comparison_html", "corpus_cases", "prompts_of", "run_html", "stored_run_html"]

_MAX_CORPUS_BYTES = 5 << 20  # evals.corpus.read's cap: a recorded path to a FIFO or /dev/zero is refused, not read
StubTexts = Callable[[Manifest, Mapping[str, Mapping[str, Any]]], Mapping[str, str] | None]


def corpus_cases(manifest: Manifest, *, paths_local: bool = True) -> dict[str, dict[str, Any]]:
    """case id -> the raw case from the corpus file the run recorded ({} when it cannot be read); for a run
    from a shared store (`paths_local=False`), from its task's corpus in this checkout instead."""
    from evals import tasks

    try:
        path = paths.resolve_corpus(manifest.provenance.corpus) if paths_local else tasks.get(manifest.task).corpus
        data = json.loads(read_text_bounded(path, _MAX_CORPUS_BYTES))
    except (AttestError, ValueError):
        return {}
    wanted = set(manifest.case_sha256) or {s.case for s in manifest.samples}
    if not isinstance(data, list):
        return {}
    return {str(c["id"]): c for c in data if isinstance(c, dict) and c.get("id") in wanted}


def prompts_of(store: Runs, run_id: str) -> dict[str, str]:
    return store.load(run_id, "prompts", Prompts).system if store.exists(run_id, "prompts") else {}


def run_html(
    manifest: Manifest,
    report: Report | None,
    prompts: Mapping[str, str],
    texts: Mapping[tuple[str, int], str | None],
    cases: Mapping[str, Mapping[str, Any]],
    warnings: Sequence[str],
    prices: PriceList | None = None,
    judged_by: str = "",
) -> str:
    """A run's page from what the run recorded; `judged_by` is `judge_line`'s for a judged run."""
    return html.render_run(run_page_data(manifest, report, prompts, texts, cases, warnings, prices, judged_by))


def stored_run_html(store: Runs, cache: Answers, run_id: str, stub: StubTexts | None = None) -> str:
    """A recorded run's page; `stub` gives the stub's answers per case (None: not checked against the stub)."""
    manifest = store.manifest(run_id)
    report = store.report(run_id)
    texts = answer_texts(cache, manifest.samples)
    cases = corpus_cases(manifest, paths_local=store.paths_local)
    theirs = stub(manifest, cases) if stub is not None and manifest.backend != "stub" else None
    warnings = degenerate([(case, text) for (case, _), text in texts.items()], theirs)
    line = judge_line(store, manifest)
    return run_html(manifest, report, prompts_of(store, run_id), texts, cases, warnings, judged_by=line)


def comparison_html(
    found: Sequence[Comparison],
    runs: Sequence[tuple[RunScores, RunScores]],
    store: Runs,
    cache: Answers | None,
    prices: PriceList | None = None,
) -> str:
    """A comparison's page: one section per comparison (with --all, one per task, and the Holm overview)."""
    pages = []
    for x, (b, c) in zip(found, runs, strict=True):
        answers = (_first_answers(store, cache, x.base_run), _first_answers(store, cache, x.cand_run))
        family = {**c.family, **b.family}
        scores = {case: sum(v) / len(v) for case, v in b.samples.items() if v}
        page = compare_page_data(x, answers, family, scores, _titles(store, x.cand_run))
        page.tokens = token_lines(load_run(store, x.base_run), load_run(store, x.cand_run), prices)
        page.judges = _judges(store, x)
        pages.append(page)
    return html.render_compare(pages, overview(pages) if len(pages) > 1 else None)


def _judges(store: Runs, x: Comparison) -> list[tuple[str, str]]:
    """Each run's judge and its validation, when either run was judged."""
    lines = [
        (side, judge_line(store, store.manifest(run)))
        for side, run in (("baseline", x.base_run), ("candidate", x.cand_run))
    ]
    return [(side, line or "not judged") for side, line in lines] if any(line for _, line in lines) else []


def _titles(store: Runs, run_id: str) -> dict[str, str]:
    """case id -> its item's title (or first text input) from the corpus the run recorded."""
    titles = {}
    for case_id, case in corpus_cases(store.manifest(run_id)).items():
        text = case.get("title") or next((v for k, v in case.items() if k not in META and isinstance(v, str)), "")
        titles[case_id] = str(text)
    return titles


def _first_answers(store: Runs, cache: Answers | None, run_id: str) -> dict[str, str]:
    if cache is None:
        return {}
    manifest = store.manifest(run_id)
    texts = answer_texts(cache, [s for s in manifest.samples if s.sample == 0])
    return {case: text for (case, _), text in texts.items() if text is not None}
