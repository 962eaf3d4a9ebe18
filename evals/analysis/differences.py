"""What differs between two runs, and whether their difference in score can be credited to one change.

Pure: the caller hands over each run's provenance (`pairing.scores_of` builds it from
the manifest) and the system prompts it sent. A comparison opens with these
differences, in full. Three kinds of change move a score: the prompt, the model
(backend, model, digest) and the options. When more than one differs, the pair is
confounded: a gain cannot be credited to any one of them, so the verdict is withheld
(inconclusive) unless the caller accepts a mixed change. A prompt change measured on
the stub backend is withheld too: the stub answers without reading the prompt.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["KINDS", "STUB", "Change", "Changed", "what_changed", "withheld"]

STUB = "stub"
# the keys whose change is each kind of change; the prompt's fingerprint covers every request, so it
# counts only when the runs asked about the same cases (same split and corpus)
KINDS: Mapping[str, tuple[str, ...]] = {
    "prompt": ("system_prompts", "tag_prompt_sha256", "prompt_fingerprint"),
    "model": ("backend", "model", "digest"),
    "options": ("options",),
}
_SHOWN_FIRST = (
    "prompt_fingerprint", "system_prompts", "tag_prompt_sha256", "backend", "model", "digest", "options", "label",
    "scorer_fingerprint", "git_commit", "repeat", "split", "corpus", "corpus_sha256", "attest_version",
)  # fmt: skip
_SAME_CASES = ("split", "corpus_sha256")


@dataclass(frozen=True)
class Change:
    """A provenance key whose value differs between the runs (None where a run lacks it)."""

    key: str
    base: object
    cand: object


@dataclass(frozen=True)
class Changed:
    """Every differing provenance key (prompt first, then the model, options, label, scorer, commit, ...)."""

    changes: tuple[Change, ...]
    kinds: tuple[str, ...]  # which of KINDS changed, in KINDS' order
    prompt_diff: tuple[str, ...]  # a unified line diff of the system prompts, baseline to candidate


def what_changed(
    base: Mapping[str, object], cand: Mapping[str, object], base_prompts: Sequence[str], cand_prompts: Sequence[str]
) -> Changed:
    """What differs between two runs' provenance, in the order a reader wants it, with a prompt diff."""
    keys = [k for k in _SHOWN_FIRST if k in base or k in cand] + sorted((set(base) | set(cand)) - set(_SHOWN_FIRST))
    changes = tuple(Change(k, base.get(k), cand.get(k)) for k in keys if base.get(k) != cand.get(k))
    differing = {c.key for c in changes}
    same_cases = not differing & set(_SAME_CASES)
    kinds = tuple(
        kind
        for kind, of in KINDS.items()
        if any(k in differing and (k != "prompt_fingerprint" or same_cases) for k in of)
    )
    return Changed(changes, kinds, _prompt_diff(base_prompts, cand_prompts))


def _prompt_diff(base: Sequence[str], cand: Sequence[str]) -> tuple[str, ...]:
    if list(base) == list(cand):
        return ()
    a = "\n\n".join(base).splitlines()
    b = "\n\n".join(cand).splitlines()
    diff = difflib.unified_diff(a, b, "baseline system prompt", "candidate system prompt", n=1, lineterm="")
    return tuple(diff)


def withheld(
    changed: Changed, base: Mapping[str, object], cand: Mapping[str, object], *, accept_mixed: bool = False
) -> tuple[str, tuple[str, ...]]:
    """(why the verdict cannot credit the change, or ""; the kinds that confound the pair, or ())."""
    kinds = changed.kinds
    confounded = kinds if len(kinds) > 1 else ()
    if "prompt" in kinds and base.get("backend") == STUB and cand.get("backend") == STUB:
        why = (
            "the stub backend does not read the prompt, so this result cannot credit the prompt change: "
            "measure it on a model (a backend other than stub)"
        )
        return why, confounded
    if confounded and not accept_mixed:
        both = "both differ" if len(kinds) == 2 else "all differ"
        why = (
            f"confounded: {_and(kinds)} {both} between the runs, so the difference cannot be credited to one "
            "of them; change one at a time, or pass --accept-mixed to decide anyway"
        )
        return why, confounded
    return "", confounded


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
