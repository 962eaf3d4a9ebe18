"""The `stub` backend: a deterministic offline model that answers through the answerer it is given.

The backend knows no schema: each task brings its answerer (`attest.backends.types.StubAnswer`,
an eval task's `Task.stub_answer`). The app's three features have theirs here, keyword
overlap read from the labelled lines the renderers write (`Interests:`, `Title:`, `Summary:`)
in the last user message: `tags_answer`, `reaction_answer`, `explanation_answer`, and the
explanation judge's `judgement_answer`. They know
nothing a real model would not be told. The stub is the offline mode, the test double for
whole-pipeline tests, and the baseline a real model must beat.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from attest.backends.types import DEFAULT_OPTIONS, ChatResponse, Message, StubAnswer
from attest.errors import AttestError
from attest.vocab import REFUSAL

__all__ = ["StubBackend", "content_words", "explanation_answer", "judgement_answer", "reaction_answer", "tags_answer"]


class StubBackend:
    """A deterministic offline model: `answer` (the task's stub answerer) on each request."""

    kind = "stub"
    model = "stub-keyword-overlap-v1"

    def __init__(self, options: Mapping[str, Any] | None = None, answer: StubAnswer | None = None) -> None:
        self.options = dict(options or DEFAULT_OPTIONS)
        self.answer = answer

    def digest(self) -> str:
        return "stub-v2"  # v2: reasoning names the item's words as written, not their stems

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        """The keyword-overlap answer; deterministic, so `seed` changes nothing."""
        if self.answer is None:
            raise AttestError(
                f"the stub backend has no answerer for this request (schema {schema.get('title', '?')!r}): "
                "the task must supply one (Task.stub_answer), or run it on a model backend"
            )
        start = time.perf_counter()
        text = json.dumps(self.answer(messages, schema))
        return ChatResponse(text, time.perf_counter() - start, None, None, self.model, self.digest())

    def close(self) -> None:
        pass


_STOPWORDS = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "also",
        "among",
        "an",
        "and",
        "any",
        "are",
        "around",
        "because",
        "been",
        "before",
        "being",
        "between",
        "both",
        "but",
        "can",
        "could",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "every",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "here",
        "how",
        "into",
        "its",
        "itself",
        "just",
        "like",
        "more",
        "most",
        "much",
        "must",
        "new",
        "not",
        "now",
        "off",
        "once",
        "only",
        "other",
        "our",
        "out",
        "over",
        "own",
        "same",
        "should",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "too",
        "under",
        "until",
        "very",
        "was",
        "way",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "within",
        "would",
        "you",
        "your",
        "yours",
        "using",
        "used",
        "use",
        "based",
        "show",
        "shows",
        "shown",
        "work",
        "works",
        "read",
        "reads",
        "papers",
        "paper",
        "items",
        "item",
        "study",
        "studies",
        "results",
        "approach",
        "method",
        "methods",
        "first",
        "than",
        "into",
        "onto",
    ]
)
_WORD = re.compile(r"[a-z][a-z0-9-]{3,}")


@functools.lru_cache(maxsize=1 << 14)
def content_words(text: str) -> frozenset[str]:
    """Lower-case words of four or more letters that are not stop words, crudely stemmed.

    Cached: the stub answers each case once per sample, and the eval computes its answers again as a baseline.
    """
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


def _stem(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _as_written(text: str) -> dict[str, str]:
    """Each content word's stem -> the word as `text` first writes it, so answers print words, not stems."""
    found: dict[str, str] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _STOPWORDS:
            found.setdefault(_stem(word), word)
    return found


def _field(prompt: str, label: str) -> str:
    match = re.search(rf"^{label}:\s*(.*)$", prompt, flags=re.MULTILINE)
    return match.group(1) if match else ""


def _prompt(messages: Sequence[Message]) -> str:
    return messages[-1]["content"] if messages else ""


def _overlap(prompt: str) -> tuple[str, list[str]]:
    """The item's title, and the words (as the item writes them) it shares with the reader's interests."""
    title, summary = _field(prompt, "Title"), _field(prompt, "Summary")
    written = _as_written(f"{title} {summary}")
    shared = content_words(_field(prompt, "Interests")) & content_words(f"{title} {summary}")
    return title, sorted(written[stem] for stem in shared)


def tags_answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Tagging: up to three tags of the schema's vocabulary whose words the item uses."""
    prompt = _prompt(messages)
    return {"tags": _tags(content_words(f"{_field(prompt, 'Title')} {_field(prompt, 'Summary')}"), schema)}


def reaction_answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Reaction: yes when the item shares two or more words with the reader's interests."""
    return _reaction(*_overlap(_prompt(messages)))


def explanation_answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Explanation: one shared word in a sentence, or the refusal when nothing is shared."""
    return _explanation(_overlap(_prompt(messages))[1])


def judgement_answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The explanation judge: a refusal passes when nothing is shared, a sentence when it names a shared word."""
    prompt = _prompt(messages)
    return _judgement(_overlap(prompt)[1], _field(prompt, "Note"))


def _tags(item: frozenset[str], schema: Mapping[str, Any]) -> list[str]:
    vocabulary = schema.get("properties", {}).get("tags", {}).get("items", {}).get("enum", [])
    scored = sorted(
        ((len(content_words(t.replace("-", " ")) & item), t) for t in vocabulary), key=lambda p: (-p[0], p[1])
    )
    chosen = [tag for score, tag in scored if score > 0][:3]
    if not chosen and vocabulary:
        chosen = [str(vocabulary[0])]
    return chosen


def _reaction(title: str, overlap: list[str]) -> dict[str, Any]:
    verdict = len(overlap) >= 2
    confidence = min(5, 1 + len(overlap)) if verdict else max(1, 4 - len(overlap))
    shared = ", ".join(overlap[:3]) or "nothing"
    title = title if len(title) <= 120 else title[:117] + "..."
    return {
        "verdict": verdict,
        "confidence": confidence,
        "reasoning": f"'{title}' shares {shared} with the reader's interests.",
    }


def _judgement(overlap: list[str], note: str) -> dict[str, Any]:
    """The stub judge: a refusal passes when nothing is shared; a sentence passes when it names a shared word."""
    if REFUSAL.lower().rstrip(".") in note.lower():
        if overlap:
            return {"grade": "fail", "reason": f"refused, but the item shares {overlap[0]}"}
        return {"grade": "pass", "reason": "refused, and nothing is shared"}
    named = [w for w in overlap if content_words(w) & content_words(note)]
    if named:
        return {"grade": "pass", "reason": f"names the shared topic {named[0]}"}
    return {"grade": "fail", "reason": "names no topic the item shares with the interests"}


def _explanation(overlap: list[str]) -> dict[str, Any]:
    if not overlap:
        return {"text": REFUSAL}
    return {"text": f"You follow {overlap[0]}, and this item is about {overlap[0]}."}
