"""Degenerate answers named in words: the same answer for every case, one value of a field for
every case, most answers unparseable, most answers the stub's.

Pure and task-blind: it reads the answers' raw texts, parses each as a JSON object and
looks at every top-level field generically, so a run's report can say "every answer has
verdict = true" without knowing what a verdict is. A run of fewer than `MIN_ANSWERS`
answers is too small to call anything degenerate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MIN_ANSWERS", "canonical", "degenerate", "parse_answer"]

MIN_ANSWERS = 5
MOST = 0.5  # "most answers": more than this share
SHOWN = 60  # characters of a value quoted in a warning


def parse_answer(text: str | None) -> dict[str, Any] | None:
    """The answer as a JSON object, or None when it is missing or not one."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def canonical(value: Any) -> str:
    """A value as canonical JSON: two answers that differ only in key order or spacing are equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def degenerate(texts: Sequence[tuple[str, str | None]], stub: Mapping[str, str] | None = None) -> list[str]:
    """Plain-words warnings about `texts` ((case id, raw answer text) per sample; None: no answer).

    `stub` maps case id to the stub backend's answer on that case; pass None when the
    run is the stub's own (or the stub cannot be asked).
    """
    answered = [(case, text) for case, text in texts if text is not None]
    if len(answered) < MIN_ANSWERS:
        return []
    parsed = [(case, parse_answer(text)) for case, text in answered]
    valid = [(case, p) for case, p in parsed if p is not None]
    warnings = _unparseable(len(answered), len(valid))
    if len(valid) >= MIN_ANSWERS:
        warnings += _constant(valid)
    if stub:
        warnings += _like_stub(valid, len(answered), stub)
    return warnings


def _unparseable(total: int, valid: int) -> list[str]:
    bad = total - valid
    if bad <= MOST * total:
        return []
    return [f"{bad} of {total} answers ({bad / total:.0%}) are not a JSON object: most answers are unparseable"]


def _constant(valid: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    n = len(valid)
    answers = {canonical(p) for _, p in valid}
    if len(answers) == 1:
        return [f"every answer ({n} of {n}) is the same: {_cut(next(iter(answers)))}"]
    out = []
    fields = sorted(set.intersection(*(set(p) for _, p in valid)))
    for name in fields:
        values = Counter(canonical(p[name]) for _, p in valid)
        if len(values) == 1:
            out.append(
                f"every answer has {name} = {_cut(next(iter(values)))} ({n} of {n}): the answers ignore the input"
            )
    return out


def _like_stub(valid: Sequence[tuple[str, dict[str, Any]]], total: int, stub: Mapping[str, str]) -> list[str]:
    theirs = {case: parse_answer(text) for case, text in stub.items()}
    same = sum(1 for case, p in valid if theirs.get(case) is not None and canonical(theirs[case]) == canonical(p))
    if same <= MOST * total:
        return []
    return [f"{same} of {total} answers ({same / total:.0%}) are identical to the stub backend's (keyword overlap)"]


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
