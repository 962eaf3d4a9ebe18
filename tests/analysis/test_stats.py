"""evals.analysis.stats: checked by simulation against a known truth, plus hand cases.

Each simulation draws 2,000 datasets at once from a seeded numpy Generator and asserts
the rate a user relies on (coverage, false ship, power, familywise error) with a
tolerance a correct procedure passes nearly always: at 2,000 draws a rate's standard
error is about half a point. `python -m tests.analysis.test_stats` prints every rate.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats as sps  # type: ignore[import-untyped]

from evals.analysis.paired import TEST, holm, holm_levels, paired, paired_batch, verdict
from evals.analysis.power import detectable_from, minimum_detectable_effect, minimum_detectable_effect_binary
from evals.analysis.stats import (
    Estimate,
    Interval,
    decimals_for,
    flaky_cases,
    is_binary,
    mean_estimate,
    proportion,
    variance_components,
)

Floats = NDArray[np.float64]
SIMS = 2_000
SIZES = (16, 40, 100, 300)
BINARY = (0.0, 1.0)
FIVE = (0.0, 0.25, 0.5, 0.75, 1.0)
REACTION = (0.0, 0.75, 1.0)


@dataclass(frozen=True)
class Joint:
    """A joint distribution of (baseline, candidate) scores for one case: the truth a simulation draws from."""

    name: str
    levels: tuple[float, ...]
    table: Floats  # table[i, j] = P(baseline = levels[i], candidate = levels[j])

    @property
    def truth(self) -> float:
        v = np.asarray(self.levels)
        return float((self.table * (v[None, :] - v[:, None])).sum())

    def draw(self, rng: np.random.Generator, n: int, sims: int = SIMS) -> tuple[Floats, Floats]:
        k = len(self.levels)
        cells = rng.choice(k * k, size=(sims, n), p=self.table.ravel() / self.table.sum())
        v = np.asarray(self.levels)
        return v[cells // k], v[cells % k]


def _moves(name: str, levels: tuple[float, ...], base: list[float], moves: dict[int, float]) -> Joint:
    """Baseline level i with probability base[i]; the candidate moves by `step` levels with moves[step] (clamped)."""
    k = len(levels)
    table = np.zeros((k, k))
    for i, pb in enumerate(base):
        for step, pm in moves.items():
            table[i, min(k - 1, max(0, i + step))] += pb * pm
    return Joint(name, levels, table)


def _table(name: str, levels: tuple[float, ...], rows: list[list[float]]) -> Joint:
    return Joint(name, levels, np.asarray(rows, dtype=np.float64))


def coverage_scenarios() -> Iterator[Joint]:
    """0/1 scores, five-level scores and reaction-like {0, .75, 1}: nulls, gains, losses, rare one-way changes."""
    yield _table("0/1 null, 20% change", BINARY, [[0.3, 0.1], [0.1, 0.5]])
    yield _table("0/1 gain, 30% change", BINARY, [[0.25, 0.2], [0.1, 0.45]])
    yield _table("0/1 rare one-way gain", BINARY, [[0.49, 0.0695], [0.0015, 0.439]])
    yield _table("0/1 rare one-way loss", BINARY, [[0.84, 0.01], [0.135, 0.015]])
    yield _table("0/1 near ceiling", BINARY, [[0.02, 0.06], [0.02, 0.9]])
    yield _table("0/1 coin flips", BINARY, [[0.25, 0.25], [0.25, 0.25]])
    flat5 = [0.2] * 5
    yield _moves("five-level null, one-step moves", FIVE, flat5, {0: 0.6, 1: 0.2, -1: 0.2})
    yield _moves("five-level gain, one-step moves", FIVE, flat5, {0: 0.6, 1: 0.3, -1: 0.1})
    yield _moves("five-level rare jumps to the top", FIVE, [0.4, 0.2, 0.2, 0.1, 0.1], {0: 0.88, 4: 0.1, -4: 0.02})
    yield _moves("five-level mostly 0/1, rare loss", FIVE, [0.5, 0.05, 0.0, 0.05, 0.4], {0: 0.85, -1: 0.03, -4: 0.12})
    yield Joint("five-level random table", FIVE, np.random.default_rng(5).dirichlet(np.full(25, 0.5)).reshape(5, 5))
    yield _table("reaction-like null", REACTION, [[0.2, 0.05, 0.05], [0.05, 0.2, 0.05], [0.05, 0.05, 0.3]])
    yield _table("reaction-like gain", REACTION, [[0.15, 0.1, 0.1], [0.02, 0.2, 0.08], [0.02, 0.03, 0.3]])
    yield _table("reaction-like rare fixes", REACTION, [[0.3, 0.0, 0.06], [0.0, 0.3, 0.01], [0.005, 0.0, 0.325]])


def coverage(joint: Joint, n: int, seed: int) -> float:
    base, cand = joint.draw(np.random.default_rng(seed), n)
    low, high = paired_batch(cand - base).bounds()
    return float(np.mean((low <= joint.truth) & (joint.truth <= high)))


SCENARIOS = list(coverage_scenarios())


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("joint", SCENARIOS, ids=[j.name for j in SCENARIOS])
def test_the_paired_interval_covers_the_true_difference(joint: Joint, n: int) -> None:
    assert coverage(joint, n, seed=n) >= 0.93


def test_a_percentile_bootstrap_would_fail_the_coverage_bar() -> None:
    """The bar is not slack: at n=16 a rare one-way gain defeats an interval built from the observed spread."""
    joint = SCENARIOS[2]
    base, cand = joint.draw(np.random.default_rng(1), 16, sims=400)
    d = cand - base
    res = sps.bootstrap((d,), np.mean, axis=-1, n_resamples=999, method="percentile", rng=np.random.default_rng(2))
    low, high = res.confidence_interval
    assert np.mean((np.nan_to_num(low, nan=0.0) <= joint.truth) & (joint.truth <= np.nan_to_num(high, nan=0.0))) < 0.9


def same_distribution(levels: tuple[float, ...], n: int, seed: int, concentration: float) -> tuple[Floats, Floats]:
    """Two runs of one prompt: each case has its own score distribution; both runs draw from it independently."""
    rng = np.random.default_rng(seed)
    k = len(levels)
    probs = rng.dirichlet(np.full(k, concentration), size=(SIMS, n))
    cum = probs.cumsum(axis=-1)
    v = np.asarray(levels, dtype=np.float64)

    def draw() -> Floats:
        u = rng.random((SIMS, n, 1))
        return np.asarray(v[np.minimum((u > cum).sum(axis=-1), k - 1)], dtype=np.float64)

    return draw(), draw()


def decisive_rate(base: Floats, cand: Floats, margin: float = 0.0) -> float:
    low, high = paired_batch(cand - base).bounds()
    verdicts = [verdict(Interval(float(lo), float(hi)), margin) for lo, hi in zip(low, high, strict=True)]
    return sum(v != "inconclusive" for v in verdicts) / len(verdicts)


NULLS = {
    "0/1 mostly settled": (BINARY, 0.3),
    "0/1 noisy": (BINARY, 2.0),
    "five-level": (FIVE, 0.5),
    "reaction-like": (REACTION, 0.3),
}
# A 95% interval is decisive on 5% of null comparisons in expectation (less, as the adjustment is
# conservative at small n); a single 2,000-draw rate has a standard error of 0.49 points, so each
# configuration is held to 5% plus two standard errors, and the pooled 32,000 comparisons to 5%.
ONE_CONFIG_BAR = 0.05 + 2 * math.sqrt(0.05 * 0.95 / SIMS)


@functools.cache
def null_rate(name: str, n: int) -> float:
    levels, concentration = NULLS[name]
    return decisive_rate(*same_distribution(levels, n, seed=n, concentration=concentration))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", NULLS)
def test_two_runs_of_one_prompt_rarely_ship_or_regress(name: str, n: int) -> None:
    assert null_rate(name, n) <= ONE_CONFIG_BAR


def test_over_all_configurations_two_runs_of_one_prompt_ship_or_regress_at_most_5_percent() -> None:
    assert float(np.mean([null_rate(name, n) for name in NULLS for n in SIZES])) <= 0.05


def test_the_readme_optimiser_example_is_inconclusive() -> None:
    """8 better, 3 worse, 9 unchanged on 20 cases, 0/1 scores: the showcased accept."""
    base = [0.0] * 8 + [1.0] * 3 + [1.0] * 5 + [0.0] * 4
    cand = [1.0] * 8 + [0.0] * 3 + [1.0] * 5 + [0.0] * 4
    result = paired(base, cand)
    assert (result.improved, result.regressed, result.unchanged) == (8, 3, 9)
    assert result.test == TEST
    assert result.p_value >= 0.05  # the interval's own test: it agrees with the verdict
    assert result.interval.low < 0 < result.interval.high
    assert verdict(result) == "inconclusive"


def test_for_0_1_scores_the_interval_is_bonett_price_with_a_t_quantile() -> None:
    """Bonett and Price (2012): add one to each discordant cell; here with Student t on n - 1 df."""
    base = [0.0] * 8 + [1.0] * 3 + [1.0] * 5 + [0.0] * 4
    cand = [1.0] * 8 + [0.0] * 3 + [1.0] * 5 + [0.0] * 4
    up, down, n = 9 / 22, 4 / 22, 20
    centre, se = up - down, math.sqrt((up + down - (up - down) ** 2) / (n + 2))
    q = sps.t.ppf(0.975, n - 1)
    result = paired(base, cand)
    assert (result.interval.low, result.interval.high) == pytest.approx((centre - q * se, centre + q * se))
    assert result.mean_diff == pytest.approx(5 / 20)  # the point estimate is the plain mean difference


def binary_at(n: int, discordance: float, delta: float, seed: int) -> tuple[Floats, Floats]:
    up, down = (discordance + delta) / 2, (discordance - delta) / 2
    same = (1 - discordance) / 2
    return _table("", BINARY, [[same, up], [down, same]]).draw(np.random.default_rng(seed), n)


def steps_at(n: int, sd: float, delta: float, seed: int) -> tuple[Floats, Floats]:
    """Scores in {.25, .5, .75} moving one quarter up or down: mean difference delta, sd of differences sd."""
    both = 16 * (sd * sd + delta * delta)
    up, down = (both + 4 * delta) / 2, (both - 4 * delta) / 2
    assert down >= 0 and up + down <= 1
    return _moves("", FIVE, [0, 1 / 3, 1 / 3, 1 / 3, 0], {1: up, -1: down, 0: 1 - up - down}).draw(
        np.random.default_rng(seed), n
    )


def ship_rate(base: Floats, cand: Floats) -> float:
    low, _ = paired_batch(cand - base).bounds()
    return float(np.mean([verdict(Interval(float(lo), 1.0)) == "ship" for lo in low]))


@pytest.mark.parametrize("n", [40, 100])
def test_the_mde_for_0_1_scores_is_detected_80_percent_of_the_time(n: int) -> None:
    mde = minimum_detectable_effect_binary(n, 0.3)
    assert abs(ship_rate(*binary_at(n, 0.3, mde, seed=n)) - 0.8) <= 0.05


@pytest.mark.parametrize("n", [40, 100])
def test_the_mde_for_graded_scores_is_detected_80_percent_of_the_time(n: int) -> None:
    mde = minimum_detectable_effect(n, 0.15)
    assert abs(ship_rate(*steps_at(n, 0.15, mde, seed=n)) - 0.8) <= 0.05


def test_the_mde_shrinks_with_n_and_grows_with_spread() -> None:
    assert minimum_detectable_effect(100, 0.2) < minimum_detectable_effect(40, 0.2) < minimum_detectable_effect(40, 0.3)
    assert minimum_detectable_effect_binary(100, 0.3) < minimum_detectable_effect_binary(40, 0.3)
    assert minimum_detectable_effect_binary(40, 0.02) == math.inf  # so few changes cannot carry 80% power


def test_detectable_from_reads_discordance_for_0_1_and_sd_otherwise() -> None:
    base, cand = [0.0, 1.0, 1.0, 0.0] * 10, [1.0, 1.0, 0.0, 0.0] * 10
    binary = detectable_from(base, cand)
    assert (binary.spread_name, binary.spread) == ("discordance", 0.5)
    assert binary.effect == minimum_detectable_effect_binary(40, 0.5)
    graded = detectable_from([0.5, 0.25] * 20, [0.75, 0.25] * 20)
    assert graded.spread_name == "sd of differences"
    assert graded.effect == minimum_detectable_effect(40, float(np.std([0.25, 0.0] * 20, ddof=1)))
    assert "at 80% power (n=40, discordance 0.50)" in binary.format()


def test_holm_adjusts_a_hand_case() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]
    assert holm([0.02, 0.02]) == pytest.approx([0.04, 0.04])


def test_holm_adjusted_pvalues_keep_the_order_and_never_drop() -> None:
    p = np.random.default_rng(3).random(50) ** 3
    adjusted = np.asarray(holm(list(p)))
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)
    assert np.all(adjusted >= p)
    assert np.all(adjusted <= 1)


def test_holm_levels_step_down_and_stop_at_the_first_undecided() -> None:
    assert holm_levels([0.001, 0.2, 0.01]) == pytest.approx([1 - 0.05 / 3, 0.95, 0.975])
    # the second smallest misses 0.05/2: it and everything after share its level
    assert holm_levels([0.001, 0.03, 0.04]) == pytest.approx([1 - 0.05 / 3, 0.975, 0.975])


def familywise_error(joints: list[Joint], n: int, seed: int) -> float:
    """Share of simulated families (one comparison per joint) with any wrong decisive verdict after Holm."""
    rng = np.random.default_rng(seed)
    batches = [paired_batch(c - b) for b, c in (j.draw(rng, n) for j in joints)]
    pvalues = np.stack([b.pvalues() for b in batches], axis=1)
    k = len(joints)
    bounds = {
        (t, round(lv, 9)): batches[t].bounds(lv) for t in range(k) for lv in (1 - 0.05 / (k - i) for i in range(k))
    }
    errors = 0
    for s in range(SIMS):
        wrong = False
        for task, level in enumerate(holm_levels(list(pvalues[s]))):
            low, high = bounds[task, round(level, 9)]
            decided = verdict(Interval(float(low[s]), float(high[s]), level))
            truth = joints[task].truth
            wrong |= (decided == "ship" and truth <= 0) or (decided == "regress" and truth >= 0)
        errors += wrong
    return errors / SIMS


@pytest.mark.parametrize("n", [16, 100])
def test_holm_keeps_the_familywise_error_of_three_null_tasks_at_5_percent(n: int) -> None:
    nulls = [SCENARIOS[0], SCENARIOS[6], SCENARIOS[11]]
    assert familywise_error(nulls, n, seed=n) <= 0.05


def test_without_holm_three_null_tasks_err_more_often() -> None:
    """The guard's reason: three tasks each at 95% give a wrong verdict in about 1 family of 7."""
    rng = np.random.default_rng(9)
    nulls = [SCENARIOS[0], SCENARIOS[6], SCENARIOS[11]]
    bounds = [paired_batch(c - b).bounds() for b, c in (j.draw(rng, 100) for j in nulls)]
    any_decisive = np.zeros(SIMS, dtype=bool)
    for low, high in bounds:
        any_decisive |= (low > 0) | (high < 0)
    assert any_decisive.mean() > 0.08


