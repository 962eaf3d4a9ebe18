"""The decision rule's validity: a seeded Monte Carlo of `compare`'s ship rule in known regimes.

`python -m benchmarks.bench_validity` prints one line per regime, `REGIME n=N false_ship=X
power=Y`: X is the share of simulated comparisons that ship when the true mean
difference is exactly the margin (the worst case of "no better than the margin"), Y the
share that ship when it is the minimum detectable effect the comparison prints (the MDE
of the combined rule: the mean test at its share of the error budget, with the tail
guard on), `n/a` when no effect within the regime's reach is detectable at that n.
The rule is the one `compare` applies (`evals.analysis.paired.ships_batch`: the adjusted
Wald interval at 97.5% above the margin, and no excess of large regressions by the exact
binomial test), and the MDE is `evals.analysis.power`'s, from the regime's spread.

Regimes: 0/1 scores with 1-100% of cases discordant at n = 10, 20, 40 and 144; graded
exchangeable scores (two draws from one five-level distribution, scaled by 0.8 so that
a shift stays in range); graded with rare large losses (2% of cases at -1, 98% at +g,
the mean at the margin) at n = 144 and 300; three repeats per case (a case's pass rate
drawn uniformly, three 0/1 samples per run); each at margin 0 and at margin 0.05.
Targets: every false ship rate <= 0.05; power at the MDE >= 0.75.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from benchmarks._common import Row, print_rows, script_command
from evals.analysis.paired import MEAN_ALPHA, ships_batch
from evals.analysis.power import minimum_detectable_effect, minimum_detectable_effect_binary

__all__ = ["Regime", "regimes", "run"]

SEED = 20_261_206
SIMS = 20_000  # comparisons simulated per regime and truth: a rate's standard error is at most 0.0035
MARGINS = (0.0, 0.05)
FALSE_SHIP_MAX = 0.05
POWER_MIN = 0.75
CHUNK = 2_000_000  # differences drawn at once (memory)

Draw = Callable[[np.random.Generator, int, int, float], np.ndarray]  # (rng, sims, n, true mean) -> sims x n


@dataclass(frozen=True)
class Regime:
    """A family of per-case differences whose true mean can be set, at one n and margin."""

    name: str
    n: int
    margin: float
    draw: Draw
    mde: float  # the printed MDE for this n and spread; inf when out of reach


@dataclass(frozen=True)
class Found:
    regime: Regime
    false_ship: float
    power: float | None

    def line(self) -> str:
        power = "n/a" if self.power is None else f"{self.power:.3f}"
        return f"{self.regime.name} n={self.regime.n} false_ship={self.false_ship:.4f} power={power}"


def _binary(pi: float) -> Draw:
    def draw(rng: np.random.Generator, sims: int, n: int, delta: float) -> np.ndarray:
        u = rng.random((sims, n))
        up, down = (pi + delta) / 2, (pi - delta) / 2
        return np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))

    return draw


_LEVELS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
_SCALE = 0.8


def _graded(rng: np.random.Generator, sims: int, n: int, delta: float) -> np.ndarray:
    x, y = rng.choice(_LEVELS, (sims, n)) * _SCALE, rng.choice(_LEVELS, (sims, n)) * _SCALE
    return (y + delta) - x  # the candidate's scores shifted by delta, still within [0, 1] for delta <= 0.2


_LOSS_SHARE = 0.02


def _rare_losses(rng: np.random.Generator, sims: int, n: int, mean: float) -> np.ndarray:
    gain = (mean + _LOSS_SHARE) / (1 - _LOSS_SHARE)
    return np.where(rng.random((sims, n)) < _LOSS_SHARE, -1.0, gain)


def _rare_sd(mean: float) -> float:
    gain = (mean + _LOSS_SHARE) / (1 - _LOSS_SHARE)
    return math.sqrt(_LOSS_SHARE * (1 - _LOSS_SHARE)) * (1 + gain)


_REPEATS = 3


def _repeats(rng: np.random.Generator, sims: int, n: int, mean: float) -> np.ndarray:
    """Each case's pass rate p ~ U(0, 1) in the baseline, min(1, p + s) in the candidate (mean shift s - s**2/2)."""
    shift = 1 - math.sqrt(max(1 - 2 * mean, 0.0))
    p = rng.random((sims, n, 1))
    base = (rng.random((sims, n, _REPEATS)) < p).mean(axis=-1)
    cand = (rng.random((sims, n, _REPEATS)) < np.minimum(1.0, p + shift)).mean(axis=-1)
    return np.asarray(cand - base, dtype=np.float64)


