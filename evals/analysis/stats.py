"""Statistics for eval runs: estimates with intervals, the paired comparison, its verdict, power, Holm.

The case is the unit: repeats are averaged within a case before anything here sees
them, and a difference between two runs is the mean of per-case paired differences
(candidate - baseline) over the same cases. Every point estimate comes with an
interval. Scores are in [0, 1], so paired differences are in [-1, 1].

The paired interval is the Bonett-Price adjusted Wald interval (Bonett and Price
2012, J. Educ. Behav. Stat. 37:479; recommended for paired proportions by Fagerland,
Lydersen and Laake 2014, Stat. Med. 33:2850), generalised from 0/1 scores to
scores in [0, 1]: one pseudo-difference of +1 and one of -1 join the n observed
differences, and the interval is centre +- t(n-1) * se over those n + 2 values.
For 0/1 scores this is exactly Bonett-Price (adding one to each discordant cell).
Why this one: intervals built from the observed spread alone (percentile and BCa
bootstraps, the plain t interval, Newcombe's hybrid score interval) collapse
towards a point when few or no cases change, so at n = 16 a true difference carried
by a rare, one-way change escapes them: the bootstraps covered it 62-90% of the time
in the scenarios of tests/test_stats.py, Newcombe's 75% and the t interval as little
as 4% in a sweep of random tables. The pseudo-differences keep the interval honest
there. In that sweep (240 random joint distributions of 0/1, five-level and
{0, .75, 1} scores, tilted towards rare one-way changes, at n = 16, 40, 100 and 300,
2,000 draws each) its worst coverage was 93.5%, against Tango's score interval 93.2%,
Bonett-Price with a normal quantile 92.5% and Agresti-Min (half a pseudo-count) 89%;
`python -m tests.test_stats` prints its coverage in the scenarios the tests keep.
It is closed form, so a 10,000-case comparison costs microseconds and a simulation
computes thousands of intervals at once. The verdict reads this interval; the p-value is
the exact test's (McNemar, sign-flip), reported beside it, and the two can
disagree when a result sits at the threshold.

This module is longer than the house's 300 lines because the interval, the test,
the verdict, the power calculation that must match them and the familywise rule
share the same arithmetic and belong together.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evals.analysis import distributions as dist

__all__ = [
    "LEVEL",
    "RESAMPLES",
    "Detectable",
    "Estimate",
    "Interval",
    "Paired",
    "PairedBatch",
    "VarianceComponents",
    "Verdict",
    "decimals_for",
    "detectable_from",
    "difference",
    "flaky_cases",
    "holm",
    "holm_levels",
    "is_binary",
    "mean_estimate",
    "minimum_detectable_effect",
    "minimum_detectable_effect_binary",
    "paired",
    "paired_batch",
    "proportion",
    "variance_components",
    "verdict",
]

LEVEL = 0.95
RESAMPLES = 9_999  # bootstrap and sign-flip resamples; sign-flip is exact when 2**m <= RESAMPLES (m <= 13)
SEED = 20_241_114  # every resampling is seeded: the same runs always give the same figures
BOOTSTRAP_MAX_N = 2_000  # above: Student t (BCa's jackknife is O(n**2); at this n the mean is normal)
PERMUTATION_MAX_N = 400  # above: the sign-flip distribution's normal approximation (Monte Carlo error dominates)
Verdict = Literal["ship", "regress", "inconclusive"]
Floats = NDArray[np.float64]


def decimals_for(width: float) -> int:
    """Decimals to print an interval of this width: the last digit is at most a fifth of the width.

    So an interval spans at least five units in the last place shown: width 0.25 -> 2
    decimals (0.33 [0.21, 0.46]), width 0.04 -> 3, 0.004 -> 4. Never fewer than 2 (scores
    live in [0, 1] and tables line up), never more than 6; a zero-width interval gets 2.
    """
    if not width > 0:
        return 2
    return min(6, max(2, math.ceil(-math.log10(width / 5) - 1e-9)))


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] at `level`."""

    low: float
    high: float
    level: float = LEVEL

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class Estimate:
    """A mean with its interval and the number of cases behind it."""

    mean: float
    interval: Interval
    n: int

    def format(self, *, signed: bool = False) -> str:
        """`0.33 [0.21, 0.46] n=39`, to the precision the interval supports (see `decimals_for`)."""
        d = decimals_for(self.interval.width)
        sign = "+" if signed else ""

        def f(x: float) -> str:
            return f"{round(x, d) + 0.0:{sign}.{d}f}"  # + 0.0 turns a rounded -0.0 into 0.0

        return f"{f(self.mean)} [{f(self.interval.low)}, {f(self.interval.high)}] n={self.n}"