def test_proportion_is_wilson() -> None:
    est = proportion(13, 39)
    assert est.format() == "0.33 [0.21, 0.49] n=39"
    z = sps.norm.ppf(0.975)
    p, n = 13 / 39, 39
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (est.interval.low, est.interval.high) == pytest.approx((centre - half, centre + half))


def test_mean_estimate_uses_wilson_for_0_1_and_a_bootstrap_otherwise() -> None:
    assert mean_estimate([1.0, 0.0, 1.0, 1.0]) == proportion(3, 4)
    values = np.random.default_rng(4).choice(FIVE, size=60)
    est = mean_estimate(values)
    again = mean_estimate(values)
    assert est == again  # seeded
    boot = sps.bootstrap((values,), np.mean, n_resamples=9_999, batch=1_000, rng=np.random.default_rng(20_241_114))
    assert (est.interval.low, est.interval.high) == pytest.approx(
        (boot.confidence_interval.low, boot.confidence_interval.high)
    )


def test_mean_estimate_of_equal_values_is_a_point() -> None:
    est = mean_estimate([0.5] * 10)
    assert (est.mean, est.interval.low, est.interval.high) == (0.5, 0.5, 0.5)


def test_mean_estimate_of_two_values_stays_within_them() -> None:
    est = mean_estimate([0.25, 0.5])
    assert 0.25 <= est.interval.low <= est.mean <= est.interval.high <= 0.5


