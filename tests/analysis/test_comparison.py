"""evals.analysis.comparison: pairing, refusals, the verdict, Holm across tasks, and the three renderers."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from attest.errors import AttestError
from evals.analysis.comparison import (
    EXIT_CODES,
    Comparison,
    ComparisonError,
    RunScores,
    compare,
    compare_all,
    exit_code,
)
from evals.analysis.paired import MEAN_ALPHA, VERDICT_LEVEL, holm, holm_levels, paired, verdict
from evals.analysis.power import detectable_from
from evals.analysis.stats import mean_estimate, proportion
from evals.render.comparison_json import to_json
from evals.render.comparison_markdown import MARKDOWN_LIMIT, to_markdown
from evals.render.comparison_text import to_text


def run(
    run_id: str,
    samples: Mapping[str, Sequence[float]],
    *,
    task: str = "reaction",
    family: Mapping[str, str] | None = None,
    labels: Mapping[str, object] | None = None,
    provenance: Mapping[str, object] | None = None,
) -> RunScores:
    answers = {case: f"answer of {run_id} to {case}" for case in samples}
    return RunScores(task, run_id, samples, family or {}, answers, labels or {}, provenance or {})


def binary_runs(
    better: int, worse: int, same_right: int, same_wrong: int, task: str = "reaction"
) -> tuple[RunScores, RunScores]:
    """Two 0/1 runs over the same cases: `better` cases go 0 -> 1, `worse` 1 -> 0, the rest stay."""
    base: dict[str, list[float]] = {}
    cand: dict[str, list[float]] = {}
    for prefix, count, b, c in [
        ("up", better, 0.0, 1.0),
        ("down", worse, 1.0, 0.0),
        ("ok", same_right, 1.0, 1.0),
        ("no", same_wrong, 0.0, 0.0),
    ]:
        for i in range(count):
            base[f"{prefix}-{i:03d}"], cand[f"{prefix}-{i:03d}"] = [b], [c]
    return run("base", base, task=task), run("cand", cand, task=task)


def test_runs_pair_by_case_id_over_shared_cases_and_average_repeats() -> None:
    base = run("a", {"c1": [1.0, 0.0], "c2": [1.0], "c3": [0.0], "only-a": [1.0]})
    cand = run("b", {"c3": [1.0, 1.0, 0.0, 1.0], "c2": [1.0, 1.0], "c1": [1.0], "only-b": [0.0]})
    x = compare(base, cand)
    assert x.n == 3
    assert (x.only_base, x.only_cand) == (("only-a",), ("only-b",))
    assert x.paired.mean_diff == pytest.approx(((1 - 0.5) + 0 + 0.75) / 3)
    assert x.paired == paired(
        [0.5, 1.0, 0.0], [1.0, 1.0, 0.75], level=VERDICT_LEVEL
    )  # the order of the dicts does not matter
    assert [(c.case_id, c.base, c.cand) for c in x.improved] == [("c3", 0.0, 0.75), ("c1", 0.5, 1.0)]
    assert x.unchanged == ("c2",)


def test_changed_cases_list_regressions_first_largest_change_first() -> None:
    base = run("a", {"a": [1.0], "b": [1.0], "c": [0.5], "d": [0.0], "e": [0.25], "f": [0.5]})
    cand = run("b", {"a": [0.75], "b": [0.0], "c": [0.0], "d": [1.0], "e": [0.5], "f": [0.5]})
    x = compare(base, cand, show=3)
    assert [c.case_id for c in x.regressed] == ["b", "c", "a"]
    assert [c.case_id for c in x.improved] == ["d", "e"]
    text = to_text(x)
    assert text.index("regressed   b (1.00 -> 0.00)") < text.index("improved    d (0.00 -> 1.00)")
    side = text[text.index("side by side") :]
    assert "side by side (3 of 5 changed cases" in side
    assert [line.split()[0] for line in side.splitlines()[1:] if "->" in line] == ["b", "c", "a"]
    assert "answer of a to b" in side and "answer of b to b" in side and "to d" not in side


def test_runs_of_different_tasks_are_refused_in_one_line() -> None:
    base, _ = binary_runs(1, 1, 1, 1)
    _, cand = binary_runs(1, 1, 1, 1, task="tagging")
    with pytest.raises(ComparisonError, match="run base is a reaction run and run cand a tagging run") as err:
        compare(base, cand)
    assert "\n" not in str(err.value)


def test_a_shared_case_whose_label_differs_is_refused() -> None:
    base = run("a", {"c1": [1.0], "c2": [0.0]}, labels={"c1": True, "c2": False})
    cand = run("b", {"c1": [1.0], "c2": [0.0]}, labels={"c1": True, "c2": True})
    with pytest.raises(ComparisonError, match=r"case c2: its label is False in run a but True in run b"):
        compare(base, cand)
    same = run("b", {"c1": [1.0], "c2": [0.0]}, labels={"c1": True, "c2": False})
    assert compare(base, same).n == 2


@pytest.mark.parametrize(
    ("cand", "message"),
    [
        ({"other": [1.0]}, "share no case id"),
        ({"c1": []}, "case c1 of run b"),
        ({"c1": [1.5]}, "case c1 of run b"),
        ({"c1": [float("nan")]}, "case c1 of run b"),
    ],
)
def test_runs_that_cannot_be_paired_are_refused(cand: Mapping[str, Sequence[float]], message: str) -> None:
    with pytest.raises(ComparisonError, match=message):
        compare(run("a", {"c1": [1.0]}), run("b", cand))


def test_a_comparison_error_is_an_attest_error_and_a_value_error() -> None:
    assert issubclass(ComparisonError, AttestError) and issubclass(ComparisonError, ValueError)


def test_the_readme_optimiser_example_reads_inconclusive() -> None:
    x = compare(*binary_runs(better=8, worse=3, same_right=5, same_wrong=4))
    assert (x.paired.improved, x.paired.regressed, x.paired.unchanged) == (8, 3, 9)
    assert x.verdict == "inconclusive"
    assert "INCONCLUSIVE" in to_text(x) and "add cases, add repeats, or try a bigger change" in to_text(x)


def test_a_clear_gain_ships_a_clear_loss_regresses_and_the_margin_holds_a_small_gain_back() -> None:
    gain = compare(*binary_runs(better=30, worse=2, same_right=40, same_wrong=28))
    assert gain.verdict == "ship" and EXIT_CODES[gain.verdict] == 0
    assert compare(*binary_runs(better=2, worse=30, same_right=40, same_wrong=28)).verdict == "regress"
    held = compare(
        *binary_runs(better=30, worse=2, same_right=40, same_wrong=28), margin=gain.paired.interval.low + 0.01
    )
    assert held.verdict == "inconclusive"
    assert "not wholly above the margin" in to_text(held)


def test_per_family_rows_give_each_familys_paired_difference() -> None:
    family = {"bait-1": "bait", "bait-2": "bait", "adj-1": "adjacent"}
    base = run("a", {"bait-1": [0.0], "bait-2": [1.0], "adj-1": [1.0], "loose": [0.0]}, family=family)
    cand = run("b", {"bait-1": [1.0], "bait-2": [1.0], "adj-1": [0.0], "loose": [0.0]}, family=family)
    rows = {r.family: r.difference for r in compare(base, cand).families}
    assert set(rows) == {"bait", "adjacent", "(none)"}
    assert (rows["bait"].n, rows["bait"].mean) == (2, 0.5)
    assert (rows["adjacent"].n, rows["adjacent"].mean) == (1, -1.0)
    assert rows["bait"].interval.low < 0.5 < rows["bait"].interval.high


def test_the_detectable_effect_is_for_this_n_and_the_observed_spread() -> None:
    x = compare(*binary_runs(better=6, worse=4, same_right=20, same_wrong=10))
    base = [0.0] * 6 + [1.0] * 4 + [1.0] * 20 + [0.0] * 10
    cand = [1.0] * 6 + [0.0] * 4 + [1.0] * 20 + [0.0] * 10
    assert x.detectable == detectable_from(base, cand, alpha=MEAN_ALPHA)  # the verdict's share of the budget
    assert x.detectable.spread_name == "discordance" and x.detectable.spread == 0.25


def test_what_changed_names_the_provenance_keys_that_differ() -> None:
    prov_a = {"prompt_fingerprint": "abc", "model": "m", "digest": "d", "options": {"temperature": 0}}
    prov_b = {"prompt_fingerprint": "abd", "model": "m", "digest": "d", "options": {"temperature": 0.8}, "scorer": "s2"}
    x = compare(run("a", {"c": [1.0]}, provenance=prov_a), run("b", {"c": [1.0]}, provenance=prov_b))
    assert [(c.key, c.base, c.cand) for c in x.what_changed] == [
        ("prompt_fingerprint", "abc", "abd"),  # the prompt first, then the model, options, and the rest
        ("options", {"temperature": 0}, {"temperature": 0.8}),
        ("scorer", None, "s2"),
    ]
    assert "prompt (every request): abc -> abd" in to_text(x)


def test_exit_codes() -> None:
    assert EXIT_CODES == {"ship": 0, "inconclusive": 3, "regress": 4}
    assert exit_code(["ship", "ship"]) == 0
    assert exit_code(["ship", "inconclusive"]) == 3
    assert exit_code(["inconclusive", "regress", "ship"]) == 4


def test_compare_all_puts_each_interval_at_its_holm_level() -> None:
    strong = binary_runs(better=30, worse=2, same_right=40, same_wrong=28, task="tagging")
    null = binary_runs(better=5, worse=5, same_right=40, same_wrong=50, task="reaction")
    moderate = binary_runs(better=14, worse=2, same_right=44, same_wrong=40, task="explanation")
    alone = [compare(*p) for p in (strong, null, moderate)]
    family = compare_all([strong, null, moderate])
    levels = holm_levels([x.paired.interval_pvalue for x in alone], MEAN_ALPHA)
    assert [x.paired.interval.level for x in family] == levels
    assert levels[0] == pytest.approx(1 - MEAN_ALPHA / 3)
    assert [x.holm_p for x in family] == holm([x.paired.p_value for x in alone])
    assert all(x.family_size == 3 for x in family)
    for x in family:  # every printed interval agrees with its verdict
        assert x.verdict == verdict(x.paired.interval)
    assert [x.verdict for x in family] == ["ship", "inconclusive", "ship"]
    assert "Holm over 3 comparisons: interval at 99.2%" in to_text(family[0])


def test_compare_all_decides_what_a_bonferroni_interval_would_not() -> None:
    """Holm's second step uses 97.5%, not 98.75%: a task just short of Bonferroni still ships."""
    strong = binary_runs(better=30, worse=2, same_right=40, same_wrong=28, task="tagging")
    candidates = [
        binary_runs(better=b, worse=2, same_right=44, same_wrong=40, task="explanation") for b in range(6, 20)
    ]
    for second in candidates:
        alone = compare(*second)
        bonferroni = alone.paired.at_level(1 - MEAN_ALPHA / 2)  # 98.75%
        holm_step = alone.paired.at_level(1 - MEAN_ALPHA)
        if verdict(bonferroni) == "inconclusive" and verdict(holm_step) == "ship":
            family = compare_all([strong, second])
            assert [x.verdict for x in family] == ["ship", "ship"]
            return
    pytest.fail("no case between Bonferroni and Holm in the range tried")


