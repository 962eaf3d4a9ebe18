"""The tail guard (issue 31, item 4): ship also needs no excess of large regressions.

A case's score that fell by at least half the scale is a large loss; one that rose as
much a large gain. An exact one-sided binomial test on those counts holds half the
verdict's error budget, the mean test the other half (its interval at 97.5%). The
counts and p are printed beside the verdict in text, markdown, JSON and the page.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from attest.features import TAGS
from evals.analysis.paired import VERDICT_LEVEL, paired_batch, ships_batch
from evals.analysis.power import minimum_detectable_effect, tail_lets_through
from evals.analysis.tail import TAIL_ALPHA, tail_of, tail_p
from evals.corpus.cases import TaggingCase
from tests.cli.test_compare import run_compare
from tests.recorded_runs import corpus_ids, record, write_corpus


@pytest.mark.parametrize(("losses", "gains"), [(0, 0), (0, 5), (1, 0), (3, 0), (6, 0), (8, 2), (5, 5), (30, 12)])
def test_tail_p_is_the_exact_one_sided_binomial_test(losses: int, gains: int) -> None:
    expected = 1.0 if losses == 0 else sps.binomtest(losses, losses + gains, 0.5, alternative="greater").pvalue
    assert tail_p(losses, gains) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_large_means_half_the_scale_either_way() -> None:
    t = tail_of([-0.5, -1.0, -0.49, 0.5, 0.2, 0.0])
    assert (t.losses, t.gains) == (2, 1)


def _graded_pair(tmp_path: Path, total_failures: int) -> tuple[Path, str, str]:
    """160 tagging cases: the baseline adds one wrong tag everywhere (F1 < 1); the candidate answers the gold tags
    (a small gain on each case) except on `total_failures` cases, where it answers a wrong tag alone (F1 0)."""
    corpus = write_corpus(tmp_path / "tagging_cases.json", 160)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    failing = set(ids[:total_failures])

    def padded(case: TaggingCase) -> str:
        extra = [next(t for t in TAGS if t not in case.tags)] if len(case.tags) < 4 else []  # at most 4 tags
        return json.dumps({"tags": [*case.tags, *extra]})

    def candidate(case: TaggingCase) -> str | None:
        return None if case.id in failing else json.dumps({"tags": list(case.tags)})

    base = record(cache, corpus, [], model="base", answer=padded)
    cand = record(cache, corpus, [], model="cand", answer=candidate)
    return cache, base, cand


def test_rare_total_failures_behind_small_gains_do_not_ship(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache, base, cand = _graded_pair(tmp_path, total_failures=6)
    data = run_compare(capsys, cache, base, cand, "--json").json()
    tail = data["tail"]
    assert (tail["large_losses"], tail["large_gains"], tail["excess"]) == (6, 0, True)
    assert tail["p"] == pytest.approx(0.5**6) and tail["alpha"] == TAIL_ALPHA
    assert data["difference"]["low"] > 0  # the mean alone would ship
    assert data["verdict"] == "inconclusive" and data["exit_code"] == 3
    text = run_compare(capsys, cache, base, cand)
    assert text.code == 3
    assert "tail        6 fell by >= 0.5, 0 rose as much: an excess of large regressions (exact binomial p = 0.016" in (
        text.out
    )
    assert "an excess of large regressions blocks ship" in text.out
    assert "Tail guard: 6 fell by >= 0.5, 0 rose as much" in run_compare(capsys, cache, base, cand, "--markdown").out
    page = tmp_path / "page.html"
    run_compare(capsys, cache, base, cand, "--html", str(page))
    assert "tail guard: 6 fell by &gt;= 0.5, 0 rose as much" in page.read_text(encoding="utf-8")


def test_without_the_failures_the_same_gains_ship(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache, base, cand = _graded_pair(tmp_path, total_failures=2)
    out = run_compare(capsys, cache, base, cand, "--json")
    tail = out.json()["tail"]
    assert out.code == 0 and (tail["large_losses"], tail["excess"]) == (2, False)


def _rare_losses(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """2% of cases at -1, 98% at +g: the true mean difference is 0."""
    return np.where(rng.random((sims, n)) < 0.02, -1.0, 0.02 / 0.98)


@pytest.mark.parametrize("n", [144, 300])
def test_rare_large_losses_with_a_zero_mean_ship_at_most_5_percent(n: int) -> None:
    d = _rare_losses(np.random.default_rng(31), 4_000, n)
    assert ships_batch(d).mean() <= 0.05
    old = paired_batch(d).bounds(0.95)[0] > 0  # the rule before the guard: the mean alone at 95%
    assert old.mean() > 0.05  # what the audit found (5.4% and 6.1%): the simulation can see a failure


def test_the_printed_mde_is_the_combined_rules() -> None:
    """Large losses make the tail guard block some ships: the MDE grows, and is out of reach when it usually would."""
    sd = 0.15
    alone = minimum_detectable_effect(144, sd, alpha=1 - VERDICT_LEVEL)
    guarded = minimum_detectable_effect(144, sd, alpha=1 - VERDICT_LEVEL, large=(0.02, 0.0))
    assert guarded > alone
    assert 0.8 < tail_lets_through(144, 0.02, 0.0) < 1
    assert tail_lets_through(300, 0.02, 0.0) < 0.8
    assert math.isinf(minimum_detectable_effect(300, sd, alpha=1 - VERDICT_LEVEL, large=(0.02, 0.0)))
    exact = 1 - sps.binom.cdf(5, 144, 0.02)  # 6 losses and no gains: p = 1/64 < 0.025 blocks
    assert tail_lets_through(144, 0.02, 0.0) == pytest.approx(1 - exact, rel=1e-9)
