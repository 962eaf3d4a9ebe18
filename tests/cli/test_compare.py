"""`python -m evals.compare`: exit codes per verdict, references, refusals, and what it prints.

Runs are real records: offline (stub) runs through `evals.cli.runner.main`, and tagging runs
through the one loop with a fake model that is right or wrong per case as each test
says (tests/recorded_runs.py), so every verdict below has a known cause.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evals import compare, explanation_eval, reaction_eval, tagging_eval
from evals.cli import runner
from evals.render.comparison_markdown import MARKDOWN_LIMIT
from evals.store.records import DirStore
from tests.recorded_runs import corpus_ids, record, write_corpus


@dataclass(frozen=True)
class Out:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_compare(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> Out:
    capsys.readouterr()
    code = compare.main(["--cache-dir", str(cache), *args])
    captured = capsys.readouterr()
    return Out(code, captured.out, captured.err)


def usage(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        compare.main(["--cache-dir", str(cache), *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("compare: error: "), err
    return err


def one_line_error(result: Out) -> str:
    assert result.code == 1, result
    assert result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("compare: error: "), result.err
    assert "Traceback" not in result.err
    return result.err


@dataclass(frozen=True)
class Pair:
    cache: Path
    corpus: Path
    base: str
    cand: str
    ids: list[str]


def make_pair(tmp_path: Path, better: int, worse: int, both_right: int, both_wrong: int, **kw: Any) -> Pair:
    """Two tagging runs on one corpus: `better` cases go 0 -> 1, `worse` 1 -> 0, the rest stay."""
    n = better + worse + both_right + both_wrong
    corpus = write_corpus(tmp_path / "tagging_cases.json", n)
    ids = corpus_ids(corpus)
    up, down, kept = ids[:better], ids[better : better + worse], ids[better + worse : better + worse + both_right]
    cache = tmp_path / "cache"
    base = record(cache, corpus, {*down, *kept}, model="base", **kw)
    cand = record(cache, corpus, {*up, *kept}, model="cand", **kw)
    return Pair(cache, corpus, base, cand, ids)


# --- the verdict is the exit code ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("better", "worse", "verdict", "code"),
    [
        pytest.param(14, 0, "ship", 0, id="ship"),
        pytest.param(0, 14, "regress", 4, id="regress"),
        pytest.param(3, 3, "inconclusive", 3, id="inconclusive"),
    ],
)
def test_the_exit_code_is_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], better: int, worse: int, verdict: str, code: int
) -> None:
    runs = make_pair(tmp_path, better, worse, 3, 20 - better - worse - 3)
    result = run_compare(capsys, runs.cache, runs.base, runs.cand)
    assert result.code == code, result
    assert f"verdict     {verdict.upper()}: " in result.out
    data = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json").json()
    assert (data["verdict"], data["exit_code"], data["counts"]["improved"], data["counts"]["regressed"]) == (
        verdict,
        code,
        better,
        worse,
    )


def test_the_readme_example_8_better_3_worse_on_20_cases_is_inconclusive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The optimiser's showcased accept under the old 0.01-gain gate: a sign test gives p ~ 0.23."""
    runs = make_pair(tmp_path, better=8, worse=3, both_right=4, both_wrong=5)
    result = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json")
    data = result.json()
    assert result.code == 3
    assert data["verdict"] == "inconclusive"
    assert (data["counts"]["improved"], data["counts"]["regressed"], data["difference"]["n"]) == (8, 3, 20)
    assert data["difference"]["low"] < 0 < data["difference"]["high"]
    assert 0.05 <= data["p_value"] < 0.5  # the interval's own test, so it agrees with "inconclusive"


def test_the_margin_is_applied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=14, worse=0, both_right=3, both_wrong=3)
    assert run_compare(capsys, runs.cache, runs.base, runs.cand).code == 0
    low = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json").json()["difference"]["low"]
    strict = run_compare(capsys, runs.cache, runs.base, runs.cand, "--margin", f"{low + 0.01:.3f}")
    assert strict.code == 3
    assert "not wholly above the margin" in strict.out


# --- references ------------------------------------------------------------------------------------


def test_task_at_latest_and_previous_name_the_newest_complete_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = make_pair(tmp_path, better=14, worse=0, both_right=3, both_wrong=3)
    by_id = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json")
    by_ref = run_compare(capsys, runs.cache, "tagging@previous", "tagging@latest", "--json")
    assert by_ref.code == by_id.code == 0
    assert by_ref.json() == by_id.json()
    assert run_compare(capsys, runs.cache, "tagging@latest", "tagging@previous").code == 4
    err = one_line_error(run_compare(capsys, runs.cache, "reaction@latest", "tagging@latest"))
    assert "no run of reaction in" in err
    err = one_line_error(run_compare(capsys, runs.cache, "reactoin@latest", "tagging@latest"))
    assert "unknown task 'reactoin'; the known tasks are " in err