def test_mean_estimate_of_a_large_run_is_the_t_interval() -> None:
    values = np.random.default_rng(6).choice(FIVE, size=5_000)
    est = mean_estimate(values)
    low, high = sps.t.interval(0.95, 4_999, loc=values.mean(), scale=values.std(ddof=1) / math.sqrt(5_000))
    assert (est.interval.low, est.interval.high) == pytest.approx((low, high))


@pytest.mark.parametrize("bad", [[], [0.5, 1.5], [float("nan")]])
def test_scores_outside_0_1_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="scores"):
        mean_estimate(bad)


def test_paired_refuses_unaligned_runs() -> None:
    with pytest.raises(ValueError, match="align them by case"):
        paired([0.0, 1.0], [1.0])


def test_a_zero_difference_has_p_one_and_a_nondegenerate_interval() -> None:
    same = [0.0, 1.0] * 8
    result = paired(same, same)
    assert result.p_value == 1.0
    assert result.interval.low < 0 < result.interval.high  # 16 unchanged cases do not prove "no difference"


def test_at_level_widens_the_interval_and_keeps_the_rest() -> None:
    result = paired([0.0] * 10 + [1.0] * 30, [1.0] * 10 + [1.0] * 30)
    wider = result.at_level(0.99)
    assert wider.interval.low < result.interval.low and wider.interval.level == 0.99
    assert (wider.p_value, wider.mean_diff, wider.n) == (result.p_value, result.mean_diff, result.n)


