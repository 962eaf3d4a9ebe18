"""judge_check against a fake OpenAI-compatible judge whose every answer is on record.

The kappa printed must be the kappa of the fake's own record against the human grades;
a good judge exits 0, a poor one and an always-"pass" one 3; an answer invalid for the
judge schema is a fail, "unparseable judgement", and counted; a judge that cannot be
reached is one line naming its URL; the validation lands in the store.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from attest.render import one_line
from evals import judge_check
from evals.store.open import open_store
from evals.store.validation import VALIDATION_PREFIX, Validation
from tests.judge_server import FakeJudge

CASES = Path(__file__).resolve().parents[2] / "evals" / "explanation_cases.json"


def write_corpus(path: Path, count: int = 80) -> dict[tuple[str, str], tuple[str, str]]:
    """A judgement corpus of `count` entries built from explanation cases; returns the fake's lookup table."""
    entries = []
    for i, case in enumerate(json.loads(CASES.read_text())[:count]):
        if case["refuse"]:
            text, grade, source = "Outside your stated interests.", "pass", "refusal-right"
        elif i % 2:
            text, grade, source = f"You work on {case['must_mention_any'][0]}, as this item does.", "pass", "hand-good"
        else:
            text, grade, source = "Outside your stated interests.", "fail", "refusal-wrong"
        split = "dev" if i % 2 else "train"
        entries.append(
            {
                "id": f"entry-{i}",
                "split": split,
                "interests": case["interests"],
                "title": case["title"],
                "summary": case["summary"],
                "text": text,
                "grade": grade,
                "source": source,
                "note": f"from case {case['id']}",
            }
        )
    path.write_text(json.dumps(entries, indent=1))
    return {(one_line(e["title"]), one_line(e["text"])): (e["id"], e["grade"]) for e in entries}


def kappa_of(record: list[tuple[str, str, str]]) -> tuple[float, int]:
    """Cohen's kappa of the fake's answers against the human grades, computed here from scratch."""
    n = len(record)
    human = [h == "pass" for _, h, _ in record]
    judge = [j == "pass" for _, _, j in record]  # an unparseable answer is a fail
    observed = sum(a == b for a, b in zip(human, judge, strict=True)) / n
    ph, pj = sum(human) / n, sum(judge) / n
    chance = ph * pj + (1 - ph) * (1 - pj)
    return (0.0 if chance == 1 else (observed - chance) / (1 - chance)), n


def run(tmp_path: Path, judge: FakeJudge, monkeypatch: pytest.MonkeyPatch, *extra: str) -> int:
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", judge.url)
    argv = ["explanation", "--judge-backend", "openai", "--judge-model", "fake-judge", "--split", "all"]
    argv += ["--corpus", str(tmp_path / "judgements.json"), "--cache-dir", str(tmp_path / "cache"), *extra]
    return judge_check.main(argv)


def printed_kappa(out: str) -> tuple[float, float, float, int]:
    found = re.search(r"^kappa (-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\] n=(\d+)$", out, flags=re.MULTILINE)
    assert found, out
    return float(found[1]), float(found[2]), float(found[3]), int(found[4])


@pytest.mark.parametrize(("right", "code"), [(0.96, 0), (0.7, 3)])
def test_the_kappa_printed_is_the_fakes_and_the_exit_says_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], right: float, code: int
) -> None:
    grades = write_corpus(tmp_path / "judgements.json")
    with FakeJudge(grades, right=lambda entry_id: right) as judge:
        assert run(tmp_path, judge, monkeypatch) == code
    out = capsys.readouterr().out
    expected, n = kappa_of(judge.record)
    k, low, high, printed_n = printed_kappa(out)
    assert (k, printed_n) == (round(expected, 2), n) and n == 80
    assert low <= k <= high
    assert (low >= judge_check.THRESHOLD) == (code == 0)
    assert ("NOT validated" in out) == (code == 3)


