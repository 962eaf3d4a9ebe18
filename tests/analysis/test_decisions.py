"""Recorded decisions: the gate's verdict is kept beside the candidate run, and rescore re-checks it.

A decision is taken over two recorded runs by `tagging_eval.gate` (over `evals.analysis.pairing.decide`);
`python -m evals.rescore` re-scores the candidate, re-scores its baseline too, recomputes
the verdict with the recorded margin from the cache alone and says whether it changed.
The scorer change is injected through the task registry (the `swap_task` fixture), as
tests/cli/test_rescore.py does.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evals import explanation_eval, reaction_eval, rescore, tagging_eval
from evals.analysis.pairing import load_run
from evals.corpus.cases import TaggingCase
from evals.store.models import Decision, decode
from evals.store.records import DirStore
from tests.recorded_runs import corpus_ids, record, write_corpus


@dataclasses.dataclass(frozen=True)
class Decided:
    cache: Path
    base: str
    cand: str
    decision: Decision


def decided(tmp_path: Path, *, margin: float = 0.0) -> Decided:
    """A baseline right on 4 of 20 cases, a candidate right on 18 (those 4 included), and the gate's decision."""
    corpus = write_corpus(tmp_path / "tagging_cases.json", 20)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, ids[:4], model="base")
    cand = record(cache, corpus, ids[:18], model="cand")
    store = DirStore(cache / "runs")
    decision = tagging_eval.gate(store, load_run(store, base), load_run(store, cand), margin=margin)
    return Decided(cache, base, cand, decision)


def run_rescore(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = rescore.main(["--cache-dir", str(cache), *args])
    return code, capsys.readouterr().out


def inverted(case: TaggingCase, out: str) -> dict[str, Any]:
    """Tomorrow's scorer, for the test: it rewards exactly what today's punishes."""
    scored = tagging_eval.score_one(case, out)
    return {**scored, "score": 1.0 - scored["score"]}


def test_gate_is_defined_once_in_tagging_eval_and_imported_by_the_other_tasks() -> None:
    """The design note's letter: `gate()` defined in tagging_eval.py, imported (not copied) by the others."""
    assert reaction_eval.gate is tagging_eval.gate and explanation_eval.gate is tagging_eval.gate
    assert tagging_eval.gate.__module__ == "evals.tagging_eval"
    for module in (reaction_eval, explanation_eval):
        tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "gate"]


def test_gate_returns_the_decision_it_records(tmp_path: Path) -> None:
    d = decided(tmp_path)
    assert DirStore(d.cache / "runs").load(d.cand, "decision", Decision) == d.decision


def test_the_decision_is_written_beside_the_candidate_run(tmp_path: Path) -> None:
    d = decided(tmp_path)
    on_disk = decode((d.cache / "runs" / d.cand / "decision.json").read_text(encoding="utf-8"), Decision)
    assert on_disk == d.decision
    assert (on_disk.baseline_run, on_disk.candidate_run, on_disk.verdict, on_disk.n) == (d.base, d.cand, "ship", 20)
    assert on_disk.interval[0] > 0 and on_disk.p_value < 0.001
    assert not (d.cache / "runs" / d.base / "decision.json").exists()


def test_rescore_with_todays_scorer_says_the_decision_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = decided(tmp_path)
    code, out = run_rescore(capsys, d.cache)
    assert code == 0
    assert f"decision on {d.cand} (baseline {d.base}): ship, unchanged (+0.70 [" in out
    code, out = run_rescore(capsys, d.cache, "--json")
    (found,) = json.loads(out)["decisions"]
    assert (found["recorded"], found["now"], found["unchanged"], found["margin"]) == ("ship", "ship", True, 0.0)
    assert found["interval"] == pytest.approx(list(d.decision.interval))


def test_a_scorer_change_that_flips_the_decision_is_reported(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    swap_task: Callable[[Any], None],
) -> None:
    d = decided(tmp_path)
    swap_task(dataclasses.replace(tagging_eval.TASK, score_one=inverted))
    code, out = run_rescore(capsys, d.cache)
    assert code == 0  # a changed decision is reported, not an error
    assert f"decision on {d.cand} (baseline {d.base}): was ship, would now be regress (-0.70 [" in out
    assert "scorer changed since the run" in out
    code, out = run_rescore(capsys, d.cache, "--json")
    (found,) = json.loads(out)["decisions"]
    assert (found["recorded"], found["now"], found["unchanged"]) == ("ship", "regress", False)
    assert found["line"].endswith("margin 0)")
    recorded = (d.cache / "runs" / d.cand / "decision.json").read_text(encoding="utf-8")
    assert decode(recorded, Decision) == d.decision  # re-checking never rewrites the record


def test_the_recorded_margin_is_the_one_rechecked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = decided(tmp_path, margin=0.9)
    assert d.decision.verdict == "inconclusive"
    code, out = run_rescore(capsys, d.cache)
    assert code == 0
    assert f"decision on {d.cand} (baseline {d.base}): inconclusive, unchanged (" in out
    assert out.rstrip().endswith("margin 0.9)")


def test_rescoring_the_candidate_alone_rescores_its_baseline_too(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    swap_task: Callable[[Any], None],
) -> None:
    d = decided(tmp_path)
    swap_task(dataclasses.replace(tagging_eval.TASK, score_one=inverted))
    code, out = run_rescore(capsys, d.cache, "--run", d.cand)
    assert code == 0
    assert "re-scored 1 run(s)" in out and "would now be regress" in out  # the baseline was re-scored as well
    assert not (d.cache / "runs" / d.base / "rescore.json").exists()  # but only the named run's record is written
    code, out = run_rescore(capsys, d.cache, "--run", d.base)
    assert code == 0 and "decision on" not in out  # the baseline holds no decision


def test_a_decision_whose_baseline_is_gone_cannot_be_rechecked_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = decided(tmp_path)
    shutil.rmtree(d.cache / "runs" / d.base)
    code, out = run_rescore(capsys, d.cache)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("decision on"))
    assert line.startswith(f"decision on {d.cand} (baseline {d.base}): cannot re-check it: no run {d.base!r}")