def _array(values: ArrayLike, what: str) -> Floats:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{what}: expected a non-empty list of scores, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
        raise ValueError(f"{what}: scores must be finite and within [0, 1]")
    return arr


def is_binary(values: ArrayLike) -> bool:
    """Whether every value is exactly 0 or 1."""
    arr = np.asarray(values, dtype=np.float64)
    return bool(np.all((arr == 0) | (arr == 1)))


def proportion(successes: int, n: int, level: float = LEVEL) -> Estimate:
    """A proportion with its Wilson score interval (scipy's `binomtest(...).proportion_ci`)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"a proportion needs 0 <= successes <= n and n >= 1, got {successes}/{n}")
    low, high = dist.wilson(successes, n, level)
    return Estimate(successes / n, Interval(low, high, level), n)


def mean_estimate(values: ArrayLike, level: float = LEVEL, *, seed: int = SEED) -> Estimate:
    """A mean score with its interval: Wilson when every value is 0 or 1, else a seeded bootstrap.

    The bootstrap is scipy's BCa with `RESAMPLES` resamples. For a mean BCa is undefined
    only when every value is equal, which gives [m, m] before any resampling; should scipy
    still return no bound, the percentile interval is used. Above `BOOTSTRAP_MAX_N` values
    it is the Student t interval instead: BCa's jackknife costs O(n**2), and at that size
    the three agree to the digits printed.
    """
    arr = _array(values, "mean_estimate")
    n, mean = arr.size, float(arr.mean())
    if is_binary(arr):
        return proportion(int(arr.sum()), n, level)
    if np.all(arr == arr[0]):
        return Estimate(mean, Interval(mean, mean, level), n)
    if n > BOOTSTRAP_MAX_N:
        half = dist.t_ppf(0.5 + level / 2, n - 1) * float(arr.std(ddof=1)) / math.sqrt(n)
        return Estimate(mean, Interval(mean - half, mean + half, level), n)
    return Estimate(mean, _bootstrap(arr, level, seed), n)


def _bootstrap(arr: Floats, level: float, seed: int) -> Interval:
    from scipy import stats as sps  # type: ignore[import-untyped]

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sps.DegenerateDataWarning)
            ci = sps.bootstrap(
                (arr,), np.mean, n_resamples=RESAMPLES, batch=1_000, confidence_level=level, method=method,
                rng=np.random.default_rng(seed),
            ).confidence_interval  # fmt: skip
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            return Interval(float(ci.low), float(ci.high), level)
    mean = float(arr.mean())
    return Interval(mean, mean, level)


SCIPY_FROM = 64  # above this many p-values at once (simulations), scipy's vectorised t is faster


def _t_quantiles(p: float, df: Floats) -> Floats:
    """Student t quantiles for an array of degrees of freedom (few distinct: each computed once)."""
    known = {value: dist.t_ppf(p, value) for value in {float(x) for x in df.ravel()}}
    return np.asarray([known[float(x)] for x in df.ravel()], dtype=np.float64).reshape(df.shape)


@dataclass(frozen=True)
class PairedBatch:
    """The adjusted Wald interval's parts for many comparisons at once (one per row of differences).

    `centre` and `se` come from the n differences plus the pseudo-differences +1 and -1;
    `df` is n - 1 (at least 1). `paired` uses this for one comparison; simulations use it
    for thousands.
    """

    mean: Floats
    centre: Floats
    se: Floats
    df: Floats

    def bounds(self, level: float = LEVEL) -> tuple[Floats, Floats]:
        """(low, high) per row, clipped to [-1, 1] and widened, if need be, to hold the raw mean."""
        q = _t_quantiles(0.5 + level / 2, self.df)
        low = np.minimum(np.clip(self.centre - q * self.se, -1.0, 1.0), self.mean)
        high = np.maximum(np.clip(self.centre + q * self.se, -1.0, 1.0), self.mean)
        return low, high

    def pvalues(self) -> Floats:
        """The interval's own two-sided p-value for "no difference": the largest 1 - level excluding 0."""
        t = np.abs(self.centre) / self.se
        if t.size > SCIPY_FROM:
            from scipy import stats as sps

            return np.asarray(2 * sps.t.sf(t, self.df), dtype=np.float64)
        pairs = zip(t.ravel(), self.df.ravel(), strict=True)
        return np.asarray([2 * dist.t_sf(float(x), float(df)) for x, df in pairs], dtype=np.float64).reshape(t.shape)