def test_an_unknown_run_id_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=2, worse=0, both_right=1, both_wrong=1)
    err = one_line_error(run_compare(capsys, runs.cache, runs.base, "20990101T000000-tagging-00000000"))
    assert "20990101T000000-tagging-00000000" in err
    err = one_line_error(run_compare(capsys, runs.cache, runs.base, "../../etc"))
    assert "not a run id" in err


# --- refusals ----------------------------------------------------------------------------------------


def _offline(task: Any, cache: Path, *extra: str) -> str:
    before = set(DirStore(cache / "runs").run_ids())
    assert runner.main(task, ["--offline", "--cache-dir", str(cache), *extra]) == 0
    (new,) = set(DirStore(cache / "runs").run_ids()) - before
    return new


def test_runs_of_different_tasks_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tagging = _offline(tagging_eval.TASK, tmp_path)
    reaction = _offline(reaction_eval.TASK, tmp_path)
    err = one_line_error(run_compare(capsys, tmp_path, tagging, reaction))
    assert f"run {tagging} is a tagging run and run {reaction} a reaction run" in err


@pytest.mark.parametrize("field", ["tags", "summary"])
def test_a_case_whose_label_or_inputs_changed_between_the_runs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    corpus = write_corpus(tmp_path / "tagging_cases.json", 10)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, ids[:5], model="base")
    cases = json.loads(corpus.read_text(encoding="utf-8"))
    cases[3][field] = ["statistics"] if field == "tags" else cases[3][field] + " Revised."
    corpus.write_text(json.dumps(cases), encoding="utf-8")
    cand = record(cache, corpus, ids[:5], model="cand")
    err = one_line_error(run_compare(capsys, cache, base, cand))
    assert f"case {ids[3]}: the inputs or label differ between run {base} and run {cand}" in err
    assert "re-run the baseline" in err


def test_runs_of_different_splits_are_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "tagging_cases.json", 12, train=6)
    dev = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, [], model="base", split="dev")
    cand = record(cache, corpus, dev, model="cand", split="all")
    err = one_line_error(run_compare(capsys, cache, base, cand))
    assert "on the dev split" in err and "on the all split" in err and "--allow-split-mismatch" in err
    allowed = run_compare(capsys, cache, base, cand, "--allow-split-mismatch", "--json")
    assert allowed.code == 0
    data = allowed.json()
    assert (data["difference"]["n"], len(data["only_candidate"]), data["verdict"]) == (12, 6, "ship")


def test_a_run_that_did_not_complete_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=12, worse=0, both_right=1, both_wrong=1)
    manifest = runs.cache / "runs" / runs.base / "manifest.json"
    complete = manifest.read_text(encoding="utf-8")
    manifest.write_text(complete.replace('"status": "complete"', '"status": "generating"'), encoding="utf-8")
    err = one_line_error(run_compare(capsys, runs.cache, runs.base, runs.cand))
    assert f"run {runs.base} is not complete (status generating), so it cannot be compared" in err
    manifest.write_text(complete, encoding="utf-8")
    assert run_compare(capsys, runs.cache, runs.base, runs.cand).code == 0
    (runs.cache / "runs" / runs.cand / "report.json").unlink()
    err = one_line_error(run_compare(capsys, runs.cache, runs.base, runs.cand))
    assert f"run {runs.cand} is not complete (status complete, no report)" in err


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--margin", "-0.1"], id="negative-margin"),
        pytest.param(["--margin", "nan"], id="nan-margin"),
        pytest.param(["--show", "-1"], id="negative-show"),
        pytest.param(["--json", "--markdown"], id="json-and-markdown"),
    ],
)
def test_usage_errors_exit_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    usage(capsys, tmp_path, "tagging@previous", "tagging@latest", *args)


def test_refs_without_a_task_need_all_and_all_needs_refs_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--all" in usage(capsys, tmp_path, "@previous", "@latest")
    assert "@latest or @previous" in usage(capsys, tmp_path, "--all", "tagging@previous", "tagging@latest")


# --- what is printed ---------------------------------------------------------------------------------


def test_show_puts_regressions_first_with_both_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=4, worse=2, both_right=2, both_wrong=2)
    result = run_compare(capsys, runs.cache, runs.base, runs.cand, "--show", "3")
    side = result.out.split("side by side (3 of 6 changed cases, losses first)\n")[1]
    shown = re.findall(r"^  (\S+) \[[^\]]+\] (\d\.\d\d) -> (\d\.\d\d)$", side, flags=re.MULTILINE)
    down, up = runs.ids[4:6], runs.ids[:4]
    assert [c for c, _, _ in shown] == [*sorted(down), sorted(up)[0]]
    assert [(b, c) for _, b, c in shown] == [("1.00", "0.00"), ("1.00", "0.00"), ("0.00", "1.00")]
    gold = {c.id: c.tags for c in tagging_eval.load_cases(runs.corpus)}
    first = sorted(down)[0]
    assert f"    baseline:  {json.dumps({'tags': gold[first]})}\n" in side
    assert f"regressed   {sorted(down)[0]} (1.00 -> 0.00), {sorted(down)[1]} (1.00 -> 0.00)" in result.out
    none = run_compare(capsys, runs.cache, runs.base, runs.cand, "--show", "0")
    assert "side by side" not in none.out and none.code == result.code


