"""The judge stage on a team's PostgreSQL store: judgements stored like answers, validations beside the runs.

judge_check --store URL records its validation through the store protocol (a row of
attest.records under an id no run has, left out of every run listing); a judged run's
judgements go to the same store, so compare --metric judged --store URL finds both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import compare, explanation_eval, judge_check
from evals.cli import runner
from evals.store.open import open_store
from evals.store.validation import VALIDATION_PREFIX, Validation
from tests.cli.test_compare_judged import corpus  # noqa: F401  (the fixture: today's judgement corpus in tmp_path)
from tests.cli.test_judge_check import write_corpus
from tests.judge_server import FakeJudge

pytestmark = pytest.mark.postgres


def test_validation_and_judgements_live_in_the_team_store(
    tmp_path: Path,
    corpus: Path,  # noqa: F811
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    grades = write_corpus(corpus)
    local = tmp_path / "local"  # must stay empty: everything goes to the store
    judge_args = ["--judge-backend", "openai", "--judge-model", "fake-judge"]
    with FakeJudge(grades, right=lambda entry_id: 0.96) as judge:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", judge.url)
        argv = ["explanation", *judge_args, "--split", "all", "--corpus", str(corpus)]
        assert judge_check.main([*argv, "--store", pg_url, "--cache-dir", str(local)]) == 0
        asked = []
        for _ in range(2):
            run = ["--backend", "stub", "--limit", "8", "--store", pg_url, "--cache-dir", str(local), *judge_args]
            assert runner.main(explanation_eval.TASK, run) == 0
            asked.append(judge.requests)
    assert 80 < asked[0] == asked[1]  # the second run's judgements came from the store
    opened = open_store(pg_url, local)
    try:
        ids = opened.runs.run_ids()
        assert len(ids) == 2 and not any(i.startswith(VALIDATION_PREFIX) for i in ids)
        manifests = sorted((opened.runs.manifest(i) for i in ids), key=lambda m: m.created)
        judge_ref = manifests[0].judge
        assert judge_ref is not None
        entries = opened.answers.get_many([s.key for s in judge_ref.samples])
        assert all(e is not None and json.loads(e.text)["grade"] in ("pass", "fail") for e in entries.values())
        conn = opened.runs._link.conn  # type: ignore[attr-defined]
        found = [r[0] for r in conn.execute("SELECT run_id FROM attest.records WHERE name = 'validation'")]
        (validation,) = found
        assert opened.runs.load(validation, "validation", Validation).validated
    finally:
        opened.close()
    capsys.readouterr()
    refs = [m.run_id for m in manifests]
    assert compare.main([*refs, "--store", pg_url, "--cache-dir", str(local), "--metric", "judged"]) in (0, 3, 4)
    captured = capsys.readouterr()
    assert "judged score, judged by openai fake-judge" in captured.out and ": validated" in captured.out
    assert not (local / "runs").exists()
