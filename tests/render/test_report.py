"""The report of a run script: intervals with n, per-family rows, baselines on the same cases, the
detectable difference, flaky cases under repeats; the same figures in the table, --json and report.json."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attest.backends.types import ChatResponse, Message
from evals import reaction_eval, tasks
from evals.analysis import power, stats, uncertainty
from evals.analysis.annotate import annotate, inputs_sha256
from evals.analysis.paired import MEAN_ALPHA
from evals.analysis.uncertainty import ASSUMES
from evals.cli import runner
from evals.engine.chat import CachedChat, MemoryCache, unsampled
from evals.engine.execute import IN_PROCESS, RunOutcome, RunSpec, execute
from evals.engine.pipeline import load_cases
from evals.engine.task import Task
from evals.render.report import print_report
from evals.store.records import MemoryStore
from tests.fakes import FakeBackend, RecordingChat

TASKS: dict[str, Task[Any]] = {t.name: t for t in tasks.all_tasks()}  # the registry's, not a copy
Reply = Callable[[Any, int], str]  # (case, how many times this case was asked before) -> answer text


def _raw(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(TASKS[name].corpus.read_text(encoding="utf-8"))
    return cases


def _corpus(tmp_path: Path, name: str, cases: Sequence[Mapping[str, Any]]) -> Path:
    path = tmp_path / f"{name}_cases.json"
    path.write_text(json.dumps([{**c, "split": "dev"} for c in cases]), encoding="utf-8")
    return path


def _fake(task: Task[Any], corpus: Path, reply: Reply) -> FakeBackend:
    """A backend that knows which case each request renders, and how often it has been asked it."""
    cases = {task.render(c)[-1]["content"]: c for c in load_cases(task, corpus)}
    asked: dict[str, int] = {}

    def answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> str:
        case = cases[messages[-1]["content"]]
        asked[case.id] = asked.get(case.id, 0) + 1
        return reply(case, asked[case.id] - 1)

    return FakeBackend(RecordingChat(answer))


def _run(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str, backend: FakeBackend | None = None
) -> tuple[str, dict[str, Any]]:
    """Run the task's run script; return what it printed and the run's report.json."""
    args = ["--cache-dir", str(tmp_path / "cache"), "--split", "dev", *argv]
    if backend is None:
        assert runner.main(TASKS[name], ["--offline", *args]) == 0
    else:
        assert runner.main(TASKS[name], args, backend_factory=lambda settings: backend) == 0
    out = capsys.readouterr().out
    runs = sorted((tmp_path / "cache" / "runs").iterdir())
    report: dict[str, Any] = json.loads((runs[-1] / "report.json").read_text(encoding="utf-8"))
    return out, report


def _dev(name: str) -> list[Any]:
    return load_cases(TASKS[name], split="dev")


def _case_means(report: Mapping[str, Any]) -> dict[str, float]:
    samples: dict[str, list[float]] = {}
    for r in report["results"]:
        samples.setdefault(r["id"], []).append(r["score"])
    return {cid: sum(v) / len(v) for cid, v in samples.items()}


def _right_reaction(case: Any, asked: int) -> str:
    """The right verdict, with reasoning that names the item and the reader's interest: full marks."""
    reasoning = f"It is about {case.title[:120]}, against {case.interests[:120]}"
    return json.dumps({"verdict": case.verdict, "confidence": 4, "reasoning": reasoning})


# --- the score: mean, interval, n ----------------------------------------------------------


