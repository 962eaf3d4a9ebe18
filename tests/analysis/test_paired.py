"""One test, one p: the p-value printed, Holm-adjusted and recorded agrees with the verdict, always.

Simulated as CONVENTIONS.md asks: thousands of random seeded comparisons (random joint
distributions of 0/1 and graded scores, random n and margins), drawn at once from a
numpy Generator. Every one must agree, not most: the verdict ships exactly when the
one-sided p of "difference <= margin" is below alpha/2, regresses exactly when the
one-sided p of "difference >= 0" is, and the printed p is below alpha exactly when the
verdict is decisive. `python -m tests.analysis.test_paired` prints the counts.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from numpy.typing import NDArray

from evals.analysis.comparison import RunScores, compare, compare_all
from evals.analysis.paired import MEAN_ALPHA, paired, paired_batch, verdict, verdict_decimals
from evals.analysis.stats import Interval
from evals.render.comparison_text import to_text

Floats = NDArray[np.float64]
ALPHA = 0.05
BINARY = (0.0, 1.0)
GRADED = (0.0, 0.25, 0.5, 0.75, 1.0)
MARGINS = (0.0, 0.05, 0.1)


def draw(rng: np.random.Generator, levels: tuple[float, ...], sims: int, n: int) -> tuple[Floats, Floats]:
    """`sims` comparisons of n cases, each from its own random joint table, tilted to make changes one-way."""
    k = len(levels)
    tables = rng.dirichlet(np.full(k * k, 0.4), size=sims)
    cum = np.cumsum(tables, axis=1)
    cells = (rng.random((sims, n))[:, :, None] > cum[:, None, :]).sum(axis=2).clip(0, k * k - 1)
    v = np.asarray(levels)
    return v[cells // k], v[cells % k]


def agreement(levels: tuple[float, ...], seed: int, sims: int = 1_000) -> tuple[int, int]:
    """(comparisons, those whose verdict, one-sided p's and printed p all agree), vectorised per n and margin."""
    rng = np.random.default_rng(seed)
    total = agree = 0
    for n in (5, 16, 40, 120):
        base, cand = draw(rng, levels, sims, n)
        batch = paired_batch(cand - base)
        low, high = batch.bounds(1 - ALPHA)
        for margin in MARGINS:
            ship, regress = low > margin, high < 0
            p_ship, p_regress, p = batch.p_ship(margin), batch.p_regress(), batch.pvalues(margin)
            one_sided = (ship == (p_ship < ALPHA / 2)) & (regress == (p_regress < ALPHA / 2))
            ok = one_sided & ((ship | regress) == (p < ALPHA))
            total, agree = total + ok.size, agree + int(ok.sum())
    return total, agree


@pytest.mark.parametrize(("levels", "seed"), [(BINARY, 1), (GRADED, 2)], ids=["binary", "graded"])
def test_over_thousands_of_random_comparisons_the_p_value_agrees_with_the_verdict(
    levels: tuple[float, ...], seed: int
) -> None:
    total, agree = agreement(levels, seed)
    assert total == 12_000 and agree == total


@pytest.mark.parametrize(("levels", "seed"), [(BINARY, 3), (GRADED, 4)], ids=["binary", "graded"])
def test_the_p_value_a_comparison_prints_agrees_with_its_verdict(levels: tuple[float, ...], seed: int) -> None:
    """Through `paired` itself (what compare prints and decisions record), 1,500 random comparisons each."""
    rng = np.random.default_rng(seed)
    disagree = 0
    for n, margin in ((8, 0.0), (30, 0.05), (100, 0.0)):
        base, cand = draw(rng, levels, 500, n)
        for b, c in zip(base, cand, strict=True):
            result = paired(b, c, margin=margin)
            decisive = verdict(result, margin) != "inconclusive"
            disagree += decisive != (result.p_value < ALPHA)
            disagree += (verdict(result, margin) == "ship") != (result.p_ship() < ALPHA / 2)
    assert disagree == 0


# --- Holm respects the margin ----------------------------------------------------------------------------


def _binary(task: str, run: str, better: int, worse: int, same: int) -> RunScores:
    base = [0.0] * better + [1.0] * worse + [1.0] * same
    cand = [1.0] * better + [0.0] * worse + [1.0] * same
    scores = base if run == "base" else cand
    return RunScores(task, f"{task}-{run}", {f"c{i:04d}": [s] for i, s in enumerate(scores)})


def _pair(task: str, better: int, worse: int, same: int) -> tuple[RunScores, RunScores]:
    return _binary(task, "base", better, worse, same), _binary(task, "cand", better, worse, same)


def test_holm_orders_and_stops_by_the_margin_not_by_zero() -> None:
    """A comparison sure to be above 0 but not above the margin must not let the step-down go on past it.

    `small` is +0.08 over 1,000 cases: far from 0 (p ~ 1e-20 against 0) but not above the
    margin 0.1. `big` is +0.30 over 40 cases: above the margin at the verdict's 97.5%, not at
    98.75%. Ordered by "not 0", `small` came first and `big` shipped at 97.5%; ordered by the
    margin, `big` comes first, is not decisive at its Holm level, and the step-down stops.
    """
    small, big = _pair("small", 80, 0, 920), _pair("big", 12, 0, 28)
    alone = compare(*big, margin=0.1)
    assert alone.verdict == "ship" and alone.paired.p_value < MEAN_ALPHA
    found = {x.task: x for x in compare_all([small, big], margin=0.1)}
    assert found["small"].paired.interval.low > 0
    assert found["big"].verdict == "inconclusive"
    assert found["big"].paired.interval.level == pytest.approx(1 - MEAN_ALPHA / 2)
    for x in found.values():
        assert (x.verdict != "inconclusive") == (x.holm_p is not None and x.holm_p < MEAN_ALPHA)


def test_over_random_families_holm_adjusted_p_agrees_with_the_verdict() -> None:
    rng = np.random.default_rng(6)
    disagree = 0
    for family in range(150):
        pairs = []
        for task in range(3):
            n = int(rng.integers(10, 80))
            better, worse = (int(x) for x in rng.multinomial(n, [0.3, 0.1, 0.6])[:2])
            pairs.append(_pair(f"t{family}-{task}", better, worse, n - better - worse))
        for x in compare_all(pairs, margin=float(rng.choice(MARGINS))):
            assert x.holm_p is not None
            disagree += (x.verdict != "inconclusive") != (x.holm_p < MEAN_ALPHA)
    assert disagree == 0


# --- printed bounds never contradict the verdict's words ----------------------------------------------------


def _printed_bounds(text: str) -> tuple[float, float]:
    found = re.search(r"^difference  \S+ \[(\S+), (\S+)\]", text, re.M)
    assert found, text
    return float(found[1]), float(found[2])


def test_a_ship_whose_low_bound_rounds_to_zero_prints_enough_decimals() -> None:
    """7 of 75 cases fixed, none broken: the interval's low bound is +0.004978, which 2 decimals print as +0.00."""
    n, better = 75, 7
    base = RunScores("t", "a", {f"c{i}": [0.0 if i < better else 1.0] for i in range(n)})
    cand = RunScores("t", "b", {f"c{i}": [1.0] for i in range(n)})
    x = compare(base, cand)
    assert x.verdict == "ship" and 0 < x.paired.interval.low < 0.005
    low, _ = _printed_bounds(to_text(x))
    assert low > 0, to_text(x)


def test_over_random_intervals_printed_bounds_say_what_the_verdict_says() -> None:
    rng = np.random.default_rng(7)
    base, cand = draw(rng, GRADED, 4_000, 30)
    low, high = paired_batch(cand - base).bounds()
    wrong = 0
    for lo, hi, margin in zip(low, high, rng.choice(MARGINS, size=low.size), strict=True):
        interval = Interval(float(lo), float(hi))
        d = verdict_decimals(interval, float(margin))
        said = verdict(interval, float(margin))
        shown_low, shown_high = round(float(lo), d), round(float(hi), d)
        wrong += (said == "ship") != (shown_low > margin) or (said == "regress") != (shown_high < 0)
    assert wrong == 0


# --- no crash on few changed cases ------------------------------------------------------------------------


@pytest.mark.parametrize("changed", [0, 1, 2])
def test_graded_runs_that_differ_in_m_cases_compare(changed: int) -> None:
    scores = {f"c{i}": [0.5] for i in range(12)}
    moved = {case: ([0.75] if i < changed else s) for i, (case, s) in enumerate(scores.items())}
    x = compare(RunScores("t", "a", scores), RunScores("t", "b", moved))
    assert x.paired.improved == changed and x.verdict == "inconclusive"
    assert x.paired.p_value >= ALPHA
    assert "difference  " in to_text(x)


if __name__ == "__main__":
    for name, levels, seed in (("binary", BINARY, 1), ("graded", GRADED, 2)):
        total, agree = agreement(levels, seed)
        sys.stdout.write(f"{name}: {agree:,} of {total:,} random comparisons agree with their p\n")