def test_an_always_pass_judge_gets_kappa_zero_and_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(tmp_path / "judgements.json")
    always = json.dumps({"grade": "pass", "reason": "looks fine"})
    with FakeJudge(grades, answer=lambda entry_id, human: always) as judge:
        assert run(tmp_path, judge, monkeypatch) == 3
    out = capsys.readouterr().out
    assert printed_kappa(out) == (0.0, 0.0, 0.0, 80)
    assert "human fail            0" not in out  # it passed the human's fails too
    assert re.search(r"human fail\s+\d+\s+0$", out, flags=re.MULTILINE), out


def test_an_answer_invalid_for_the_schema_is_a_fail_and_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(tmp_path / "judgements.json")

    def answer(entry_id: str, human: str) -> str:
        if entry_id.endswith("3"):
            return '{"grade": "maybe", "reason": "unsure"}'
        return json.dumps({"grade": human, "reason": "agrees"})

    with FakeJudge(grades, answer=answer) as judge:
        run(tmp_path, judge, monkeypatch)
    out = capsys.readouterr().out
    bad = sum(1 for _, _, j in judge.record if j == "unparseable")
    assert bad == 8
    assert f"unparseable     {bad} judgement(s) counted as fail" in out
    assert printed_kappa(out)[0] == round(kappa_of(judge.record)[0], 2)


def test_the_validation_is_recorded_and_a_rerun_needs_no_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(tmp_path / "judgements.json")
    with FakeJudge(grades, right=lambda entry_id: 0.96) as judge:
        assert run(tmp_path, judge, monkeypatch) == 0
    first = capsys.readouterr().out
    assert run(tmp_path, judge, monkeypatch) == 0  # the server is gone: every judgement is cached
    assert printed_kappa(capsys.readouterr().out) == printed_kappa(first)
    store = open_store(None, tmp_path / "cache")
    try:
        ids = [p.name for p in (tmp_path / "cache" / "runs").iterdir()]
        assert len(ids) == 1 and ids[0].startswith(VALIDATION_PREFIX)
        record = store.runs.load(ids[0], "validation", Validation)
        assert store.runs.run_ids() == []  # not a run: listings leave it out
    finally:
        store.close()
    k, low, high, n = printed_kappa(first)
    assert (round(record.kappa, 2), round(record.low, 2), round(record.high, 2), record.n) == (k, low, high, n)
    assert record.validated and record.judge["backend"] == "openai" and record.judge["model"] == "fake-judge"


def test_no_reachable_judge_is_one_line_naming_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_corpus(tmp_path / "judgements.json", count=10)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", url)
    argv = ["explanation", "--judge-backend", "openai", "--judge-model", "m", "--split", "all", "--retries", "1"]
    argv += ["--corpus", str(tmp_path / "judgements.json"), "--cache-dir", str(tmp_path / "cache")]
    assert judge_check.main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and url in err, err


def test_repeats_at_a_temperature_give_the_judges_agreement_with_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grades = write_corpus(tmp_path / "judgements.json")
    with FakeJudge(grades, right=lambda entry_id: 0.8) as judge:
        run(tmp_path, judge, monkeypatch, "--repeat", "3", "--judge-temperature", "0.7")
    out = capsys.readouterr().out
    by_entry: dict[str, list[str]] = {}
    for entry_id, _, grade in judge.record:  # one request at a time: an entry's n-th answer is its sample n
        by_entry.setdefault(entry_id, []).append(grade)
    assert len(judge.record) == 240 and all(len(g) == 3 for g in by_entry.values())
    alike = sum(len(set(g)) == 1 for g in by_entry.values())
    k, _ = kappa_of([(e, g[0], g[1]) for e, g in by_entry.items()])  # sample 1 against sample 2
    assert 0 < alike < 80
    assert f"self-agreement  {alike} of 80 entries graded alike in all 3 samples; kappa sample 1 vs 2 {k:.2f}" in out
    against_people = [(e, grades_of(e, judge), g[0]) for e, g in by_entry.items()]  # kappa is on sample 1
    assert printed_kappa(out)[0] == round(kappa_of(against_people)[0], 2)


def grades_of(entry_id: str, judge: FakeJudge) -> str:
    """The human grade the fake was told for an entry."""
    return next(human for e, human, _ in judge.record if e == entry_id)