def test_text_names_every_part_of_the_comparison() -> None:
    x = compare(*binary_runs(better=8, worse=3, same_right=5, same_wrong=4))
    text = to_text(x)
    for part in ("candidate cand vs baseline base, 20 cases paired", "adjusted Wald t", "8 improved, 3 regressed",
                 "by family", "detectable  ", "discordance 0.55", "side by side (5 of 11"):  # fmt: skip
        assert part in text


def huge_pair(cases: int = 10_000, families: int = 500, keys: int = 300) -> tuple[RunScores, RunScores]:
    """Every case changes, with long ids, long answers (holding backticks and pipes) and long provenance."""
    rng = np.random.default_rng(0)
    ids = [f"case-{i:05d}-" + "x" * 150 for i in range(cases)]
    fam = {c: f"family-{i % families}-" + "y" * 80 for i, c in enumerate(ids)}
    long = "```| " + "word " * 2_000
    base = {c: [float(v)] for c, v in zip(ids, rng.integers(0, 2, cases), strict=True)}
    cand = {c: [1.0 - s[0]] for c, s in base.items()}
    prov_a = {f"key-{i}": "a" * 5_000 for i in range(keys)}
    prov_b = {f"key-{i}": "b" * 5_000 for i in range(keys)}
    answers = dict.fromkeys(ids, long)
    return (
        RunScores("tagging", "r" * 300, base, fam, answers, {}, prov_a),
        RunScores("tagging", "s" * 300, cand, fam, answers, {}, prov_b),
    )


