"""Comparison speed: `compare` of two synthetic 10,000-sample runs, in seconds (target < 1 s).

Three shapes, each two runs of one task with every case in both:
- 10,000 cases of 0/1 scores (reaction-like),
- 10,000 cases of graded scores (tagging-like F1 in fifths),
- 2,500 cases x 4 repeats of graded scores (repeats averaged within a case).
Five families, a changed answer text per case, and a few provenance keys. The
reference is the bare arithmetic on the same runs (per-case means and the mean
paired difference in plain Python), so the ratio says what the statistics, the case
lists and the families cost on top. Renderers are timed separately in the notes.
"""

from __future__ import annotations

import statistics

import numpy as np

from benchmarks._common import REPEATS, Row, Spread, print_rows, rotated, script_command, timed
from evals.analysis.comparison import RunScores, compare
from evals.render.comparison_json import to_json
from evals.render.comparison_markdown import to_markdown
from evals.render.comparison_text import to_text

__all__ = ["run"]

TARGET_S = 1.0
SHAPES = {"0/1, 10,000 cases": (10_000, 1, (0.0, 1.0)), "graded, 10,000 cases": (10_000, 1, (0, 0.2, 0.4, 0.6, 0.8, 1))}
SHAPES["graded, 2,500 cases x 4"] = (2_500, 4, (0, 0.2, 0.4, 0.6, 0.8, 1))


def _runs(cases: int, repeat: int, levels: tuple[float, ...], seed: int) -> tuple[RunScores, RunScores]:
    rng = np.random.default_rng(seed)
    ids = [f"fx-{i:05d}" for i in range(cases)]
    family = {c: ("bait", "adjacent", "terse", "crossover", "fixture")[i % 5] for i, c in enumerate(ids)}
    runs = []
    for name, tilt in (("base", 0.0), ("cand", 0.05)):
        p = np.clip(np.linspace(0.2, 0.8, len(levels)) + tilt, 0.01, None)
        draws = rng.choice(levels, size=(cases, repeat), p=p / p.sum())
        samples = {c: [float(x) for x in row] for c, row in zip(ids, draws, strict=True)}
        answers = {c: f'{{"verdict": true, "reasoning": "{name} answer for {c}"}}' for c in ids}
        prov = {"prompt_fingerprint": f"sha-{name}", "model": "smollm2", "options": {"temperature": 0.8}}
        runs.append(RunScores("reaction", f"run-{name}", samples, family, answers, {}, prov))
    return runs[0], runs[1]


def _bare(base: RunScores, cand: RunScores) -> float:
    """The reference: pair by id, average repeats, mean difference; plain Python, no statistics."""
    ids = sorted(set(base.samples) & set(cand.samples))
    diffs = [sum(cand.samples[c]) / len(cand.samples[c]) - sum(base.samples[c]) / len(base.samples[c]) for c in ids]
    return sum(diffs) / len(diffs)


def _measure(base: RunScores, cand: RunScores) -> tuple[list[float], list[float], list[float], str]:
    """Seconds for `compare`, for the reference and for the three renderers, REPEATS times each."""
    ours: list[float] = []
    ref: list[float] = []
    render: list[float] = []
    test = ""
    for i in range(REPEATS):
        for who in rotated(["ours", "ref"], i):
            if who == "ref":
                ref.append(timed(lambda: _bare(base, cand))[1])
                continue
            x, seconds = timed(lambda: compare(base, cand))
            ours.append(seconds)
            render.append(timed(lambda: (to_text(x), to_markdown(x), to_json(x)))[1])  # noqa: B023 (called at once)
            test = x.paired.test
    return ours, ref, render, test


def run() -> list[Row]:
    rows = []
    for name, (cases, repeat, levels) in SHAPES.items():
        ours, ref, render, test = _measure(*_runs(cases, repeat, levels, seed=cases + repeat))
        o, r = Spread.of(ours), Spread.of(ref)
        rows.append(
            Row(
                f"compare, {name} ({cases * repeat:,} samples per run)",
                o.fmt(unit="s"),
                f"pairing and mean difference in plain Python: {r.fmt(unit='s')}",
                f"{o.median / r.median:.1f}x",
                f"< {TARGET_S:g} s",
                o.hi < TARGET_S,
                script_command("bench_compare.py"),
                [f"{test}; to_text + to_markdown + to_json: {statistics.median(render):.3f} s (median)"],
            )
        )
    return rows


if __name__ == "__main__":
    print_rows(run())
