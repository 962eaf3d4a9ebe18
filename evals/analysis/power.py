"""Power of the paired verdict: the smallest true difference it detects, computed as it decides.

The verdict is `evals.analysis.paired`'s (the adjusted Wald interval at 1 - alpha, its lower
bound above the margin, and its tail guard); the minimum detectable effect is the true
mean difference that gives "ship" with the wanted probability. For 0/1 scores up to
`EXACT_UP_TO` cases that probability is exact (a sum over every count of gains and
losses: the normal approximation promised 80% where the rule had 67% at n = 20 with
every case changing); above, and for graded scores, it is the normal approximation of
the mean. For graded scores the tail guard's chance of letting a ship through is
computed from the observed shares of large losses and gains (held as they are under the
alternative), and the mean test must carry the rest: an MDE of the combined rule.
benchmarks/bench_validity.py measures the power each MDE achieves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evals.analysis import distributions as dist
from evals.analysis.paired import aligned
from evals.analysis.stats import is_binary
from evals.analysis.tail import LARGE, TAIL_ALPHA

__all__ = [
    "EXACT_UP_TO",
    "Detectable",
    "detectable_from",
    "minimum_detectable_effect",
    "minimum_detectable_effect_binary",
    "tail_lets_through",
]

EXACT_UP_TO = 400  # 0/1 scores: exact power up to this many cases (a grid of (n + 1)**2 counts)


def _ship_power(delta: float, n: int, second: float, sd: float, q: float, margin: float) -> float:
    """P(lower bound > margin) by the normal approximation, E[d**2] = `second` and sd(d) = `sd`."""
    total = n + 2.0
    centre = n * delta / total
    se = math.sqrt(max((n * second + 2.0) / total - centre * centre, 0.0) / total)
    spread = max(n / total * sd / math.sqrt(n), 1e-12)
    return dist.norm_cdf((centre - q * se - margin) / spread)


def _solve(power_at: Callable[[float], float], target: float, top: float) -> float:
    if power_at(top) < target:
        return math.inf
    if power_at(0.0) >= target:
        return 0.0
    return dist.root(lambda x: power_at(x) - target, 0.0, top, xtol=1e-12)


def _quantile(n: int, alpha: float) -> float:
    return dist.t_ppf(1 - alpha / 2, max(n - 1, 1))


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))


def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (first, second) count with first + second <= n."""
    a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = a + b <= n
    return a[keep], b[keep]


def _multinomial(n: int, a: np.ndarray, b: np.ndarray, pa: float, pb: float, lf: np.ndarray) -> np.ndarray:
    """P(a of kind A, b of kind B, the rest neither) in n draws with chances pa and pb."""
    rest = n - a - b
    terms = lf[n] - lf[a] - lf[b] - lf[rest]
    for k, p in ((a, pa), (b, pb), (rest, 1.0 - pa - pb)):
        terms = terms + np.where(k > 0, k * math.log(max(p, 1e-300)), 0.0)
    return np.asarray(np.exp(terms), dtype=np.float64)


def _binary_power_exact(n: int, pi: float, q: float, margin: float) -> Callable[[float], float]:
    """delta -> P(ship) for 0/1 scores, summed over every (gains, losses) count. With margin >= 0 a ship
    has more gains than losses, so the tail guard never blocks one here."""
    gains, losses = _grid(n)
    total = n + 2.0
    centre = (gains - losses) / total
    se = np.sqrt(np.maximum((gains + losses + 2.0) / total - centre * centre, 0.0) / total)
    low = np.minimum(np.clip(centre - q * se, -1.0, 1.0), (gains - losses) / n)
    ships = low > margin
    lf = _log_factorials(n)
    return lambda delta: float(_multinomial(n, gains, losses, (pi + delta) / 2, (pi - delta) / 2, lf)[ships].sum())