def test_verdict_reads_the_interval_against_the_margin() -> None:
    assert verdict(Interval(0.01, 0.2)) == "ship"
    assert verdict(Interval(0.01, 0.2), margin=0.02) == "inconclusive"
    assert verdict(Interval(-0.2, -0.01)) == "regress"
    assert verdict(Interval(-0.2, 0.2)) == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        verdict(Interval(0.1, 0.2), margin=-0.1)


@pytest.mark.parametrize(
    ("width", "decimals"), [(0.25, 2), (0.05, 2), (0.04, 3), (0.004, 4), (0.9, 2), (0.0, 2), (1e-9, 6)]
)
def test_decimals_follow_the_interval_width(width: float, decimals: int) -> None:
    assert decimals_for(width) == decimals


def test_estimates_format_to_the_precision_their_interval_supports() -> None:
    assert Estimate(1 / 3, Interval(0.21, 0.46), 39).format() == "0.33 [0.21, 0.46] n=39"
    assert Estimate(0.3333, Interval(0.3201, 0.3512), 4000).format() == "0.333 [0.320, 0.351] n=4000"
    assert Estimate(-0.0001, Interval(-0.2, 0.3), 5).format(signed=True) == "+0.00 [-0.20, +0.30] n=5"


def test_is_binary() -> None:
    assert is_binary([0, 1, 1.0]) and not is_binary([0, 0.5])


