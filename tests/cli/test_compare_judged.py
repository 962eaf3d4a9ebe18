"""`compare --metric judged`: decides on the judged score only for a judge judge_check validated.

Two judged explanation runs (stub answers, a fake OpenAI-compatible judge), a judgement
corpus in tmp_path standing in for today's: before judge_check, with a poor judge, with
an unjudged run or with two different judges the comparison is inconclusive (exit 3) and
says what to run; after a good judge's judge_check it compares the judged scores.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from evals import compare, explanation_eval, judge_check, runs
from evals.cli import runner
from evals.engine.pipeline import Task
from evals.render import judge_status
from tests.cli.test_judge_check import write_corpus
from tests.judge_server import FakeJudge

COMMAND = "python -m evals.judge_check explanation --judge-backend openai --judge-model fake-judge"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Today's judgement corpus is a file in tmp_path."""
    path = tmp_path / "judgements.json"
    task = explanation_eval.TASK
    assert task.judge is not None
    moved = dataclasses.replace(task, judge=dataclasses.replace(task.judge, corpus=path))

    def get(name: str) -> Task[Any]:
        assert name == "explanation"
        return moved

    monkeypatch.setattr(judge_status.tasks, "get", get)
    return path


def _eval(cache: Path, label: str, *judge: str) -> None:
    argv = ["--backend", "stub", "--limit", "16", "--cache-dir", str(cache), *judge]
    assert runner.main(explanation_eval.TASK, argv) == 0


def _ids(cache: Path) -> list[str]:
    """The run ids in the order they were made (base first)."""
    manifests = [json.loads(p.read_text()) for p in (cache / "runs").glob("*/manifest.json")]
    return [m["run_id"] for m in sorted(manifests, key=lambda m: m["created"]) if "run_id" in m]


def _judged_runs(cache: Path, url: str, monkeypatch: pytest.MonkeyPatch, cand_model: str = "fake-judge") -> None:
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", url)
    _eval(cache, "base", "--judge-backend", "openai", "--judge-model", "fake-judge")
    _eval(cache, "cand", "--judge-backend", "openai", "--judge-model", cand_model)


def _check(cache: Path, corpus: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", url)
    argv = ["explanation", "--judge-backend", "openai", "--judge-model", "fake-judge", "--split", "all"]
    return judge_check.main([*argv, "--corpus", str(corpus), "--cache-dir", str(cache)])


def _compare(cache: Path, *extra: str) -> int:
    return compare.main([*_ids(cache), "--cache-dir", str(cache), "--metric", "judged", *extra])


def test_an_unvalidated_judge_is_refused_naming_judge_check_and_a_validated_one_decides(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(corpus)
    cache = tmp_path / "cache"
    with FakeJudge(grades, right=lambda entry_id: 0.96) as judge:
        _judged_runs(cache, judge.url, monkeypatch)
        capsys.readouterr()
        assert _compare(cache) == 3
        out = capsys.readouterr().out
        assert "inconclusive" in out and COMMAND in out and "not validated" in out
        assert _compare(cache, "--json") == 3
        withheld = json.loads(capsys.readouterr().out)
        assert withheld["verdict"] == "inconclusive" and COMMAND in withheld["withheld"]
        assert _check(cache, corpus, judge.url, monkeypatch) == 0
    capsys.readouterr()
    _compare(cache, "--json")
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    base = json.loads((cache / "runs" / _ids(cache)[0] / "report.json").read_text())
    judged = base["judged"]["passed"] / base["judged"]["samples"]
    assert data["baseline"]["mean"] == pytest.approx(judged) != pytest.approx(base["overall"])
    assert "judged score, judged by openai fake-judge" in captured.err and ": validated" in captured.err
    page = tmp_path / "compare.html"
    _compare(cache, "--html", str(page))
    shown = page.read_text()
    assert "baseline: openai fake-judge" in shown and "n=80: validated" in shown
    run_page = (cache / "runs" / _ids(cache)[0] / "report.html").read_text()  # written before judge_check
    assert 'id="judged"' in run_page and "no judge_check on the current judgement corpus" in run_page
    assert runs.main(["--cache-dir", str(cache), "show", _ids(cache)[0], "--html", str(tmp_path / "run.html")]) == 0
    assert "n=80: validated" in (tmp_path / "run.html").read_text()


def test_a_poor_judge_is_refused_after_its_judge_check(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(corpus)
    cache = tmp_path / "cache"
    with FakeJudge(grades, right=lambda entry_id: 0.7) as judge:
        _judged_runs(cache, judge.url, monkeypatch)
        assert _check(cache, corpus, judge.url, monkeypatch) == 3
    capsys.readouterr()
    assert _compare(cache) == 3
    out = capsys.readouterr().out
    assert "not validated (lower bound under 0.6)" in out and COMMAND in out


def test_a_judge_change_between_the_runs_is_a_confounder(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(corpus)
    cache = tmp_path / "cache"
    with FakeJudge(grades, right=lambda entry_id: 0.96) as judge:
        _judged_runs(cache, judge.url, monkeypatch, cand_model="another-judge")
    capsys.readouterr()
    assert _compare(cache) == 3
    assert "the judge differs between the runs" in capsys.readouterr().out


def test_an_unjudged_run_has_no_judged_score(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_corpus(corpus)
    cache = tmp_path / "cache"
    _eval(cache, "base")
    _eval(cache, "cand")
    capsys.readouterr()
    assert _compare(cache) == 3
    assert "was not judged" in capsys.readouterr().out
    assert compare.main([*_ids(cache), "--cache-dir", str(cache)]) == 3  # the rule score: identical runs
