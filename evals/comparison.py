"""Did the change help? Two runs of one task compared case by case, decided, and rendered.

The pure core behind `python -m evals.compare` and the reports: the caller reads the
run records and hands over one `RunScores` per run; nothing here reads or writes a
file. `compare` pairs the runs by case id over the cases both hold, averages repeats
within each case, and computes the paired statistics of `evals.stats`, the verdict
against a margin fixed in advance, the changed cases, per-family differences, the
minimum detectable effect and what changed between the runs. `compare_all` decides
several tasks at once under Holm's correction. `to_text`, `to_markdown` and
`to_json` render a comparison.

Longer than the house's 300 lines: the three renderers read every field of a
`Comparison`, and keeping them beside it keeps one change in one file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from attest.errors import AttestError
from evals.stats import (
    LEVEL,
    Detectable,
    Estimate,
    Paired,
    Verdict,
    detectable_from,
    difference,
    holm,
    holm_levels,
    mean_estimate,
    paired,
    verdict,
)

__all__ = [
    "EXIT_CODES",
    "MARKDOWN_LIMIT",
    "CaseChange",
    "Change",
    "Comparison",
    "ComparisonError",
    "FamilyRow",
    "RunScores",
    "compare",
    "compare_all",
    "exit_code",
    "to_json",
    "to_markdown",
    "to_text",
]

EXIT_CODES: Mapping[Verdict, int] = {"ship": 0, "inconclusive": 3, "regress": 4}
MARKDOWN_LIMIT = 60_000  # a PR comment's size; GitHub refuses 65,536 and more
NO_FAMILY = "(none)"


class ComparisonError(AttestError, ValueError):
    """Two runs that cannot be compared; the message names the runs or the case and what to do."""


@dataclass(frozen=True)
class RunScores:
    """What `compare` needs of one run: its scores by case and sample, and what to show and check."""

    task: str
    run_id: str
    samples: Mapping[str, Sequence[float]]  # case id -> the score of each sample (repeat), each in [0, 1]
    family: Mapping[str, str] = field(default_factory=dict)  # case id -> family (bait, adjacent, ...)
    answers: Mapping[str, str] = field(default_factory=dict)  # case id -> the answer text, for display
    labels: Mapping[str, object] = field(default_factory=dict)  # case id -> its expectation, must agree
    provenance: Mapping[str, object] = field(default_factory=dict)  # prompt fingerprint, model, digest, ...


@dataclass(frozen=True)
class CaseChange:
    """One case whose mean score differs between the runs."""

    case_id: str
    family: str
    base: float
    cand: float
    base_answer: str
    cand_answer: str

    @property
    def delta(self) -> float:
        return self.cand - self.base


@dataclass(frozen=True)
class FamilyRow:
    """The paired difference over one family's cases."""

    family: str
    difference: Estimate


@dataclass(frozen=True)
class Change:
    """A provenance key whose value differs between the runs (None where a run lacks it)."""

    key: str
    base: object
    cand: object


@dataclass(frozen=True)
class Comparison:
    """Everything `compare` found; renderers and the CLI read it, nothing recomputes it."""

    task: str
    base_run: str
    cand_run: str
    base: Estimate
    cand: Estimate
    paired: Paired
    margin: float
    verdict: Verdict
    regressed: tuple[CaseChange, ...]  # largest loss first
    improved: tuple[CaseChange, ...]  # largest gain first
    unchanged: tuple[str, ...]
    families: tuple[FamilyRow, ...]
    detectable: Detectable
    what_changed: tuple[Change, ...]
    only_base: tuple[str, ...]
    only_cand: tuple[str, ...]
    show: int
    holm_p: float | None = None  # set by `compare_all`: the Holm-adjusted p-value
    family_size: int = 1  # how many comparisons were decided together

    @property
    def n(self) -> int:
        return self.paired.n


