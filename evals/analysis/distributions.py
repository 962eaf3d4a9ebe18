"""Student t, normal and binomial tail functions without scipy, for the command lines' fast path.

Importing scipy costs a fresh `compare` two to eight times what importing numpy does,
so the paired comparison (the adjusted Wald interval and its one-sided p-values), the
Wilson interval and the detectable difference use these instead. They
agree with scipy's to about 1e-12 (tests/analysis/test_distributions.py checks them against
scipy); scipy is still imported, when needed, for the bootstrap and the permutation test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

__all__ = ["binom_two_sided_half", "norm_cdf", "norm_ppf", "root", "t_ppf", "t_sf", "wilson"]

_NORMAL = NormalDist()
_EPS = 1e-16
_TINY = 1e-300


def norm_cdf(x: float) -> float:
    return _NORMAL.cdf(x)


def norm_ppf(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def _t_pdf(t: float, df: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def t_ppf(p: float, df: float) -> float:
    """The p-quantile of Student's t: Newton's method on `t_sf`, bracketed by bisection."""
    if not 0.0 < p < 1.0:
        return -math.inf if p <= 0.0 else math.inf
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while 1.0 - t_sf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    x = min(max(norm_ppf(p), lo), hi)
    for _ in range(200):
        f = (1.0 - t_sf(x, df)) - p
        if f > 0:
            hi = x
        else:
            lo = x
        step = f / max(_t_pdf(x, df), _TINY)
        nxt = x - step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - x) <= 1e-14 * max(1.0, abs(x)):
            return nxt
        x = nxt
    return x


def binom_two_sided_half(k: int, n: int) -> float:
    """The exact two-sided binomial test's p-value for k of n at p = 1/2 (scipy's `binomtest(k, n).pvalue`)."""
    if n == 0:
        return 1.0
    low = min(k, n - k)
    if 2 * low == n:
        return 1.0
    tail = math.fsum(math.comb(n, i) for i in range(low + 1)) / 2.0**n if n < 1000 else _log_tail(low, n)
    return min(1.0, 2.0 * tail)


def _log_tail(low: int, n: int) -> float:
    log_half = n * math.log(2)
    log_terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - log_half for i in range(low + 1)]
    top = max(log_terms)
    return math.exp(top) * math.fsum(math.exp(t - top) for t in log_terms)


def wilson(successes: int, n: int, level: float) -> tuple[float, float]:
    """The Wilson score interval (scipy's `binomtest(...).proportion_ci(method="wilson")`)."""
    z = norm_ppf(0.5 + level / 2.0)
    total = n + z * z
    centre = (successes + z * z / 2.0) / total
    delta = z / total * math.sqrt(successes * (n - successes) / n + z * z / 4.0)
    return max(0.0, centre - delta), min(1.0, centre + delta)


def root(f: Callable[[float], float], lo: float, hi: float, *, xtol: float = 1e-12) -> float:
    """A root of `f` in [lo, hi], where f changes sign, by bisection."""
    f_lo = f(lo)
    for _ in range(200):
        mid = (lo + hi) / 2.0
        f_mid = f(mid)
        if (f_mid > 0) == (f_lo > 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
        if hi - lo <= xtol:
            break
    return (lo + hi) / 2.0
