"""Power of the paired verdict: the smallest true difference it detects, computed as it decides.

The verdict is `evals.analysis.paired`'s (the adjusted Wald interval at 1 - alpha, its lower
bound above the margin); the minimum detectable effect is the true mean difference that
gives "ship" with the wanted probability under the normal approximation of the mean.
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

__all__ = ["Detectable", "detectable_from", "minimum_detectable_effect", "minimum_detectable_effect_binary"]


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


def minimum_detectable_effect(
    n: int, sd_of_differences: float, *, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0
) -> float:
    """The smallest true mean difference that gives "ship" with probability `power` at this n.

    For scores in [0, 1]: the spread of the per-case differences (their sd) is taken as
    what it is under the alternative. The calculation is the verdict's own (the adjusted
    Wald interval at 1 - alpha, its lower bound above `margin`) under the normal
    approximation of the mean difference; `math.inf` when no difference in [0, 1] is.
    """
    q = _quantile(n, alpha)
    sd = float(sd_of_differences)
    return _solve(lambda x: _ship_power(x, n, sd * sd + x * x, sd, q, margin), power, 1.0)


def minimum_detectable_effect_binary(
    n: int, discordance: float, *, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0
) -> float:
    """As `minimum_detectable_effect` for 0/1 scores, from the share of cases that change (discordance).

    With discordance pi held fixed, a true difference delta has E[d**2] = pi and
    sd = sqrt(pi - delta**2); delta cannot exceed pi, so a low discordance gives `math.inf`.
    """
    q = _quantile(n, alpha)
    pi = float(discordance)
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
    return Detectable(
        minimum_detectable_effect(n, sd, alpha=alpha, power=power, margin=margin), n, sd, "sd of differences", power
    )
