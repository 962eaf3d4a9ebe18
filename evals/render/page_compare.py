"""What a comparison's page shows: plain data for the template, built from a `Comparison`, the
two runs' system prompts and every shared case's two answers.

Case rows come regressed first (largest loss first), then improved, then unchanged; each
with a word-level diff of the two answers (difflib). "What changed", the line diff of the
system prompts and the confounding warning (more than one of prompt, model, options
changed) are the `Comparison`'s own (evals/analysis/differences.py), shown as they are.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from evals.analysis.comparison import Comparison
from evals.render import plots
from evals.render.comparison_words import (
    advice,
    floor_text,
    holm_note,
    key_words,
    pct,
    reason,
    tail_text,
    value_text,
)
from evals.render.page_run import short_hash

__all__ = ["ComparePage", "PairRow", "compare_page_data", "diff_lines", "word_diff"]

_WORDS = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class PairRow:
    case: str
    family: str
    change: str  # regressed, improved, unchanged
    base: float
    cand: float
    base_answer: str
    cand_answer: str
    diff: list[tuple[str, str]]  # (op, text): " " same, "-" only in the baseline, "+" only in the candidate
    title: str = ""  # the item's title (or first text input) from the corpus, when known

    @property
    def delta(self) -> float:
        return self.cand - self.base


@dataclass
class ComparePage:
    x: Comparison
    reason: str
    notes: list[str]
    rows: list[PairRow]
    families: list[str]
    changed: list[tuple[str, tuple[str, str], tuple[str, str]]]  # (field, (shown, full) per run); full "" if shown
    prompt_diff: list[tuple[str, str]]  # (kind, line): kind "-", "+", "@" or " "
    mixed: list[str]  # the kinds of thing that changed (prompt, model, options), when more than one did
    plots: dict[str, str] = field(default_factory=dict)
    judges: list[tuple[str, str]] = field(default_factory=list)  # ("baseline", its judge and validation), ...
    tokens: list[str] = field(default_factory=list)  # both runs' tokens and cost, as compare prints them


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """`a` and `b` as runs of words kept, removed ("-") and added ("+")."""
    x, y = _WORDS.findall(a), _WORDS.findall(b)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op == "equal":
            out.append((" ", "".join(x[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", "".join(x[i1:i2])))
        if j2 > j1:
            out.append(("+", "".join(y[j1:j2])))
    return out


def diff_lines(diff: Sequence[str]) -> list[tuple[str, str]]:
    """A unified diff's lines, each with its kind ("-", "+", "@" or " "), without the file header."""
    return [(line[:1] if line[:1] in "-+@" else " ", line) for line in diff if not line.startswith(("---", "+++"))]


def compare_page_data(
    x: Comparison,
    answers: tuple[Mapping[str, str], Mapping[str, str]],
    family: Mapping[str, str],
    scores: Mapping[str, float],
    titles: Mapping[str, str] | None = None,
) -> ComparePage:
    """The page's data; `answers` maps case id to each run's answer text (sample 0), `family` case to
    family, `scores` case to its (baseline) mean score, for the unchanged cases."""
    b, c = answers
    rows = [
        _pair(ch.case_id, ch.family, kind, ch.base, ch.cand, b, c)
        for kind, chs in (("regressed", x.regressed), ("improved", x.improved))
        for ch in chs
    ]
    rows += [
        _pair(case, family.get(case, "(none)"), "unchanged", scores.get(case, 0.0), scores.get(case, 0.0), b, c)
        for case in x.unchanged
    ]
    named = titles or {}
    rows = [replace(r, title=named.get(r.case, "")) for r in rows]
    page = ComparePage(
        x=x,
        reason=reason(x),
        notes=[n for n in (holm_note(x), f"tail guard: {tail_text(x)}", *x.notes, _floor_note(x), advice(x)) if n],
        rows=rows,
        families=sorted({r.family for r in rows}),
        changed=[
            (key_words(ch.key), short_hash(value_text(ch.base)), short_hash(value_text(ch.cand)))
            for ch in x.what_changed
        ],
        prompt_diff=diff_lines(x.prompt_diff),
        mixed=list(x.confounded),
    )
    page.plots = _plots(x)
    return page


def _floor_note(x: Comparison) -> str:
    return f"floor (the best cheap strategy): {floor_text(x)}" if floor_text(x) else ""


def _pair(
    case: str, fam: str, kind: str, base: float, cand: float, b: Mapping[str, str], c: Mapping[str, str]
) -> PairRow:
    x, y = b.get(case, "(not in the cache)"), c.get(case, "(not in the cache)")
    diff = word_diff(x, y) if kind != "unchanged" or x != y else [(" ", x)]
    return PairRow(case, fam, kind, base, cand, x, y, diff)


def _plots(x: Comparison) -> dict[str, str]:
    p = x.paired
    lines = [(0.0, "no difference")] + ([(x.margin, f"margin {x.margin:g}")] if x.margin > 0 else [])
    level = pct(p.interval.level)
    span = min(1.0, max(0.1, abs(p.interval.low), abs(p.interval.high), x.margin) * 1.25)
    head = [plots.Point("candidate - baseline", p.mean_diff, p.interval.low, p.interval.high)]
    out = {
        "verdict": plots.forest(
            head, xlabel=f"difference in mean score ({level} interval)", lines=lines, xlim=(-span, span), width=3.9
        )
    }
    rows = [
        plots.Point(f.family, f.difference.mean, f.difference.interval.low, f.difference.interval.high)
        for f in x.families
    ]
    if rows:
        out["families"] = plots.forest(
            rows, xlabel="difference by family (95% intervals)", lines=lines, xlim=(-1, 1), width=4.1
        )
    return out


def overview(pages: Sequence[ComparePage]) -> str:
    """With --all: each task's difference at its Holm-adjusted level, against 0 and the margin."""
    x0 = pages[0].x
    lines = [(0.0, "no difference")] + ([(x0.margin, f"margin {x0.margin:g}")] if x0.margin > 0 else [])
    rows = [
        plots.Point(
            f"{p.x.task} ({pct(p.x.paired.interval.level)})",
            p.x.paired.mean_diff,
            p.x.paired.interval.low,
            p.x.paired.interval.high,
        )
        for p in pages
    ]
    return plots.forest(rows, xlabel="difference in mean score (Holm-adjusted intervals)", lines=lines, xlim=(-1, 1))