def test_markdown_stays_under_the_comment_limit_and_says_what_it_left_out() -> None:
    base, cand = huge_pair()
    x = compare(base, cand, show=10_000)
    md = to_markdown(x)
    assert len(md) < MARKDOWN_LIMIT
    assert "more not shown: the comment would pass 60,000 characters" in md
    assert "more families." in md and "more keys differ." in md
    assert md.index("**What differs:**") < md.index("| baseline |")  # it opens with what differs
    folded = rf"<details><summary>Regressed \({len(x.regressed)}\)</summary>\n\n`case-.*, and \d+ more\n\n</details>"
    assert re.search(folded, md)
    three = to_markdown([x, x, x])
    assert len(three) < MARKDOWN_LIMIT
    assert three.count("### tagging") == 3


def test_markdown_fences_hold_answers_that_contain_backticks() -> None:
    base = RunScores("t", "a", {"c": [1.0]}, {}, {"c": "before ``` after"}, {}, {})
    cand = RunScores("t", "b", {"c": [0.0]}, {}, {"c": "plain"}, {}, {})
    md = to_markdown(compare(base, cand))
    assert "````\nbefore ``` after\n````" in md


def test_json_is_plain_and_lists_every_case() -> None:
    base, cand = binary_runs(better=2, worse=1, same_right=1, same_wrong=1)
    x = compare(base, cand)
    data = json.loads(json.dumps(to_json(x), allow_nan=False))
    assert data["verdict"] == x.verdict and data["exit_code"] == 3
    assert [c["id"] for c in data["regressed"]] == ["down-000"]
    assert [c["id"] for c in data["improved"]] == ["up-000", "up-001"]
    assert data["unchanged"] == ["no-000", "ok-000"]
    assert data["difference"]["low"] == x.paired.interval.low
    assert data["detectable"]["effect"] is None  # no difference within reach: infinity has no JSON form
    assert data["holm"] is None


def test_json_of_a_compare_all_carries_holm() -> None:
    family = compare_all([binary_runs(3, 1, 5, 5), binary_runs(3, 1, 5, 5, task="tagging")])
    data = to_json(family[0])
    assert data["holm"] == {"adjusted_p": family[0].holm_p, "comparisons": 2}


def test_a_comparison_is_frozen() -> None:
    x: Comparison = compare(*binary_runs(1, 1, 1, 1))
    with pytest.raises(AttributeError):
        x.verdict = "ship"  # type: ignore[misc]


def test_both_runs_of_a_comparison_get_one_interval_method() -> None:
    """A baseline that happens to score only 0 and 1 beside a graded candidate: both bootstrap, neither Wilson."""
    base = {f"c{i}": [float(i % 2)] for i in range(20)}
    cand = {f"c{i}": [0.5 if i == 0 else float(i % 2)] for i in range(20)}
    x = compare(run("a", base), run("b", cand))
    assert x.base != proportion(10, 20)  # the Wilson interval would be [0.30, 0.70]
    assert x.base == mean_estimate(list(np.arange(20) % 2.0), binary=False)
