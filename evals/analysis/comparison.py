"""Did the change help? Two runs of one task compared case by case, decided, and rendered.

The pure core behind `python -m evals.compare` and the reports: the caller reads the
run records and hands over one `RunScores` per run; nothing here reads or writes a
file. `compare` pairs the runs by case id over the cases both hold, averages repeats
within each case, and computes the paired statistics of `evals.analysis.paired`, the
verdict against a margin fixed in advance, the changed cases, per-family differences,
the minimum detectable effect and what changed between the runs
(`evals.analysis.differences`: a confounded pair, or a prompt change on the stub, is
inconclusive whatever the interval). `compare_all` decides several tasks at once under
Holm's correction. `evals.render.comparison_text`,
`comparison_markdown` and `comparison_json` render one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from attest.errors import AttestError
from evals.analysis.differences import Change, what_changed, withheld
from evals.analysis.paired import (
    MEAN_ALPHA,
    VERDICT_LEVEL,
    Paired,
    difference,
    holm,
    holm_levels,
    paired,
    verdict,
)
from evals.analysis.power import Detectable, detectable_from
from evals.analysis.stats import Estimate, Verdict, is_binary, mean_estimate
from evals.analysis.tail import TAIL_ALPHA

__all__ = [
    "EXIT_CODES",
    "CaseChange",
    "Comparison",
    "ComparisonError",
    "FamilyRow",
    "Floor",
    "RunScores",
    "compare",
    "compare_all",
    "exit_code",
]

EXIT_CODES: Mapping[Verdict, int] = {"ship": 0, "inconclusive": 3, "regress": 4}
NO_FAMILY = "(none)"


class ComparisonError(AttestError, ValueError):
    """Two runs that cannot be compared; the message names the runs or the case and what to do."""


@dataclass(frozen=True)
class Floor:
    """The best cheap strategy on a run's cases (its report's trivial baseline), and whether the run beat it."""

    mean: float
    answer: str
    beaten: bool  # the paired difference run - floor is above 0


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
    prompts: tuple[str, ...] = ()  # the system prompts the run sent, for a line diff
    requests: Mapping[str, str] = field(default_factory=dict)  # case id -> sha256 of its rendered request
    floor: Floor | None = None  # the best cheap strategy on the run's cases, when its report has it


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
    kinds: tuple[str, ...] = ()  # which of prompt, model (backend, model, digest) and options differ
    confounded: tuple[str, ...] = ()  # `kinds`, when more than one differs
    prompt_diff: tuple[str, ...] = ()  # a line diff of the system prompts, baseline to candidate
    withheld: str = ""  # why the verdict is inconclusive whatever the interval; "" when the interval decides
    measured: Verdict = "inconclusive"  # the interval's own verdict, before anything withheld it
    notes: tuple[str, ...] = ()  # what was made equal before comparing (both runs re-scored with one scorer)
    floors: tuple[Floor | None, Floor | None] = (None, None)  # the best cheap strategy beside each run

    @property
    def n(self) -> int:
        return self.paired.n


def compare(
    base: RunScores,
    cand: RunScores,
    *,
    margin: float = 0.0,
    show: int = 5,
    accept_mixed: bool = False,
    notes: Sequence[str] = (),
) -> Comparison:
    """Pair two runs of one task by case id, average repeats within a case, and decide.

    The verdict is the interval's (at `VERDICT_LEVEL`, with the tail guard) unless the
    runs cannot credit the change (`differences.withheld`: more than one of prompt, model
    and options differ, unless `accept_mixed`; a prompt change measured on the stub; runs
    scored by different scorers), then it is inconclusive. `notes` say what the caller
    made equal first (both runs re-scored with one scorer), or why it could not.
    """
    if not margin >= 0 or show < 0:
        raise ComparisonError(f"margin and show must be >= 0, got margin {margin}, show {show}")
    shared = _shared_cases(base, cand)
    b = [_case_mean(base, case) for case in shared]
    c = [_case_mean(cand, case) for case in shared]
    result = paired(b, c, margin=margin, level=VERDICT_LEVEL)
    changed = what_changed(
        base.provenance, cand.provenance, base.prompts, cand.prompts, (base.requests, cand.requests), shared
    )
    why, confounded = withheld(changed, base.provenance, cand.provenance, accept_mixed=accept_mixed, notes=notes)
    changes = [
        CaseChange(case, _family(base, cand, case), x, y, base.answers.get(case, ""), cand.answers.get(case, ""))
        for case, x, y in zip(shared, b, c, strict=True)
        if abs(y - x) > 1e-12
    ]
    return Comparison(
        task=base.task,
        base_run=base.run_id,
        cand_run=cand.run_id,
        base=mean_estimate(b, binary=is_binary(b) and is_binary(c)),  # one interval method for both runs
        cand=mean_estimate(c, binary=is_binary(b) and is_binary(c)),
        paired=result,
        margin=margin,
        verdict="inconclusive" if why else verdict(result, margin),
        regressed=tuple(sorted((x for x in changes if x.delta < 0), key=lambda x: (x.delta, x.case_id))),
        improved=tuple(sorted((x for x in changes if x.delta > 0), key=lambda x: (-x.delta, x.case_id))),
        unchanged=tuple(case for case, x, y in zip(shared, b, c, strict=True) if abs(y - x) <= 1e-12),
        families=_families(base, cand, shared, b, c),
        detectable=detectable_from(b, c, margin=margin, alpha=MEAN_ALPHA),
        what_changed=changed.changes,
        only_base=tuple(sorted(set(base.samples) - set(cand.samples))),
        only_cand=tuple(sorted(set(cand.samples) - set(base.samples))),
        show=show,
        kinds=changed.kinds,
        confounded=confounded,
        prompt_diff=changed.prompt_diff,
        withheld=why,
        measured=verdict(result, margin),
        notes=tuple(notes),
        floors=(base.floor, cand.floor),
    )


def _shared_cases(base: RunScores, cand: RunScores) -> list[str]:
    if base.run_id == cand.run_id:
        raise ComparisonError(
            f"run {base.run_id} is compared with itself: name two different runs (`python -m evals.runs list`)"
        )
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


def compare_all(
    pairs: Sequence[tuple[RunScores, RunScores]],
    *,
    margin: float = 0.0,
    show: int = 5,
    alpha: float = MEAN_ALPHA,
    accept_mixed: bool = False,
    notes: Sequence[Sequence[str]] = (),
) -> tuple[Comparison, ...]:
    """Compare several (baseline, candidate) pairs, one verdict each, under Holm's correction.

    Each comparison's interval is put at the level `paired.holm_levels` gives it (its
    Holm step, ordered and stopped by each decision's p against the margin), so at most
    `alpha` of such families hold any wrong ship or regress, and each printed interval
    agrees with its verdict and with its Holm-adjusted p (`holm_p`): decisive exactly
    when `holm_p` < alpha. Each tail guard is held at TAIL_ALPHA / k (Bonferroni), so the
    family's error budget is the single verdict's. Per-family rows stay at 95%: they
    describe, they do not decide. `notes[i]` are pair i's, as `compare`'s.
    """
    said = list(notes) or [()] * len(pairs)
    comparisons = [
        compare(b, c, margin=margin, show=show, accept_mixed=accept_mixed, notes=n)
        for (b, c), n in zip(pairs, said, strict=True)
    ]
    pvalues = [x.paired.p_value for x in comparisons]
    levels, adjusted = holm_levels(pvalues, alpha), holm(pvalues)
    out = []
    for x, level, p in zip(comparisons, levels, adjusted, strict=True):
        at = x.paired.at_level(level)
        at = replace(at, tail=replace(at.tail, alpha=TAIL_ALPHA / len(comparisons)))
        measured = verdict(at, margin)
        decided = "inconclusive" if x.withheld else measured
        out.append(replace(x, paired=at, verdict=decided, measured=measured, holm_p=p, family_size=len(comparisons)))
    return tuple(out)


def exit_code(verdicts: Iterable[Verdict]) -> int:
    """The exit code for one or more verdicts: 4 if any regressed, else 3 if any is inconclusive, else 0."""
    return max((EXIT_CODES[v] for v in verdicts), default=EXIT_CODES["inconclusive"])


def _cut(value: object, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
