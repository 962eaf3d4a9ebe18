"""The strongest cheap strategies known for each task, fitted on the train split: the honest floor.

Each reads only the surface of a case (word overlap between its texts, and the train
cases' labels) and answers in the task's schema. A parameter (a count, a threshold) is
chosen on the train cases by the task's own scorer, never on the cases it is scored on;
a case is never its own neighbour. `tagging_eval`, `explanation_eval` and
`reaction_eval` add these to their `strategies`, and `evals.analysis.baselines` lets
every strategy compete.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from attest.explain import REFUSAL
from evals.corpus.cases import ExplanationCase, ReactionCase, TaggingCase
from evals.corpus.words import canonical, content_words, words
from evals.engine.task import Scored, Strategy

__all__ = ["nearest_train_tags", "shared_interests", "word_overlap_verdict"]

Score = Callable[[Any, str], Scored]
ECHOED = 13  # the audit's word list: "You: " and this many interest words
MAX_SHARED = 12  # "You follow" and at most this many words: under the prompt's fifteen
COUNTS = range(1, 7)  # explanation: shared interest words needed before answering rather than refusing
THRESHOLDS = range(0, 9)  # reaction: shared content words needed for "read"


def _item(case: TaggingCase | ExplanationCase | ReactionCase) -> frozenset[str]:
    return content_words(f"{case.title} {case.summary}")


def nearest_train_tags(train: Sequence[TaggingCase]) -> Strategy[TaggingCase]:
    """The gold tags of the train case whose title and summary share the most content words with the case's."""
    indexed = [(c.id, _item(c), list(c.tags)) for c in train]

    def answer(case: TaggingCase) -> str:
        mine = _item(case)
        others = [(len(mine & seen), tags) for cid, seen, tags in indexed if cid != case.id]
        best = max(others, key=lambda pair: pair[0], default=(0, ["statistics"]))  # max keeps the first of equals
        return json.dumps({"tags": best[1]})

    describe = f"the gold tags of the nearest of {len(train)} train cases (word overlap, title and summary)"
    return Strategy(describe, answer)


def _shared(case: ExplanationCase) -> list[str]:
    """The interest words (as the reader wrote them) the item shares, in order, each once."""
    return _shared_words(case.interests, _item(case))


def _shared_words(interests: str, item: frozenset[str]) -> list[str]:
    """The words of `interests` whose canonical form is among `item`'s content words, in order, each once."""
    seen: set[str] = set()
    out: list[str] = []
    for word in words(interests):
        key = canonical(word)
        if key in item and key in content_words(word) and key not in seen:
            seen.add(key)
            out.append(word)
    return out


def _you_follow(shared: list[str]) -> str:
    named = shared[:MAX_SHARED]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"You follow {listed}."


def _interest_list(case: ExplanationCase) -> str:
    return "You: " + " ".join(case.interests.split()[:ECHOED])


def _explain(k: int, text: Callable[[ExplanationCase], str] | None = None) -> Callable[[ExplanationCase], str]:
    def answer(case: ExplanationCase) -> str:
        shared = _shared(case)
        said = text(case) if text is not None else _you_follow(shared) if shared else REFUSAL
        return json.dumps({"text": said if len(shared) >= k else REFUSAL})

    return answer


def shared_interests(train: Sequence[ExplanationCase], score: Score) -> list[Strategy[ExplanationCase]]:
    """ "You follow <the interest words the item shares>.", and the reader's first ECHOED interest words as
    "You: ...", each refusing when fewer than k interest words are in the item (k fitted on train)."""
    k = _fit(COUNTS, _explain, train, score)
    listed = _fit(COUNTS, lambda n: _explain(n, _interest_list), train, score)
    return [
        Strategy(
            f'"You follow <the interest words the item shares>.", refusing when fewer than {k} are shared '
            f"(k chosen on {len(train)} train cases)",
            _explain(k),
        ),
        Strategy(
            f'"You: " and the first {ECHOED} words of the interests, refusing when fewer than {listed} interest '
            f"words are in the item (chosen on {len(train)} train cases)",
            _explain(listed, _interest_list),
        ),
    ]


def _react(threshold: int) -> Callable[[ReactionCase], str]:
    def answer(case: ReactionCase) -> str:
        shared = _shared_words(case.interests, _item(case))
        verdict = len(shared) >= threshold
        named = shared[:3] or _shared_words(case.interests, content_words(case.interests))[:1]
        said = "meets the interest in" if shared else "misses the interest in"
        reasoning = f"{case.title}: {said} {' and '.join(named)}"
        return json.dumps({"verdict": verdict, "confidence": 3, "reasoning": reasoning})

    return answer


def word_overlap_verdict(train: Sequence[ReactionCase], score: Score) -> Strategy[ReactionCase]:
    """Read when interests and item share at least t content words (t fitted on train), the title as the reason."""
    t = _fit(THRESHOLDS, _react, train, score)
    return Strategy(
        f"verdict read when interests and item share at least {t} content word(s) (chosen on {len(train)} train "
        "cases), the item's title and the shared interest words as the reasoning",
        _react(t),
    )


def _fit(values: Sequence[int], make: Callable[[int], Callable[[Any], str]], train: Sequence[Any], score: Score) -> int:
    """The value whose strategy scores best on `train` (the first of equals; the first value without train cases)."""

    def total(value: int) -> float:
        answer = make(value)
        return sum(float(score(case, answer(case))["score"]) for case in train)

    return max(values, key=total) if train else values[0]