def compare(base: RunScores, cand: RunScores, *, margin: float = 0.0, show: int = 5) -> Comparison:
    """Pair two runs of one task by case id, average repeats within a case, and decide."""
    if margin < 0 or show < 0:
        raise ComparisonError(f"margin and show must be >= 0, got margin {margin}, show {show}")
    shared = _shared_cases(base, cand)
    b = [_case_mean(base, case) for case in shared]
    c = [_case_mean(cand, case) for case in shared]
    result = paired(b, c)
    changes = [
        CaseChange(case, _family(base, cand, case), x, y, base.answers.get(case, ""), cand.answers.get(case, ""))
        for case, x, y in zip(shared, b, c, strict=True)
        if abs(y - x) > 1e-12
    ]
    return Comparison(
        task=base.task,
        base_run=base.run_id,
        cand_run=cand.run_id,
        base=mean_estimate(b),
        cand=mean_estimate(c),
        paired=result,
        margin=margin,
        verdict=verdict(result, margin),
        regressed=tuple(sorted((x for x in changes if x.delta < 0), key=lambda x: (x.delta, x.case_id))),
        improved=tuple(sorted((x for x in changes if x.delta > 0), key=lambda x: (-x.delta, x.case_id))),
        unchanged=tuple(case for case, x, y in zip(shared, b, c, strict=True) if abs(y - x) <= 1e-12),
        families=_families(base, cand, shared, b, c),
        detectable=detectable_from(b, c, margin=margin),
        what_changed=_what_changed(base.provenance, cand.provenance),
        only_base=tuple(sorted(set(base.samples) - set(cand.samples))),
        only_cand=tuple(sorted(set(cand.samples) - set(base.samples))),
        show=show,
    )


def _shared_cases(base: RunScores, cand: RunScores) -> list[str]:
    if base.task != cand.task:
        raise ComparisonError(
            f"run {base.run_id} is a {base.task} run and run {cand.run_id} a {cand.task} run; compare runs of one task"
        )
    shared = sorted(set(base.samples) & set(cand.samples))
    if not shared:
        raise ComparisonError(f"runs {base.run_id} and {cand.run_id} share no case id; compare runs of one corpus")
    for case in shared:
        if case in base.labels and case in cand.labels and base.labels[case] != cand.labels[case]:
            raise ComparisonError(
                f"case {case}: its label is {_cut(repr(base.labels[case]), 60)} in run {base.run_id} "
                f"but {_cut(repr(cand.labels[case]), 60)} "
                f"in run {cand.run_id}; the corpus changed between them, so re-run the baseline on today's corpus"
            )
    return shared


def _case_mean(run: RunScores, case: str) -> float:
    scores = list(run.samples[case])
    if not scores or not all(0.0 <= s <= 1.0 for s in scores):  # also refuses NaN
        raise ComparisonError(
            f"case {case} of run {run.run_id}: scores {scores[:5]} are not a non-empty list in [0, 1]"
        )
    return sum(scores) / len(scores)


def _family(base: RunScores, cand: RunScores, case: str) -> str:
    return base.family.get(case) or cand.family.get(case) or NO_FAMILY


def _families(
    base: RunScores, cand: RunScores, shared: list[str], b: list[float], c: list[float]
) -> tuple[FamilyRow, ...]:
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for case, x, y in zip(shared, b, c, strict=True):
        xs, ys = groups.setdefault(_family(base, cand, case), ([], []))
        xs.append(x)
        ys.append(y)
    return tuple(FamilyRow(name, difference(xs, ys)) for name, (xs, ys) in sorted(groups.items()))


def _what_changed(base: Mapping[str, object], cand: Mapping[str, object]) -> tuple[Change, ...]:
    keys = sorted(set(base) | set(cand))
    return tuple(Change(k, base.get(k), cand.get(k)) for k in keys if base.get(k) != cand.get(k))