def paired_batch(diffs: ArrayLike) -> PairedBatch:
    """The adjusted Wald parts for each row of a (comparisons x cases) array of differences in [-1, 1]."""
    d = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    n = d.shape[-1]
    total = n + 2.0
    centre = d.sum(axis=-1) / total
    second = ((d * d).sum(axis=-1) + 2.0) / total
    se = np.sqrt(np.maximum(second - centre * centre, 0.0) / total)
    return PairedBatch(d.mean(axis=-1), centre, se, np.full(d.shape[:-1], max(n - 1, 1), dtype=np.float64))


@dataclass(frozen=True)
class Paired:
    """A paired comparison of per-case scores: candidate - baseline over the same cases."""

    difference: Estimate
    p_value: float
    test: str
    improved: int
    regressed: int
    unchanged: int
    centre: float
    se: float
    df: int

    @property
    def n(self) -> int:
        return self.difference.n

    @property
    def mean_diff(self) -> float:
        return self.difference.mean

    @property
    def interval(self) -> Interval:
        return self.difference.interval

    @property
    def interval_pvalue(self) -> float:
        """The p-value of the test the interval inverts (what `holm_levels` orders by)."""
        return float(self._batch().pvalues()[0])

    def at_level(self, level: float) -> Paired:
        """The same comparison with its interval at another confidence level."""
        low, high = self._batch().bounds(level)
        interval = Interval(float(low[0]), float(high[0]), level)
        return replace(self, difference=replace(self.difference, interval=interval))

    def _batch(self) -> PairedBatch:
        return PairedBatch(
            np.array([self.mean_diff]), np.array([self.centre]), np.array([self.se]), np.array([float(self.df)])
        )


def paired(base: ArrayLike, cand: ArrayLike, *, level: float = LEVEL, seed: int = SEED) -> Paired:
    """Compare two aligned arrays of per-case mean scores (index i is the same case in both).

    Interval: the adjusted Wald interval (module docstring). p-value: exact McNemar
    (`scipy.stats.binomtest` on the discordant pairs) when every score is 0 or 1, else a
    two-sided paired sign-flip permutation test of the mean difference
    (`scipy.stats.permutation_test`), over the non-zero differences: exact when there are
    at most 13 (2**13 <= `RESAMPLES`), else `RESAMPLES` seeded resamples, and above
    `PERMUTATION_MAX_N` the normal approximation of that same sign-flip distribution
    (mean 0, variance sum d**2), which at that size is within the Monte Carlo error.
    """
    b, c = _aligned(base, cand)
    d = c - b
    batch = paired_batch(d)
    estimate = difference(b, c, level)
    p, test = _mcnemar(d) if is_binary(b) and is_binary(c) else _sign_flip(d, seed)
    changed = d[np.abs(d) > 1e-12]
    return Paired(
        estimate, p, test, int((changed > 0).sum()), int((changed < 0).sum()), d.size - changed.size,
        float(batch.centre[0]), float(batch.se[0]), int(batch.df[0]),
    )  # fmt: skip


def _aligned(base: ArrayLike, cand: ArrayLike) -> tuple[Floats, Floats]:
    b, c = _array(base, "baseline"), _array(cand, "candidate")
    if b.shape != c.shape:
        raise ValueError(f"paired: baseline has {b.size} cases, candidate {c.size}; align them by case first")
    return b, c


def difference(base: ArrayLike, cand: ArrayLike, level: float = LEVEL) -> Estimate:
    """The mean paired difference (candidate - baseline) with its adjusted Wald interval, without a test."""
    b, c = _aligned(base, cand)
    low, high = paired_batch(c - b).bounds(level)
    return Estimate(float((c - b).mean()), Interval(float(low[0]), float(high[0]), level), b.size)


def _mcnemar(d: Floats) -> tuple[float, str]:
    up, down = int((d > 0).sum()), int((d < 0).sum())
    p = dist.binom_two_sided_half(up, up + down)
    return min(p, 1.0), "exact McNemar"


def _mean_along(x: Floats, axis: int) -> Any:
    return np.mean(x, axis=axis)


