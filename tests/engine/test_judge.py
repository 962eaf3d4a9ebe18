"""A judged explanation run: stub answers, a fake OpenAI-compatible judge; judgements cached like answers.

The report prints a `judged` line beside the rule score; the manifest records the judge
and every judgement's key; a rerun and `rescore` need no judge server; a judgement gone
from the cache is an error naming the sample, never a request; a judge answer invalid for
the schema is a fail, "unparseable judgement", and reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import diskcache
import pytest

from evals import explanation_eval, reaction_eval, rescore, runs
from evals.cli import runner
from evals.store.local.cache import JSONDisk
from tests.judge_server import FakeJudge

ARGV = ["--backend", "stub", "--judge-backend", "openai", "--judge-model", "fake-judge", "--limit", "12"]


def _eval(cache: Path, judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", judge.url)
    return runner.main(explanation_eval.TASK, [*ARGV, "--cache-dir", str(cache)])


def _run_dir(cache: Path) -> Path:
    (run,) = [p for p in (cache / "runs").iterdir() if p.is_dir()]
    return run


def _read(run: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / f"{name}.json").read_text())
    return data


def _judged_line(out: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith("  judged ")]
    return line


def _every_other_fails(entry_id: str, human: str) -> str:
    """Answers by the item: half pass, half fail, deterministically."""
    return json.dumps({"grade": "pass" if len(entry_id) % 2 else "fail", "reason": "fake"})


def test_a_judged_run_prints_the_judged_line_beside_the_rule_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeJudge({}, answer=_every_other_fails) as judge:
        assert _eval(tmp_path, judge, monkeypatch) == 0
    out = capsys.readouterr().out
    run = _run_dir(tmp_path)
    manifest, report = _read(run, "manifest"), _read(run, "report")
    passed = sum(1 for _, _, grade in judge.record if grade == "pass")
    assert judge.requests == len(manifest["samples"]) == 12
    assert report["judged"]["passed"] == passed and 0 < passed < 12
    assert f"{passed / 12:.2f} [" in _judged_line(out) and "n=12 cases" in _judged_line(out)
    assert "  score " in out  # the rule score stays
    assert manifest["judge"]["backend"] == "openai" and manifest["judge"]["model"] == "fake-judge"
    assert len({s["key"] for s in manifest["judge"]["samples"]}) == 12
    assert not {s["key"] for s in manifest["judge"]["samples"]} & {s["key"] for s in manifest["samples"]}
    assert runs.main(["--cache-dir", str(tmp_path), "show", run.name]) == 0
    shown = capsys.readouterr().out
    assert "  judge       openai fake-judge (judge prompt " in shown
    assert shown.count("      judged  pass: fake") == passed and shown.count("      judged  fail: fake") == 12 - passed


def test_a_rerun_and_rescore_need_no_judge_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeJudge({}, answer=_every_other_fails) as judge:
        assert _eval(tmp_path, judge, monkeypatch) == 0
    first = _judged_line(capsys.readouterr().out)
    assert _eval(tmp_path, judge, monkeypatch) == 0  # the server is shut down: all from the cache
    assert _judged_line(capsys.readouterr().out) == first
    assert judge.requests == 12
    run = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())[-1]
    assert rescore.main(["--cache-dir", str(tmp_path), "--run", run.name]) == 0
    out = capsys.readouterr().out
    rate = _read(run, "report")["judged"]["passed"] / 12
    assert f"judged: {run.name}: {rate:.3f} -> {rate:.3f} from the cached judgements" in out
    assert _read(run, "rescore")["judged"]["passed"] == _read(run, "report")["judged"]["passed"]
    assert runs.main(["--cache-dir", str(tmp_path), "gc", "--yes"]) == 0  # keeps what the runs reference
    assert rescore.main(["--cache-dir", str(tmp_path), "--run", run.name]) == 0, capsys.readouterr().err


def test_a_judgement_missing_from_the_cache_is_an_error_naming_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeJudge({}, answer=_every_other_fails) as judge:
        assert _eval(tmp_path, judge, monkeypatch) == 0
    run = _run_dir(tmp_path)
    gone = _read(run, "manifest")["judge"]["samples"][3]
    with diskcache.Cache(str(tmp_path / "responses"), disk=JSONDisk) as db:
        assert db.delete(gone["key"])
    capsys.readouterr()
    assert rescore.main(["--cache-dir", str(tmp_path), "--run", run.name]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{gone['case']}#{gone['sample']}" in err and "judgement" in err
    assert judge.requests == 12  # never a request


def test_a_judge_answer_invalid_for_the_schema_is_a_reported_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def sometimes_prose(entry_id: str, human: str) -> str:
        return "I think it passes." if len(entry_id) % 3 == 0 else json.dumps({"grade": "pass", "reason": "ok"})

    with FakeJudge({}, answer=sometimes_prose) as judge:
        assert _eval(tmp_path, judge, monkeypatch) == 0
    out = capsys.readouterr().out
    bad = sum(1 for _, _, grade in judge.record if grade == "unparseable")
    assert 0 < bad < 12
    judged = _read(_run_dir(tmp_path), "report")["judged"]
    assert len(judged["unparseable"]) == bad and judged["passed"] == 12 - bad
    assert all(r["reason"] == "unparseable judgement" for r in judged["results"] if not r["passed"])
    assert f"unparseable     {bad} judgement(s) counted as fail" in out


def test_rescore_rejudges_with_another_judges_cached_judgements_and_never_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def by_model(entry_id: str, human: str) -> str:
        return json.dumps({"grade": "pass" if len(entry_id) % 2 else "fail", "reason": "fake"})

    with FakeJudge({}, answer=by_model) as judge:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", judge.url)
        argv = ["--backend", "stub", "--judge-backend", "openai", "--limit", "12", "--cache-dir", str(tmp_path)]
        assert runner.main(explanation_eval.TASK, [*argv, "--judge-model", "judge-a"]) == 0
        (first,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
        with diskcache.Cache(str(tmp_path / "responses"), disk=JSONDisk) as db:  # judge-a is wrong on purpose
            for s in _read(first, "manifest")["judge"]["samples"]:
                db.set(s["key"], {**db.get(s["key"]), "text": json.dumps({"grade": "fail", "reason": "no"})})
        assert runner.main(explanation_eval.TASK, [*argv, "--judge-model", "judge-b"]) == 0
        asked = judge.requests
    second = next(p for p in (tmp_path / "runs").iterdir() if p.is_dir() and p != first)
    capsys.readouterr()
    old = _read(first, "report")["judged"]["passed"] / 12
    assert rescore.main(["--cache-dir", str(tmp_path), "--run", first.name]) == 0  # its own judge: judge-a
    assert f"judged: {first.name}: {old:.3f} -> 0.000 from the cached judgements" in capsys.readouterr().out
    again = ["--cache-dir", str(tmp_path), "--run", first.name, "--judge-backend", "openai"]
    assert rescore.main([*again, "--judge-model", "judge-b"]) == 0
    out = capsys.readouterr().out
    b_rate = _read(second, "report")["judged"]["passed"] / 12
    assert f"judged: {first.name}: {old:.3f} -> {b_rate:.3f} from the cached judgements" in out and b_rate > 0
    assert "judged from the cache by openai judge-b" in out
    assert judge.requests == asked  # nothing was asked: the server is gone anyway
    assert rescore.main([*again, "--judge-model", "judge-c"]) == 1
    assert "no run in the store was judged by it" in capsys.readouterr().err


def test_a_judge_for_a_task_without_a_judge_stage_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--offline", "--judge-backend", "stub", "--limit", "2", "--cache-dir", str(tmp_path)]
    assert runner.main(reaction_eval.TASK, argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the reaction task has no judge stage" in err


def test_a_hand_edited_judged_block_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeJudge({}, answer=_every_other_fails) as judge:
        assert _eval(tmp_path, judge, monkeypatch) == 0
    run = _run_dir(tmp_path)
    report = _read(run, "report")
    report["judged"]["results"][2]["passed"] = "yes"
    (run / "report.json").write_text(json.dumps(report))
    capsys.readouterr()
    assert runs.main(["--cache-dir", str(tmp_path), "show", run.name]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "report.json" in err and "judged.results[2].passed" in err, err