def test_variance_components_recover_known_variances() -> None:
    """600 cases x 4 samples: case means with variance 0.04, sampling noise with variance 0.01."""
    rng = np.random.default_rng(10)
    means = rng.normal(0.5, 0.2, size=600)
    samples = {f"c{i}": list(m + rng.normal(0, 0.1, size=4)) for i, m in enumerate(means)}
    vc = variance_components(samples)
    assert (vc.cases, vc.samples) == (600, 2400)
    assert vc.within == pytest.approx(0.01, rel=0.1)
    assert vc.between == pytest.approx(0.04, rel=0.15)


def test_variance_components_by_hand_with_unequal_repeats() -> None:
    vc = variance_components({"a": [1.0, 0.0], "b": [1.0, 1.0, 1.0], "c": [0.0]})
    # within: (0.25 + 0.25) / (6 - 3); case means 0.5, 1, 0 -> var 0.25; minus within * mean(1/2, 1/3, 1)
    assert vc.within == pytest.approx(1 / 6)
    assert vc.between == pytest.approx(0.25 - (1 / 6) * (1 / 2 + 1 / 3 + 1) / 3)
    with pytest.raises(ValueError, match="two or more samples"):
        variance_components({"a": [1.0], "b": [0.0]})


def test_flaky_cases_are_those_whose_samples_disagree() -> None:
    assert flaky_cases({"b": [1, 0, 1], "a": [0.5, 0.5], "c": [1], "d": [0, 0.25]}) == ["b", "d"]


def report() -> None:
    """Print every simulated rate (the figures quoted in the report)."""
    print("coverage of the 95% paired interval (2,000 simulated pairs of runs each)")
    for joint in SCENARIOS:
        rates = "  ".join(f"n={n}: {coverage(joint, n, seed=n):.3f}" for n in SIZES)
        print(f"  {joint.name:<36} truth {joint.truth:+.3f}  {rates}")
    print("ship or regress between two runs of one prompt")
    for name in NULLS:
        print(f"  {name:<20} " + "  ".join(f"n={n}: {null_rate(name, n):.3f}" for n in SIZES))
    print(f"  pooled: {np.mean([null_rate(name, n) for name in NULLS for n in SIZES]):.3f}")
    print("ship rate when the true difference is the printed MDE")
    for n in (40, 100):
        mb, mc = minimum_detectable_effect_binary(n, 0.3), minimum_detectable_effect(n, 0.15)
        print(f"  n={n} 0/1, discordance 0.3: MDE {mb:.3f} -> {ship_rate(*binary_at(n, 0.3, mb, n)):.3f}")
        print(f"  n={n} graded, sd 0.15:      MDE {mc:.3f} -> {ship_rate(*steps_at(n, 0.15, mc, n)):.3f}")
    nulls = [SCENARIOS[0], SCENARIOS[6], SCENARIOS[11]]
    for n in (16, 100):
        print(f"familywise error, 3 null tasks with Holm, n={n}: {familywise_error(nulls, n, n):.3f}")


if __name__ == "__main__":
    report()
    sys.exit(0)