def _sign_flip(d: Floats, seed: int) -> tuple[float, str]:
    nonzero = d[np.abs(d) > 1e-12]
    m = nonzero.size
    if m == 0:
        return 1.0, "sign-flip permutation, exact"
    if m > PERMUTATION_MAX_N:
        z = abs(float(nonzero.sum())) / math.sqrt(float((nonzero * nonzero).sum()))
        return min(1.0, 2 * (1.0 - dist.norm_cdf(z))), "sign-flip, normal approximation"
    from scipy import stats as sps

    res = sps.permutation_test(
        (nonzero,), _mean_along, permutation_type="samples", n_resamples=RESAMPLES, vectorized=True,
        batch=1_000, rng=np.random.default_rng(seed),
    )  # fmt: skip
    kind = "exact" if 2**m <= RESAMPLES else f"{RESAMPLES:,} resamples"
    return min(1.0, float(res.pvalue)), f"sign-flip permutation, {kind}"


def verdict(result: Paired | Interval, margin: float = 0.0) -> Verdict:
    """ship when the interval's lower bound is above `margin`, regress when its upper bound is below 0."""
    if margin < 0:
        raise ValueError(f"the margin must be >= 0 (a gain required to ship), got {margin}")
    interval = result.interval if isinstance(result, Paired) else result
    if interval.low > margin:
        return "ship"
    if interval.high < 0:
        return "regress"
    return "inconclusive"


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
    b, c = _aligned(base, cand)
    d, n = c - b, b.size
    if is_binary(b) and is_binary(c):
        pi = float(np.mean(d != 0))
        mde = minimum_detectable_effect_binary(n, pi, alpha=alpha, power=power, margin=margin)
        return Detectable(mde, n, pi, "discordance", power)
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    return Detectable(
        minimum_detectable_effect(n, sd, alpha=alpha, power=power, margin=margin), n, sd, "sd of differences", power
    )


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    k = p.size
    stepped = np.maximum.accumulate(np.minimum(1.0, (k - np.arange(k)) * p[order]))
    out = np.empty(k)
    out[order] = stepped
    return [float(x) for x in out]


def holm_levels(interval_pvalues: Sequence[float], alpha: float = 1 - LEVEL) -> list[float]:
    """The confidence level for each of k comparisons' intervals so that their verdicts follow Holm.

    Holm's step-down applied to intervals: order the comparisons by their interval's own
    p-value (`Paired.interval_pvalue`); the i-th (from 0) gets level 1 - alpha/(k - i) and
    may be decisive (ship or regress) only if every one before it was. The first whose
    interval at its level holds 0, and all after it, get that first one's level, at which
    each of their intervals holds 0 too, so every printed interval agrees with its verdict.
    The chance of any wrong decisive verdict over the k is at most alpha (Holm 1979; the
    intervals are nested in their level, so any ordering keeps that bound).
    """
    p = np.asarray(interval_pvalues, dtype=np.float64)
    k = p.size
    levels = np.empty(k)
    stop: float | None = None
    for i, idx in enumerate(np.argsort(p, kind="stable")):
        here = 1 - alpha / (k - i)
        if stop is None and p[idx] >= alpha / (k - i):
            stop = here
        levels[idx] = here if stop is None else stop
    return [float(x) for x in levels]


@dataclass(frozen=True)
class VarianceComponents:
    """One-way random-effects split of score variance: within cases (sampling noise) and between cases."""

    within: float
    between: float
    cases: int
    samples: int


def variance_components(samples_by_case: Mapping[str, Sequence[float]]) -> VarianceComponents:
    """Method-of-moments (ANOVA) estimates of within- and between-case variance; unequal repeats allowed.

    within = the pooled within-case variance; between = the variance of case means
    minus within times the mean of 1/K_i, floored at 0.
    """
    groups = [np.asarray(s, dtype=np.float64) for s in samples_by_case.values() if len(s) > 0]
    total = sum(g.size for g in groups)
    if len(groups) < 2 or total - len(groups) < 1:
        raise ValueError("variance components need two or more cases and one case with two or more samples")
    within = sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / (total - len(groups))
    means = np.array([g.mean() for g in groups])
    inverse_k = float(np.mean([1.0 / g.size for g in groups]))
    between = max(0.0, float(means.var(ddof=1)) - within * inverse_k)
    return VarianceComponents(within, between, len(groups), total)


def flaky_cases(samples_by_case: Mapping[str, Sequence[float]]) -> list[str]:
    """Ids of the cases whose samples disagree, sorted."""
    return sorted(case for case, s in samples_by_case.items() if len(s) > 1 and max(s) - min(s) > 1e-12)
