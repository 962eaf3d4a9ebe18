"""What differs between two runs, and whether their difference in score can be credited to one change.

Pure: the caller hands over each run's provenance (`pairing.scores_of` builds it from
the manifest) and the system prompts it sent. A comparison opens with these
differences, in full. Three kinds of change move a score: the prompt, the model
(backend, model, digest and a backend's own server settings) and the options. When more
than one differs, the pair is confounded: a gain cannot be credited to any one of them,
so the verdict is withheld (inconclusive) unless the caller accepts a mixed change. A
prompt change measured on the stub backend is withheld too: the stub answers without
reading the prompt.

The prompt is compared per case: the rendered request (messages and schema) of every
case both runs hold, so a corpus change cannot hide a template change, and a prompt
file whose rendered requests are identical is no prompt change. A run recorded before
requests were recorded per case falls back to the whole-run fingerprint, which says
something only when both runs asked about the same cases; otherwise the verdict is
withheld, saying so.

What scores an answer (`SCORE_INPUTS`: the scorer; a judge plugs in beside it) is never
credited: when it differs, the caller re-scores both runs with one (compare does, from
cached answers) and passes the line saying so; a pair still scored differently is withheld.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["KINDS", "REQUESTS", "SCORE_INPUTS", "STUB", "Change", "Changed", "what_changed", "withheld"]

STUB = "stub"
# the keys whose change is each kind of change; the prompt's fingerprint covers every request, so it
# counts only when the runs asked about the same cases (same split and corpus)
KINDS: Mapping[str, tuple[str, ...]] = {
    "prompt": ("prompt_fingerprint",),  # with per-case requests recorded by both runs: those instead
    "model": ("backend", "model", "digest", "server"),
    "options": ("options",),
}
# what turns an answer into a score: never credited, made equal (re-scored) or withheld
SCORE_INPUTS: Mapping[str, tuple[str, ...]] = {"scorer": ("scorer_fingerprint",)}
REQUESTS = "rendered requests"  # the Change naming the shared cases whose rendered request differs
_SHOWN_FIRST = (
    "prompt_fingerprint", "system_prompts", "tag_prompt_sha256", "backend", "model", "digest", "server", "options",
    "label",
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
    unequal: tuple[str, ...] = ()  # which of SCORE_INPUTS differ (the scores are not comparable as they are)
    prompt_unknown: str = ""  # why a prompt change can be neither found nor ruled out, or ""


def what_changed(
    base: Mapping[str, object],
    cand: Mapping[str, object],
    base_prompts: Sequence[str],
    cand_prompts: Sequence[str],
    requests: tuple[Mapping[str, str], Mapping[str, str]] = ({}, {}),
    shared: Sequence[str] = (),
) -> Changed:
    """What differs between two runs' provenance, in the order a reader wants it, with a prompt diff.

    `requests` are each run's per-case request hashes, `shared` the cases compared.
    """
    keys = [k for k in _SHOWN_FIRST if k in base or k in cand] + sorted((set(base) | set(cand)) - set(_SHOWN_FIRST))
    changes = [Change(k, base.get(k), cand.get(k)) for k in keys if base.get(k) != cand.get(k)]
    differing = {c.key for c in changes}
    kinds = [kind for kind, of in KINDS.items() if kind != "prompt" and differing & set(of)]
    prompt, unknown, shown = _prompt_change(differing, requests, shared)
    if shown is not None:
        changes.insert(0, shown)
    unequal = tuple(kind for kind, of in SCORE_INPUTS.items() if differing & set(of))
    kinds = (["prompt"] if prompt else []) + kinds
    return Changed(tuple(changes), tuple(kinds), _prompt_diff(base_prompts, cand_prompts), unequal, unknown)


def _prompt_change(
    differing: set[str],
    requests: tuple[Mapping[str, str], Mapping[str, str]],
    shared: Sequence[str],
) -> tuple[bool, str, Change | None]:
    """(the prompt changed, why that cannot be told or "", the Change naming the cases whose request differs)."""
    b, c = requests
    if b and c:
        cases = [case for case in shared if case in b and case in c]
        moved = [case for case in cases if b[case] != c[case]]
        if not moved:
            return False, "", None
        named = ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")
        return True, "", Change(REQUESTS, f"{len(cases)} shared case(s)", f"{len(moved)} differ ({named})")
    if not differing & set(_SAME_CASES):
        return "prompt_fingerprint" in differing, "", None
    lacking = " and ".join(name for name, r in (("the baseline", b), ("the candidate", c)) if not r)
    why = (
        f"the runs asked about different cases and {lacking} recorded no per-case requests (made by an older "
        "version), so a prompt change can be neither found nor ruled out: re-run it to record them"
    )
    return False, why, None


def _prompt_diff(base: Sequence[str], cand: Sequence[str]) -> tuple[str, ...]:
    if list(base) == list(cand):
        return ()
    a = "\n\n".join(base).splitlines()
    b = "\n\n".join(cand).splitlines()
    diff = difflib.unified_diff(a, b, "baseline system prompt", "candidate system prompt", n=1, lineterm="")
    return tuple(diff)


def withheld(
    changed: Changed,
    base: Mapping[str, object],
    cand: Mapping[str, object],
    *,
    accept_mixed: bool = False,
    notes: Sequence[str] = (),
) -> tuple[str, tuple[str, ...]]:
    """(why the verdict cannot credit the change, or ""; the kinds that confound the pair, or ()).

    `notes` say what was done about a differing score input (or why it could not be), for the reason.
    """
    kinds = changed.kinds
    confounded = kinds if len(kinds) > 1 else ()
    if changed.unequal:
        return _unequal(changed.unequal, notes), confounded
    if changed.prompt_unknown:
        return changed.prompt_unknown, confounded
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


def _unequal(inputs: Sequence[str], notes: Sequence[str]) -> str:
    why = f"the runs were scored by different {_and([f'{k}s' for k in inputs])}, so the difference may be theirs"
    done = "; ".join(notes) or (
        "re-score both runs with one scorer (python -m evals.compare does so from their cached answers)"
    )
    return f"{why}: {done}"


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