def _mde(draw: Draw, n: int, margin: float) -> float:
    """The MDE `compare` prints for this regime: from the sd and the shares of large losses and gains of one
    large seeded sample of its differences with the mean at the margin."""
    d = draw(np.random.default_rng(SEED), 1, 200_000, margin)
    large = (float(np.mean(d <= -0.5)), float(np.mean(d >= 0.5)))
    return minimum_detectable_effect(n, float(d.std()), alpha=MEAN_ALPHA, margin=margin, large=large)


def regimes() -> Iterator[Regime]:
    """Every regime, at each margin: its name, n, draw and printed MDE."""
    for margin in MARGINS:
        at = f",margin={margin:g}"
        for pi in (0.01, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0):
            if pi < margin:
                continue  # a true difference of `margin` needs at least that share of cases to change
            for n in (10, 20, 40, 144):
                mde = minimum_detectable_effect_binary(n, pi, alpha=MEAN_ALPHA, margin=margin)
                yield Regime(f"binary(discordance={pi:g}{at})", n, margin, _binary(pi), mde)
        for n in (40, 144):
            mde = _mde(_graded, n, margin)
            yield Regime(f"graded-exchangeable({at[1:]})", n, margin, _graded, mde if mde <= 0.2 else math.inf)
        for n in (144, 300):
            yield Regime(f"rare-large-losses({at[1:]})", n, margin, _rare_losses, _rare_mde(n, margin))
        for n in (40, 144):
            mde = _mde(_repeats, n, margin)
            yield Regime(f"repeats-3({at[1:]})", n, margin, _repeats, mde if mde <= 0.5 else math.inf)


def _rare_mde(n: int, margin: float) -> float:
    """The printed MDE of the rare-losses regime: its sd depends on the effect, so iterate to the fixed point."""
    mde = margin
    for _ in range(20):
        if math.isinf(mde):
            break
        mde = minimum_detectable_effect(n, _rare_sd(mde), alpha=MEAN_ALPHA, margin=margin, large=(_LOSS_SHARE, 0.0))
    return mde


def _ship_rate(regime: Regime, rng: np.random.Generator, mean: float) -> float:
    ships, per = 0, max(1, CHUNK // regime.n)
    for start in range(0, SIMS, per):
        d = regime.draw(rng, min(per, SIMS - start), regime.n, mean)
        ships += int(ships_batch(d, regime.margin).sum())
    return ships / SIMS


def measure(regime: Regime, rng: np.random.Generator) -> Found:
    false_ship = _ship_rate(regime, rng, regime.margin)
    power = None if math.isinf(regime.mde) else _ship_rate(regime, rng, regime.mde)
    return Found(regime, false_ship, power)


def run() -> list[Row]:
    """Every regime measured and printed; the rows for RESULTS.md, one per regime family."""
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    found = []
    for regime in regimes():
        f = measure(regime, rng)
        print(f.line(), flush=True)
        found.append(f)
    seconds = time.perf_counter() - start
    families: dict[str, list[Found]] = {}
    for f in found:
        families.setdefault(f.regime.name.split("(")[0], []).append(f)
    return [_row(name, group, seconds) for name, group in families.items()]


def _row(name: str, group: list[Found], seconds: float) -> Row:
    worst = max(f.false_ship for f in group)
    powers = [f.power for f in group if f.power is not None]
    low = min(powers) if powers else None
    met = worst <= FALSE_SHIP_MAX and (low is None or low >= POWER_MIN)
    reach = f"{len(powers)} of {len(group)} regimes have an MDE within reach"
    return Row(
        f"decision rule validity: {name}",
        f"worst false ship {worst:.4f}; lowest power at the MDE {'n/a' if low is None else f'{low:.3f}'}",
        f"nominal: false ship <= {FALSE_SHIP_MAX}, power 0.8 at the printed MDE",
        f"{len(group)} regimes x {SIMS:,} comparisons per truth",
        f"false ship <= {FALSE_SHIP_MAX} in every regime; power at the MDE >= {POWER_MIN}",
        met,
        script_command("bench_validity"),
        [f"{reach}; all regimes together took {seconds:.0f} s", *(f.line() for f in group)],
    )


def main() -> int:
    rows = run()
    print_rows(rows)
    return 0 if all(r.met for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