def test_json_lists_every_changed_case_with_answers_families_and_what_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = make_pair(tmp_path, better=9, worse=2, both_right=2, both_wrong=2)
    data = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json", "--show", "1").json()
    assert [c["id"] for c in data["regressed"]] == sorted(runs.ids[9:11])
    assert len(data["improved"]) == 9
    families = {c.id: c.family for c in tagging_eval.load_cases(runs.corpus)}
    for change in data["regressed"] + data["improved"]:
        assert change["family"] == families[change["id"]]
        assert change["baseline_answer"].startswith('{"tags": [') and change["candidate_answer"].startswith('{"tags"')
    assert {f["family"] for f in data["families"]} == set(families.values())
    assert sum(f["n"] for f in data["families"]) == 15
    changed = {c["key"]: (c["baseline"], c["candidate"]) for c in data["what_changed"]}
    assert changed == {"model": ("base", "cand")}
    assert set(data) >= {"baseline", "candidate", "difference", "p_value", "test", "margin", "detectable"}


def test_a_case_gone_from_the_corpus_file_is_family_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=5, worse=0, both_right=1, both_wrong=1)
    cases = json.loads(runs.corpus.read_text(encoding="utf-8"))
    runs.corpus.write_text(json.dumps([c for c in cases if c["id"] != runs.ids[0]]), encoding="utf-8")
    data = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json").json()
    assert {c["id"]: c["family"] for c in data["improved"]}[runs.ids[0]] == "unknown"
    runs.corpus.unlink()
    data = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json").json()
    assert [f["family"] for f in data["families"]] == ["unknown"]


def test_answers_missing_from_the_cache_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=3, worse=0, both_right=1, both_wrong=1)
    shutil.rmtree(runs.cache / "responses")
    result = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json")
    assert {c["baseline_answer"] for c in result.json()["improved"]} == {"(not in the cache)"}
    assert not (runs.cache / "responses").exists()  # compare reads; it does not create a cache


def test_markdown_stays_under_a_pr_comment_and_nothing_printed_drives_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J" + "not JSON, and long " * 400
    corpus = write_corpus(tmp_path / "tagging_cases.json", 150)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, ids[:70], model="base", wrong_text=hostile)
    cand = record(cache, corpus, ids[70:], model="cand", wrong_text=hostile)
    md = run_compare(capsys, cache, base, cand, "--markdown", "--show", "150")
    assert md.code in (0, 3, 4)
    assert len(md.out) < MARKDOWN_LIMIT
    assert md.out.startswith("### tagging: **")
    assert "Side by side, losses first" in md.out and "more not shown" in md.out
    for result in (md, run_compare(capsys, cache, base, cand, "--show", "150")):
        assert "\x1b" not in result.out and "\x07" not in result.out
        assert "\\x1b" in result.out
    data = run_compare(capsys, cache, base, cand, "--json").json()
    answer = data["regressed"][0]["candidate_answer"]  # escaped as the text output escapes it
    assert "\x1b" not in answer and "\x07" not in answer and answer.startswith("\\x1b]0;owned\\x07")


# --- every task at once -----------------------------------------------------------------------------


def test_all_decides_three_tasks_under_holm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = (tagging_eval.TASK, reaction_eval.TASK, explanation_eval.TASK)
    for task in tasks:
        _offline(task, tmp_path)
    for task in tasks[1:]:
        _offline(task, tmp_path)
    worse = record(tmp_path, tagging_eval.CORPUS, [], model="wrong-about-everything")
    result = run_compare(capsys, tmp_path, "--all", "@previous", "@latest", "--json", "--accept-mixed")
    data = result.json()
    verdicts = {x["task"]: x["verdict"] for x in data["comparisons"]}
    assert verdicts == {"tagging": "regress", "reaction": "inconclusive", "explanation": "inconclusive"}
    assert result.code == data["exit_code"] == 4
    assert all(x["holm"]["comparisons"] == 3 for x in data["comparisons"])
    assert data["comparisons"][0]["candidate"]["run"] == worse
    text = run_compare(capsys, tmp_path, "--all", "@previous", "@latest", "--accept-mixed")
    assert text.code == 4
    assert [line.split(":")[0] for line in text.out.splitlines() if " vs baseline " in line] == list(verdicts)
    assert text.out.count("Holm over 3 comparisons") == 3
    md = run_compare(capsys, tmp_path, "--all", "@previous", "@latest", "--markdown", "--accept-mixed")
    assert md.out.count("### ") == 3 and len(md.out) < MARKDOWN_LIMIT