def tail_lets_through(n: int, losses: float, gains: float, alpha: float = TAIL_ALPHA) -> float:
    """P(the tail guard finds no excess) when a case falls by >= LARGE with chance `losses` and rises as much
    with chance `gains`: exact up to EXACT_UP_TO cases, by the normal approximation of the counts above."""
    if losses <= 0:
        return 1.0
    if n > EXACT_UP_TO:
        mean, var = n * (losses - gains), n * (losses + gains) - n * (losses - gains) ** 2
        bar = dist.norm_ppf(1 - alpha) * math.sqrt(n * (losses + gains))
        return dist.norm_cdf((bar - mean) / max(math.sqrt(max(var, 0.0)), 1e-12))
    lf = _log_factorials(n)
    low, high = _grid(n)
    blocked = _blocked(n, lf, alpha)[low, high]
    return float(1.0 - _multinomial(n, low, high, losses, gains, lf)[blocked].sum())


def _blocked(n: int, lf: np.ndarray, alpha: float) -> np.ndarray:
    """(losses, gains) -> the exact one-sided binomial p of that many losses among both is below `alpha`."""
    out = np.zeros((n + 1, n + 1), dtype=bool)
    for total in range(1, n + 1):
        k = np.arange(total + 1)
        pmf = np.exp(lf[total] - lf[k] - lf[total - k] - total * math.log(2.0))
        upper = np.cumsum(pmf[::-1])[::-1]  # P(X >= k)
        losses = k[upper < alpha]
        out[losses, total - losses] = True
    return out


def minimum_detectable_effect(
    n: int,
    sd_of_differences: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    margin: float = 0.0,
    large: tuple[float, float] = (0.0, 0.0),
) -> float:
    """The smallest true mean difference that gives "ship" with probability `power` at this n.

    For scores in [0, 1]: the spread of the per-case differences (their sd) is taken as
    what it is under the alternative. The calculation is the verdict's own (the adjusted
    Wald interval at 1 - alpha, its lower bound above `margin`) under the normal
    approximation of the mean difference; `math.inf` when no difference in [0, 1] is.
    `large` are the shares of cases that fall and that rise by at least half the scale:
    the mean test must then carry `power` over the chance the tail guard lets a ship through.
    """
    q = _quantile(n, alpha)
    sd = float(sd_of_differences)
    through = tail_lets_through(n, *large) if large[0] > 0 else 1.0
    if through < power:
        return math.inf
    return _solve(lambda x: _ship_power(x, n, sd * sd + x * x, sd, q, margin), power / through, 1.0)


def minimum_detectable_effect_binary(
    n: int, discordance: float, *, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0
) -> float:
    """As `minimum_detectable_effect` for 0/1 scores, from the share of cases that change (discordance).

    With discordance pi held fixed, a true difference delta has E[d**2] = pi and
    sd = sqrt(pi - delta**2); delta cannot exceed pi, so a low discordance gives `math.inf`.
    """
    q = _quantile(n, alpha)
    pi = float(discordance)
    if 0 < n <= EXACT_UP_TO and pi > 0:
        return _solve(_binary_power_exact(n, pi, q, margin), power, pi)
    return _solve(lambda x: _ship_power(x, n, pi, math.sqrt(max(pi - x * x, 0.0)), q, margin), power, pi)


@dataclass(frozen=True)
class Detectable:
    """The minimum detectable effect and the spread it was computed from."""

    effect: float
    n: int
    spread: float
    spread_name: str  # "discordance" or "sd of differences"
    power: float = 0.8

    def format(self) -> str:
        basis = f"n={self.n}, {self.spread_name} {self.spread:.2f}"
        if math.isinf(self.effect):
            return f"none within reach at {self.power:.0%} power ({basis})"
        return f"{self.effect:.2f} at {self.power:.0%} power ({basis})"


def detectable_from(
    base: ArrayLike, cand: ArrayLike, *, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0
) -> Detectable:
    """The MDE for these cases' n and observed spread: discordance for 0/1 scores, else the sd."""
    b, c = aligned(base, cand)
    d, n = c - b, b.size
    if is_binary(b) and is_binary(c):
        pi = float(np.mean(d != 0))
        mde = minimum_detectable_effect_binary(n, pi, alpha=alpha, power=power, margin=margin)
        return Detectable(mde, n, pi, "discordance", power)
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    large = (float(np.mean(d <= -LARGE + 1e-12)), float(np.mean(d >= LARGE - 1e-12)))
    mde = minimum_detectable_effect(n, sd, alpha=alpha, power=power, margin=margin, large=large)
    return Detectable(mde, n, sd, "sd of differences", power)
