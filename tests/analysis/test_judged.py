"""Cohen's kappa and its seeded bootstrap interval, checked against known truths.

The interval's coverage is checked by simulation: pass/fail gradings drawn from a
population whose kappa is known (from its 2x2 cell probabilities), the interval computed
for each draw, and the share of intervals holding the true kappa compared with 95%.
`python -m tests.analysis.test_judged` prints the coverage of each scenario.
"""

from __future__ import annotations

import numpy as np
import pytest

from evals.analysis.judged import agreement, kappa, kappa_interval

# (cells [[human pass & judge pass, human pass & judge fail], [human fail & judge pass, fail & fail]], n)
SCENARIOS = [
    ([[0.45, 0.05], [0.05, 0.45]], 60),  # kappa 0.8, balanced
    ([[0.25, 0.05], [0.10, 0.60]], 60),  # kappa 0.66, more fails, a judge that passes too much
    ([[0.40, 0.10], [0.15, 0.35]], 120),  # kappa 0.5
    ([[0.45, 0.05], [0.05, 0.45]], 30),  # kappa 0.8, few entries
]
DRAWS = 400


def true_kappa(cells: list[list[float]]) -> float:
    p = np.asarray(cells)
    observed = p[0, 0] + p[1, 1]
    human, judge = p[0].sum(), p[:, 0].sum()
    chance = human * judge + (1 - human) * (1 - judge)
    return float((observed - chance) / (1 - chance))


def coverage(cells: list[list[float]], n: int, draws: int = DRAWS, seed: int = 11) -> float:
    rng = np.random.default_rng(seed)
    truth, flat = true_kappa(cells), np.asarray(cells).ravel()
    hits = 0
    for _ in range(draws):
        cell = rng.choice(4, size=n, p=flat)
        human, judge = cell < 2, cell % 2 == 0
        interval = kappa_interval(list(human), list(judge), seed=int(rng.integers(1 << 30)))
        hits += interval.low <= truth <= interval.high
    return hits / draws


def test_kappa_of_known_tables() -> None:
    human = [True] * 30 + [False] * 30
    assert kappa(human, human) == 1.0
    assert kappa(human, [True] * 60) == 0.0  # always "pass": no agreement beyond chance
    assert kappa(human, [not h for h in human]) == -1.0
    # 20 pass/pass, 10 pass/fail, 5 fail/pass, 25 fail/fail: po 0.75, pe 0.5*25/60 + 0.5*35/60 = 0.5
    judge = [True] * 20 + [False] * 10 + [True] * 5 + [False] * 25
    assert kappa(human, judge) == pytest.approx(0.5)
    found = agreement(human, judge)
    assert found.confusion == {
        "human pass / judge pass": 20,
        "human pass / judge fail": 10,
        "human fail / judge pass": 5,
        "human fail / judge fail": 25,
    }
    assert found.accuracy == pytest.approx(0.75) and found.kappa_text().startswith("kappa 0.50 [")


def test_the_interval_is_seeded_and_holds_the_estimate() -> None:
    human = [True] * 30 + [False] * 30
    judge = [True] * 27 + [False] * 3 + [True] * 4 + [False] * 26
    first, again = kappa_interval(human, judge), kappa_interval(human, judge)
    assert first == again
    assert first.low < kappa(human, judge) < first.high


@pytest.mark.slow
@pytest.mark.parametrize(("cells", "n"), SCENARIOS)
def test_the_interval_covers_the_true_kappa_about_95_percent(cells: list[list[float]], n: int) -> None:
    assert 0.91 <= coverage(cells, n) <= 0.985  # 400 draws: the standard error is about 0.011


if __name__ == "__main__":
    for cells, n in SCENARIOS:
        print(f"true kappa {true_kappa(cells):.2f} n={n}: coverage {coverage(cells, n):.3f} over {DRAWS} draws")