def compare_all(
    pairs: Sequence[tuple[RunScores, RunScores]], *, margin: float = 0.0, show: int = 5, alpha: float = 1 - LEVEL
) -> tuple[Comparison, ...]:
    """Compare several (baseline, candidate) pairs, one verdict each, under Holm's correction.

    Each comparison's interval is put at the level `stats.holm_levels` gives it (its
    Holm step), so at most `alpha` of such families hold any wrong ship or regress, and
    each printed interval agrees with its verdict. The p-values are Holm-adjusted too
    (`holm_p`). Per-family rows stay at 95%: they describe, they do not decide.
    """
    comparisons = [compare(b, c, margin=margin, show=show) for b, c in pairs]
    levels = holm_levels([x.paired.interval_pvalue for x in comparisons], alpha)
    adjusted = holm([x.paired.p_value for x in comparisons])
    out = []
    for x, level, p in zip(comparisons, levels, adjusted, strict=True):
        at = x.paired.at_level(level)
        out.append(replace(x, paired=at, verdict=verdict(at, margin), holm_p=p, family_size=len(comparisons)))
    return tuple(out)


def exit_code(verdicts: Iterable[Verdict]) -> int:
    """The exit code for one or more verdicts: 4 if any regressed, else 3 if any is inconclusive, else 0."""
    return max((EXIT_CODES[v] for v in verdicts), default=EXIT_CODES["inconclusive"])


# ----- rendering -------------------------------------------------------------------------------------------

_TEXT_LIST = 20  # case ids listed per line in text before "and N more"
_SHORT = 120  # provenance values and one-line answers are cut here in text
_ANSWER_MD = 1_500