@pytest.mark.parametrize("name", TASKS)
def test_score_is_printed_with_its_interval_and_n_in_the_house_format(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = _run(name, tmp_path, capsys)
    means = list(_case_means(report).values())
    expected, method = uncertainty.estimate(means, uncertainty.interval_method(TASKS[name]))
    score = report["uncertainty"]["score"]
    assert score["text"] == expected.format() and score["n"] == len(_dev(name))
    assert (score["low"], score["high"]) == (expected.interval.low, expected.interval.high)
    assert score["method"] == method
    line = next(line for line in out.splitlines() if line.startswith("  score "))
    assert re.fullmatch(r"  score\s+\d\.\d{2,} \[\d\.\d{2,}, \d\.\d{2,}\] n=\d+ cases, \d+ samples \(95%, .+\)", line)
    assert expected.format() in line


def test_the_case_is_the_unit_repeats_are_averaged_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _raw("reaction")[:6]
    corpus = _corpus(tmp_path, "reaction", cases)
    backend = _fake(reaction_eval.TASK, corpus, lambda case, asked: _right_reaction(case, asked) if asked else "no")
    out, report = _run("reaction", tmp_path, capsys, "--corpus", str(corpus), "--repeat", "2", backend=backend)
    score = report["uncertainty"]["score"]
    assert score["n"] == 6 and report["uncertainty"]["samples"] == 12  # six cases, not twelve samples
    assert score["mean"] == 0.5 and score["method"] == "none: every score is equal"  # each case: (0 + 1) / 2
    assert "n=6 cases, 12 samples" in out


# --- per-family rows -----------------------------------------------------------------------


@pytest.mark.parametrize("name", TASKS)
def test_family_rows_cover_every_family_of_the_cases(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = _run(name, tmp_path, capsys)
    cases = _dev(name)
    rows = report["uncertainty"]["families"]
    assert [r["family"] for r in rows] == sorted({c.family for c in cases})
    assert sum(r["n"] for r in rows) == len(cases)
    means = _case_means(report)
    for row in rows:
        members = [means[c.id] for c in cases if c.family == row["family"]]
        method = uncertainty.interval_method(TASKS[name])
        assert row["text"] == uncertainty.estimate(members, method)[0].format()
        assert set(row["baselines"]) == {"stub", "trivial"}
        assert re.search(rf"^    {re.escape(row['family'])}\s+{row['n']}\s+{re.escape(row['text'][:4])}", out, re.M)


# --- baselines on the same cases -------------------------------------------------------------


def test_a_model_answering_the_best_cheap_strategy_scores_exactly_the_trivial_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a subset whose majority reads (the dev split's skips), so the best verdict comes from the run's cases."""
    raw = [c for c in _raw("reaction") if c["split"] == "dev"]
    cases = [c for c in raw if c["verdict"]][:7] + [c for c in raw if not c["verdict"]][:4]
    corpus = _corpus(tmp_path, "reaction", cases)
    loaded = reaction_eval.load_cases(corpus)
    best = max(  # the first of equals, as the trivial baseline picks it
        reaction_eval.strategies(loaded),
        key=lambda s: sum(reaction_eval.score_one(c, s.answer(c))["score"] for c in loaded),
    )
    backend = _fake(reaction_eval.TASK, corpus, lambda case, asked: best.answer(case))
    out, report = _run("reaction", tmp_path, capsys, "--corpus", str(corpus), backend=backend)
    block = report["uncertainty"]
    trivial = next(b for b in block["baselines"] if b["name"] == "trivial")
    assert trivial["answer"].startswith(best.describe)
    assert (trivial["mean"], trivial["low"], trivial["high"], trivial["n"]) == (
        block["score"]["mean"],
        block["score"]["low"],
        block["score"]["high"],
        11,
    )
    assert trivial["difference"]["mean"] == 0.0 and trivial["difference"]["n"] == 11
    assert all(r["baselines"]["trivial"] == r["mean"] for r in block["families"])
    assert best.describe[:40] in out


@pytest.mark.parametrize("name", TASKS)
def test_the_stub_baseline_of_a_stub_run_is_the_run(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The offline run is the stub: its stub baseline, on the same cases, must be the same score, case for case."""
    _, report = _run(name, tmp_path, capsys)
    stub = next(b for b in report["uncertainty"]["baselines"] if b["name"] == "stub")
    assert (stub["text"], stub["n"]) == (report["uncertainty"]["score"]["text"], len(_dev(name)))
    assert stub["difference"]["mean"] == 0.0
    assert all(r["baselines"]["stub"] == r["mean"] for r in report["uncertainty"]["families"])


def test_baselines_are_scored_on_the_runs_cases_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _raw("tagging")[:5]
    corpus = _corpus(tmp_path, "tagging", cases)
    _, report = _run("tagging", tmp_path, capsys, "--offline", "--corpus", str(corpus))
    assert [b["n"] for b in report["uncertainty"]["baselines"]] == [5, 5]
    assert report["uncertainty"]["detectable"]["n"] == 5


# --- the detectable difference ---------------------------------------------------------------


def test_detectable_difference_is_stats_mde_for_this_n_under_the_stated_spread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = _run("reaction", tmp_path, capsys)
    means = list(_case_means(report).values())
    sd = math.sqrt(2) * float(np.std(means, ddof=1))
    d = report["uncertainty"]["detectable"]
    assert d["n"] == len(means) and d["power"] == 0.8 and d["assumes"] == ASSUMES
    assert d["sd_of_differences"] == pytest.approx(sd)
    assert d["effect"] == pytest.approx(power.minimum_detectable_effect(len(means), sd, alpha=MEAN_ALPHA))
    assert f"detectable      {d['effect']:.2f} at 80% power (n={len(means)}, sd of differences {sd:.2f})" in out


# --- repeats: flaky cases and variance components ------------------------------------------------


def test_repeat_two_with_an_alternating_model_names_the_flaky_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _raw("reaction")[:8]
    corpus = _corpus(tmp_path, "reaction", cases)
    flaky = sorted(c["id"] for c in cases[::3])

    def reply(case: Any, asked: int) -> str:
        wrong = case.id in flaky and asked % 2 == 1
        reasoning = f"On {case.title[:120]}, for {case.interests[:120]}"
        return json.dumps({"verdict": case.verdict != wrong, "confidence": 3, "reasoning": reasoning})

    backend = _fake(reaction_eval.TASK, corpus, reply)
    out, report = _run("reaction", tmp_path, capsys, "--corpus", str(corpus), "--repeat", "2", backend=backend)
    repeats = report["uncertainty"]["repeats"]
    assert repeats["flaky"] == flaky and repeats["k"] == 2 and repeats["cases"] == 8
    samples = {c["id"]: [1.0, 0.0] if c["id"] in flaky else [1.0, 1.0] for c in cases}
    parts = stats.variance_components(samples)
    assert (repeats["within"], repeats["between"]) == pytest.approx((parts.within, parts.between))
    assert repeats["within"] > 0
    assert f"{len(flaky)} of 8 cases flaky (samples disagree): {', '.join(flaky)}" in out
    assert "  variance        within cases" in out
    assert "verdicts" not in report["uncertainty"]  # per-sample precision would treat repeats as independent


def test_repeat_two_with_a_steady_model_has_no_flaky_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _raw("reaction")[:4]
    corpus = _corpus(tmp_path, "reaction", cases)
    backend = _fake(reaction_eval.TASK, corpus, _right_reaction)
    out, report = _run("reaction", tmp_path, capsys, "--corpus", str(corpus), "--repeat", "2", backend=backend)
    assert report["uncertainty"]["repeats"]["flaky"] == [] and report["uncertainty"]["repeats"]["within"] == 0.0
    assert "0 of 4 cases flaky (every case's samples agree)" in out


def test_a_single_sample_run_has_no_repeat_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, report = _run("explanation", tmp_path, capsys)
    assert "repeats" not in report["uncertainty"] and "flaky" not in out


# --- reaction's precision and recall ---------------------------------------------------------------


def test_precision_and_recall_carry_intervals_and_count_unparseable_answers_as_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = [c for c in _raw("reaction") if c["split"] == "dev"]
    cases = [c for c in raw if c["verdict"]][:6] + [c for c in raw if not c["verdict"]][:6]
    corpus = _corpus(tmp_path, "reaction", cases)
    garbled = {c["id"] for c in cases[::2]}  # three readers and three skippers answer nonsense

    def reply(case: Any, asked: int) -> str:
        return "I would read it." if case.id in garbled else _right_reaction(case, asked)

    backend = _fake(reaction_eval.TASK, corpus, reply)
    out, report = _run("reaction", tmp_path, capsys, "--corpus", str(corpus), backend=backend)
    verdicts, summary = report["uncertainty"]["verdicts"], report["summary"]
    # garbled readers are false negatives, garbled skippers false positives: 3 of 6 predicted are right
    assert verdicts["precision"]["mean"] == summary["precision"] == 0.5
    assert verdicts["recall"]["mean"] == summary["recall"] == 0.5
    assert verdicts["invalid"] == summary["invalid"] == 6
    assert verdicts["precision"]["text"] == stats.proportion(3, 6).format()
    assert f"precision       {stats.proportion(3, 6).format()} (an unparseable answer counts as" in out


# --- one set of figures: table, --json, report.json --------------------------------------------------


@pytest.mark.parametrize("name", TASKS)
def test_json_output_and_report_json_carry_the_figures_the_table_shows(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, first = _run(name, tmp_path, capsys)
    printed, saved = _run(name, tmp_path, capsys, "--json")
    data = json.loads(printed)
    assert data["uncertainty"] == saved["uncertainty"] == first["uncertainty"]
    block = data["uncertainty"]
    for text in [block["score"]["text"], *(b["text"] for b in block["baselines"]), block["detectable"]["text"]]:
        assert text in table
    assert set(block) >= {"score", "families", "baselines", "detectable", "unit", "inputs_sha256"}


@pytest.mark.parametrize("name", TASKS)
def test_the_last_lines_are_the_runs_show_command_and_the_page(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = _run(name, tmp_path, capsys)
    page = tmp_path / "cache" / "runs" / report["run_id"] / "report.html"
    hint = f"--cache-dir {tmp_path / 'cache'}"  # the options it was given, so that it works when pasted
    assert out.splitlines()[-2] == f"  answers         python -m evals.runs {hint} show {report['run_id']}"
    assert out.splitlines()[-1] == f"  page            {page}"
    assert page.read_text(encoding="utf-8").count("<tr data-case=") == len(report["results"])


# --- degenerate answers, named under the headline ----------------------------------------------------


def test_one_verdict_and_one_confidence_for_every_case_are_named_under_the_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path, "reaction", _raw("reaction")[:8])
    backend = _fake(
        reaction_eval.TASK,
        corpus,
        lambda case, asked: json.dumps({"verdict": True, "confidence": 4, "reasoning": case.title}),
    )
    out, _ = _run("reaction", tmp_path, capsys, "--corpus", str(corpus), backend=backend)
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  score "))
    assert lines[at + 1 : at + 3] == [
        "  WARNING         every answer has confidence = 4 (8 of 8): the answers ignore the input",
        "  WARNING         every answer has verdict = true (8 of 8): the answers ignore the input",
    ]


def test_answers_identical_to_the_stubs_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from attest.backends.stub import StubBackend

    corpus = _corpus(tmp_path, "tagging", _raw("tagging")[:8])
    task = TASKS["tagging"]
    stub = StubBackend(answer=task.stub_answer)
    backend = _fake(task, corpus, lambda case, asked: stub.chat_json(task.render(case), task.schema).text)
    out, _ = _run("tagging", tmp_path, capsys, "--corpus", str(corpus), backend=backend)
    assert "  WARNING         8 of 8 answers (100%) are identical to the stub backend's (keyword overlap)" in out


def test_a_stub_run_is_not_warned_of_being_the_stub(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _run("tagging", tmp_path, capsys)
    assert "identical to the stub" not in out


# --- reuse of a block: only when nothing it is computed from changed -----------------------------------


def _outcome(task: Task[Any], cases: Sequence[Any], answer: Callable[[Any], str], store: MemoryStore) -> RunOutcome:
    """A run through the one loop, in memory, answering each case with `answer(case)`."""
    by_prompt = {task.render(c)[-1]["content"]: c for c in cases}

    def chat(messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        return ChatResponse(answer(by_prompt[messages[-1]["content"]]), 0.0, None, None, "fake-model", "")

    spec = RunSpec(task, cases, cases, task.corpus, "dev")
    return execute(spec, CachedChat(unsampled(chat), MemoryCache(), IN_PROCESS), store, record_git=False)


def test_a_reused_block_is_the_block_computed_afresh_and_a_changed_answer_is_recomputed() -> None:
    task = reaction_eval.TASK
    cases = [c for c in reaction_eval.load_cases() if c.split == "dev"][:10]
    store = MemoryStore()
    right = _outcome(task, cases, lambda c: _right_reaction(c, 0), store)
    first = annotate(right, store)
    store.save(first.run_id, "report", first.report)
    again = _outcome(task, cases, lambda c: _right_reaction(c, 0), store)
    assert inputs_sha256(again) == inputs_sha256(right)
    assert annotate(again, store).report.uncertainty == annotate(again).report.uncertainty == first.report.uncertainty
    wrong = _outcome(task, cases, lambda c: "no", store)
    assert inputs_sha256(wrong) != inputs_sha256(right)
    assert annotate(wrong, store).report.uncertainty["score"]["mean"] == 0.0


def test_the_block_is_keyed_by_the_baselines_answers_not_by_source_files() -> None:
    task = reaction_eval.TASK
    cases = [c for c in reaction_eval.load_cases() if c.split == "dev"][:10]
    right = _outcome(task, cases, lambda c: _right_reaction(c, 0), MemoryStore())
    other_stub = dataclasses.replace(
        task, stub_answer=lambda m, s: {"verdict": False, "confidence": 1, "reasoning": "x"}
    )
    stub_changed = dataclasses.replace(right, spec=dataclasses.replace(right.spec, task=other_stub))
    assert inputs_sha256(stub_changed) != inputs_sha256(right)  # the stub baseline's answers are an input
    fewer = dataclasses.replace(task, strategies=lambda cs: task.strategies(cs)[:1])
    strategies_changed = dataclasses.replace(right, spec=dataclasses.replace(right.spec, task=fewer))
    assert inputs_sha256(strategies_changed) != inputs_sha256(right)  # so are the trivial strategies' answers


def test_an_outcome_without_its_cases_prints_the_plain_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [c for c in reaction_eval.load_cases() if c.split == "dev"][:3]
    outcome = dataclasses.replace(_outcome(reaction_eval.TASK, cases, lambda c: "no", MemoryStore()), spec=None)
    assert annotate(outcome) is outcome
    print_report(outcome, tmp_path)
    out = capsys.readouterr().out
    assert "mean score      0.000 over 3 samples (no interval: not annotated)" in out


@pytest.mark.parametrize("name", TASKS)
def test_the_report_names_its_metrics_in_words_not_keys(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`confidence_histogram`, `auc_verdict` and the like stay keys in report.json, never in the table."""
    out, report = _run(name, tmp_path, capsys)
    for key in report["summary"]:
        assert not re.search(rf"^  {re.escape(key)}\s", out, re.MULTILINE) or "_" not in key, key
    assert not re.search(r"^  \w*_\w*\s", out, re.MULTILINE), out
