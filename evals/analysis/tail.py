"""The tail guard of the paired verdict: no excess of large regressions.

A mean can hide rare total failures behind small gains everywhere. Ship therefore also
needs no excess of large regressions: the cases whose score fell by at least `LARGE`
(half the scale) against those that rose as much, by an exact one-sided binomial test
at `TAIL_ALPHA`, its share of the verdict's error budget (`evals.analysis.paired`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evals.analysis.stats import LEVEL, Floats

__all__ = ["LARGE", "NO_TAIL", "TAIL_ALPHA", "Tail", "tail_of", "tail_p", "tail_p_batch"]

LARGE = 0.5  # a large change: a case's score moved by at least half the scale
TAIL_ALPHA = (1 - LEVEL) / 2  # the tail guard's share of the verdict's error budget


def tail_p(losses: int, gains: int) -> float:
    """Exact one-sided binomial p of "large losses are no more likely than large gains": P(X >= losses), X ~ B(n, 1/2).

    The sum is exact in integers (`scipy.stats.binomtest(losses, n, 0.5, alternative="greater")` agrees,
    tests/analysis/test_tail.py), so a command line pays no scipy import for it.
    """
    n = losses + gains
    if losses <= 0:
        return 1.0
    return float(sum(math.comb(n, i) for i in range(losses, n + 1)) / 2**n)


def tail_p_batch(losses: ArrayLike, gains: ArrayLike) -> Floats:
    """`tail_p` for many comparisons at once (simulations), by scipy's binomial survival function."""
    from scipy import stats as sps  # type: ignore[import-untyped]

    k = np.asarray(losses, dtype=np.float64)
    n = k + np.asarray(gains, dtype=np.float64)
    return np.where(k > 0, np.asarray(sps.binom.sf(k - 1, n, 0.5), dtype=np.float64), 1.0)


@dataclass(frozen=True)
class Tail:
    """The tail guard: cases that fell by at least LARGE against those that rose as much, and its p."""

    losses: int
    gains: int
    p: float
    alpha: float = TAIL_ALPHA  # an excess below it blocks ship (Bonferroni-split further under Holm)

    @property
    def excess(self) -> bool:
        return self.p < self.alpha

    def format(self) -> str:
        verdict = "an excess of large regressions" if self.excess else "no excess of large regressions"
        return (
            f"{self.losses} fell by >= {LARGE:g}, {self.gains} rose as much: {verdict} "
            f"(exact binomial p = {self.p:.2g}, blocks ship below {self.alpha:.3g})"
        )


def tail_of(d: ArrayLike, alpha: float = TAIL_ALPHA) -> Tail:
    """The tail guard over per-case differences (candidate - baseline)."""
    diffs = np.asarray(d, dtype=np.float64)
    losses, gains = int((diffs <= -LARGE + 1e-12).sum()), int((diffs >= LARGE - 1e-12).sum())
    return Tail(losses, gains, tail_p(losses, gains), alpha)


NO_TAIL = Tail(0, 0, 1.0)