def _cut(value: object, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pct(level: float) -> str:
    return f"{level * 100:.3g}%"


def _only(x: Comparison) -> str:
    return f"{len(x.only_base)} case(s) only in the baseline, {len(x.only_cand)} only in the candidate"


def _score(x: float) -> str:
    return f"{x:.2f}"


def _reason(x: Comparison) -> str:
    low, high = x.paired.interval.low, x.paired.interval.high
    if x.verdict == "ship":
        return f"the whole interval is above the margin {x.margin:.2f}"
    if x.verdict == "regress":
        return "the whole interval is below 0"
    if low > 0:
        return f"the interval is above 0 but not wholly above the margin {x.margin:.2f}"
    held = "both losses and gains" if high > 0 and low < 0 else "0"
    return f"the interval holds {held}"


def _advice(x: Comparison) -> str:
    if x.verdict != "inconclusive":
        return ""
    mde = x.detectable.effect
    reach = "" if math.isinf(mde) else f" a true difference under {mde:.2f} usually reads inconclusive at n={x.n};"
    return f"to decide:{reach} add cases, add repeats, or try a bigger change"


def _holm_note(x: Comparison) -> str:
    if x.holm_p is None:
        return ""
    level = _pct(x.paired.interval.level)
    return f"Holm over {x.family_size} comparisons: interval at {level}, adjusted p = {x.holm_p:.2g}"


def _ids(changes: Sequence[CaseChange], limit: int, quote: str = "") -> str:
    shown = [f"{quote}{_cut(c.case_id, 60)}{quote} ({_score(c.base)} -> {_score(c.cand)})" for c in changes[:limit]]
    more = f", and {len(changes) - limit} more" if len(changes) > limit else ""
    return ", ".join(shown) + more


def _side_by_side(x: Comparison) -> list[CaseChange]:
    return [*x.regressed, *x.improved][: x.show]


def to_text(x: Comparison) -> str:
    """The comparison for a terminal: figures, verdict, changed cases, families, provenance, answers."""
    p = x.paired
    lines = [f"{x.task}: candidate {x.cand_run} vs baseline {x.base_run}, {x.n} cases paired"]
    if x.only_base or x.only_cand:
        lines.append(f"  not compared: {_only(x)}")
    lines += [
        f"baseline    {x.base.format()}",
        f"candidate   {x.cand.format()}",
        f"difference  {p.difference.format(signed=True)}  ({_pct(p.interval.level)} interval); "
        f"p = {p.p_value:.2g} ({p.test})",
        f"verdict     {x.verdict.upper()}: {_reason(x)}",
    ]
    lines += [f"            {note}" for note in (_holm_note(x), _advice(x)) if note]
    lines.append(f"changes     {p.improved} improved, {p.regressed} regressed, {p.unchanged} unchanged")
    if x.regressed:
        lines.append(f"regressed   {_ids(x.regressed, _TEXT_LIST)}")
    if x.improved:
        lines.append(f"improved    {_ids(x.improved, _TEXT_LIST)}")
    lines.append("by family")
    lines += [f"  {row.family:<14} {row.difference.format(signed=True)}" for row in x.families]
    lines.append(f"detectable  {x.detectable.format()}")
    lines.append("changed     " + ("; ".join(_change_text(c) for c in x.what_changed) or "nothing recorded differs"))
    shown = _side_by_side(x)
    if shown:
        lines.append(f"side by side ({len(shown)} of {len(x.regressed) + len(x.improved)} changed cases, losses first)")
        for c in shown:
            lines += [
                f"  {c.case_id} [{c.family}] {_score(c.base)} -> {_score(c.cand)}",
                f"    baseline:  {_cut(c.base_answer, _SHORT)}",
                f"    candidate: {_cut(c.cand_answer, _SHORT)}",
            ]
    return "\n".join(lines) + "\n"


def _change_text(c: Change) -> str:
    return f"{c.key}: {_cut(c.base, 40)} -> {_cut(c.cand, 40)}"


def to_markdown(comparisons: Comparison | Sequence[Comparison], *, limit: int = MARKDOWN_LIMIT) -> str:
    """A PR comment for one or more comparisons, always shorter than `limit` characters.

    Long lists are cut with "and N more"; answers side by side are added while they fit
    and the comment says how many were left out.
    """
    items = [comparisons] if isinstance(comparisons, Comparison) else list(comparisons)
    share = (limit - 200) // max(1, len(items))
    text = "\n\n".join(_markdown_one(x, share) for x in items)
    if len(text) < limit:
        return text
    return text[: limit - 100] + f"\n\n(cut here: the comment would pass {limit:,} characters)\n"


def _cell(value: object, limit: int = _SHORT) -> str:
    return _cut(value, limit).replace("|", "\\|")


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def _markdown_one(x: Comparison, budget: int) -> str:
    """One comparison in about `budget` characters: lists and tables shrink with it, answers fill what is left."""
    p = x.paired
    # about a third of the budget at most for lists and tables, the rest for answers side by side
    ids, rows, keys = max(5, budget // 1200), max(5, budget // 1500), max(5, budget // 2000)
    parts = [
        f"### {x.task}: **{x.verdict}** "
        f"(candidate {_code(_cut(x.cand_run, 80))} vs baseline {_code(_cut(x.base_run, 80))})",
        "",
        "| | mean [interval] n |\n|---|---|",
        f"| baseline | {x.base.format()} |\n| candidate | {x.cand.format()} |",
        f"| difference | {p.difference.format(signed=True)} ({_pct(p.interval.level)}) |",
        "",
        f"{_reason(x).capitalize()}. p = {p.p_value:.2g} ({p.test}); margin {x.margin:.2f}. "
        f"{p.improved} improved, {p.regressed} regressed, {p.unchanged} unchanged over {x.n} paired cases"
        + (f" (not compared: {_only(x)})." if x.only_base or x.only_cand else "."),
    ]
    parts += [f"{note}." for note in (_holm_note(x), _advice(x).capitalize()) if note]
    parts.append(f"Minimum detectable effect: {x.detectable.format()}.")
    if x.regressed:
        parts.append(f"**Regressed ({len(x.regressed)}):** {_ids(x.regressed, ids, '`')}")
    if x.improved:
        parts.append(f"**Improved ({len(x.improved)}):** {_ids(x.improved, ids, '`')}")
    parts.append(_markdown_families(x, rows))
    if x.what_changed:
        table = "".join(
            f"| {_cell(c.key, 60)} | {_cell(c.base, 80)} | {_cell(c.cand, 80)} |\n" for c in x.what_changed[:keys]
        )
        more = f"\n{len(x.what_changed) - keys} more keys differ.\n" if len(x.what_changed) > keys else ""
        head = "<details><summary>What changed</summary>\n\n| | baseline | candidate |\n|---|---|---|\n"
        parts.append(f"{head}{table}{more}\n</details>")
    text = "\n".join(parts)
    return text + _markdown_answers(x, budget - len(text))


def _markdown_families(x: Comparison, rows: int) -> str:
    table = "".join(f"| {_cell(r.family, 60)} | {r.difference.format(signed=True)} |\n" for r in x.families[:rows])
    more = f"\n{len(x.families) - rows} more families.\n" if len(x.families) > rows else ""
    return f"<details><summary>By family</summary>\n\n| family | difference n |\n|---|---|\n{table}{more}\n</details>"


def _fenced(text: str) -> str:
    text = text[:_ANSWER_MD] + ("…" if len(text) > _ANSWER_MD else "")
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}"


def _markdown_answers(x: Comparison, room: int) -> str:
    shown = _side_by_side(x)
    if not shown:
        return ""
    head, tail = "\n<details><summary>Side by side, losses first</summary>\n", "\n</details>\n"
    blocks: list[str] = []
    used = len(head) + len(tail) + 120
    for c in shown:
        block = (
            f"\n{_code(_cut(c.case_id, 80))} [{_cell(c.family, 40)}] {_score(c.base)} → {_score(c.cand)}\n\n"
            f"baseline:\n{_fenced(c.base_answer)}\n\ncandidate:\n{_fenced(c.cand_answer)}\n"
        )
        if used + len(block) > room:
            break
        blocks.append(block)
        used += len(block)
    left = len(shown) - len(blocks)
    note = f"\n{left} more not shown: the comment would pass {MARKDOWN_LIMIT:,} characters.\n" if left else ""
    return head + "".join(blocks) + note + tail if blocks or note else ""


def _plain(value: object) -> Any:
    """A JSON-serialisable copy: non-finite floats become None, unknown objects their str()."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _estimate_json(e: Estimate) -> dict[str, Any]:
    return {"mean": e.mean, "low": e.interval.low, "high": e.interval.high, "level": e.interval.level, "n": e.n}


def _change_json(c: CaseChange) -> dict[str, Any]:
    return {
        "id": c.case_id, "family": c.family, "baseline": c.base, "candidate": c.cand, "delta": c.delta,
        "baseline_answer": c.base_answer, "candidate_answer": c.cand_answer,
    }  # fmt: skip


def to_json(x: Comparison) -> dict[str, Any]:
    """The comparison as plain JSON-serialisable data, every case listed."""
    p, d = x.paired, x.detectable
    plain: dict[str, Any] = _plain(
        {
            "task": x.task,
            "baseline": {"run": x.base_run, **_estimate_json(x.base)},
            "candidate": {"run": x.cand_run, **_estimate_json(x.cand)},
            "difference": _estimate_json(p.difference),
            "p_value": p.p_value,
            "test": p.test,
            "margin": x.margin,
            "verdict": x.verdict,
            "exit_code": EXIT_CODES[x.verdict],
            "holm": None if x.holm_p is None else {"adjusted_p": x.holm_p, "comparisons": x.family_size},
            "counts": {"improved": p.improved, "regressed": p.regressed, "unchanged": p.unchanged},
            "regressed": [_change_json(c) for c in x.regressed],
            "improved": [_change_json(c) for c in x.improved],
            "unchanged": list(x.unchanged),
            "families": [{"family": r.family, **_estimate_json(r.difference)} for r in x.families],
            "detectable": {
                "effect": d.effect,
                "power": d.power,
                "n": d.n,
                "spread": d.spread,
                "spread_name": d.spread_name,
            },
            "what_changed": [{"key": c.key, "baseline": c.base, "candidate": c.cand} for c in x.what_changed],
            "only_baseline": list(x.only_base),
            "only_candidate": list(x.only_cand),
        }
    )
    return plain
