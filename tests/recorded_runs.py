"""Recorded tagging runs whose per-case scores a test controls.

    corpus = write_corpus(tmp_path / "tagging.json", 20)
    base = record(cache_dir, corpus, right={"id-1", "id-2"}, model="base")

`record` runs the one loop (`evals.engine.execute.execute`) with a fake model that answers a
case's gold tags (F1 = 1) when its id is in `right` and a tag outside the gold set
(F1 = 0) otherwise, through a real `ResponseCache` and `DirStore` under `cache_dir`.
Each run's `model` is part of its cache keys, so two runs with different models never
share answers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from attest.backends.types import ChatResponse, Message
from attest.features import TAGS
from attest.render import item_block
from evals import tagging_eval
from evals.corpus.cases import TaggingCase
from evals.engine.chat import CachedChat
from evals.engine.execute import RunSpec, execute
from evals.engine.pipeline import load_cases
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from evals.store.records import DirStore

__all__ = ["corpus_ids", "record", "write_corpus"]


def write_corpus(path: Path, n: int, *, train: int = 0) -> Path:
    """The first `n` + `train` cases of the tagging corpus: `n` on the dev split, then `train` on train."""
    cases: list[dict[str, Any]] = json.loads(tagging_eval.CORPUS.read_text(encoding="utf-8"))[: n + train]
    for i, case in enumerate(cases):
        case["split"] = "dev" if i < n else "train"
    path.write_text(json.dumps(cases, indent=1), encoding="utf-8")
    return path


def corpus_ids(path: Path, split: str = "dev") -> list[str]:
    return [c.id for c in tagging_eval.load_cases(path, split)]


def _answer(case: TaggingCase, right: bool, wrong_text: str | None) -> str:
    if right:
        return json.dumps({"tags": list(case.tags)})
    return wrong_text if wrong_text is not None else json.dumps({"tags": [next(t for t in TAGS if t not in case.tags)]})


def record(
    cache_dir: Path,
    corpus: Path,
    right: Collection[str],
    *,
    model: str,
    split: str = "dev",
    wrong_text: str | None = None,
    backend: str = "fake",
    options: Mapping[str, Any] | None = None,
    answer: Callable[[TaggingCase], str | None] | None = None,
    **task_changes: Any,
) -> str:
    """Record one tagging run over `corpus` (one split, or "all") and return its id.

    `wrong_text`, when given, is the answer to every case not in `right` (unparseable
    text scores 0 too), for answers long or hostile enough to test what is printed.
    `answer(case)`, when it returns text, answers that case instead. `backend` and
    `options` are the run's recorded identity; `task_changes` replace fields of the
    tagging task (its `render`, its `score_one`), as a code change would.
    """
    task = dataclasses.replace(tagging_eval.TASK, corpus=corpus, **task_changes)
    corpus_cases = load_cases(task, corpus)
    cases = [c for c in corpus_cases if split in ("all", c.split)]
    by_item = {item_block(c.title, c.summary): c for c in corpus_cases}

    def ask(messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        text = messages[-1]["content"]
        case = by_item.get(text) or next(c for block, c in by_item.items() if text.startswith(block))
        given = answer(case) if answer is not None else None
        chosen = given if given is not None else _answer(case, case.id in right, wrong_text)
        return ChatResponse(chosen, 0.01, None, None, model, "d")

    cache = ResponseCache(cache_dir)
    try:
        chat = CachedChat(ask, cache, Identity(backend, model, "d", dict(options or {})))
        spec = RunSpec(task, cases, corpus_cases, corpus, split)
        return execute(spec, chat, DirStore(cache_dir / "runs"), record_git=False).run_id
    finally:
        cache.close()
