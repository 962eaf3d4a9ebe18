"""The `stub` backend: a deterministic offline model, keyword overlap for all three task schemas.

It reads the labelled lines the renderers write (`Interests:`, `Title:`, `Summary:`)
from the last user message. It knows nothing a real model would not be told. It is
the offline mode, the test double for whole-pipeline tests, and the baseline a real
model must beat.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from attest.backends.types import DEFAULT_OPTIONS, ChatResponse, Message
from attest.vocab import REFUSAL

__all__ = ["StubBackend", "answer", "content_words"]


class StubBackend:
    """A deterministic offline model: keyword overlap between the reader and the item."""

    kind = "stub"
    model = "stub-keyword-overlap-v1"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or DEFAULT_OPTIONS)

    def digest(self) -> str:
        return "stub-v2"  # v2: reasoning names the item's words as written, not their stems

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        """The keyword-overlap answer; deterministic, so `seed` changes nothing."""
        start = time.perf_counter()
        text = json.dumps(answer(str(schema.get("title", "")), messages[-1]["content"] if messages else "", schema))
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


def content_words(text: str) -> set[str]:
    """Lower-case words of four or more letters that are not stop words, crudely stemmed."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


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


def answer(task: str, prompt: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The stub's JSON answer for the schema titled `task`, given the rendered user prompt."""
    title, summary = _field(prompt, "Title"), _field(prompt, "Summary")
    item = content_words(f"{title} {summary}")
    if task == "ItemTags":
        return {"tags": _tags(item, schema)}
    written = _as_written(f"{title} {summary}")
    overlap = sorted(written[stem] for stem in content_words(_field(prompt, "Interests")) & item)
    if task == "Reaction":
        return _reaction(title, overlap)
    if task == "Judgement":
        return _judgement(overlap, _field(prompt, "Note"))
    return _explanation(overlap)


def _tags(item: set[str], schema: Mapping[str, Any]) -> list[str]:
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
