"""`compare` says what changed and refuses to credit what it cannot: confounds, itself, the stub, narrowed refs.

Runs are real records (tests/recorded_runs.py and the offline stub through the run
scripts); a confounded pair is made the way a user makes one, by changing a second
thing (the options recorded in the candidate's manifest) beside the model.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from evals import tagging_eval
from evals.analysis.comparison import ComparisonError, RunScores, compare
from evals.analysis.pairing import decide, load_run, recheck
from evals.render.comparison_markdown import to_markdown
from evals.render.comparison_text import to_text
from evals.store.records import DirStore
from tests.cli.test_compare import Pair, _offline, make_pair, one_line_error, run_compare, usage
from tests.recorded_runs import record


def _edit_manifest(cache: Path, run_id: str, **fields: object) -> None:
    path = cache / "runs" / run_id / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(json.dumps(data), encoding="utf-8")


def _shipping_pair(tmp_path: Path) -> Pair:
    return make_pair(tmp_path, better=14, worse=0, both_right=3, both_wrong=3)


def test_a_pair_whose_model_and_options_both_differ_is_inconclusive_whatever_the_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _shipping_pair(tmp_path)
    assert run_compare(capsys, runs.cache, runs.base, runs.cand).code == 0  # the model alone changed: it ships
    _edit_manifest(runs.cache, runs.cand, options={"temperature": 0.8})
    mixed = run_compare(capsys, runs.cache, runs.base, runs.cand)
    assert mixed.code == 3
    lines = mixed.out.splitlines()
    assert lines[1].startswith("differs     confounded: model, options differ")  # it opens with what differs
    assert "  model: base -> cand" in lines and '  options: {} -> {"temperature": 0.8}' in lines
    assert "INCONCLUSIVE: confounded: model and options both differ" in mixed.out
    assert "(the interval alone would say ship)" in mixed.out and "--accept-mixed" in mixed.out
    data = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json").json()
    assert data["confounded"] == ["model", "options"] and data["measured_verdict"] == "ship"
    accepted = run_compare(capsys, runs.cache, runs.base, runs.cand, "--accept-mixed")
    assert accepted.code == 0 and "accepted with --accept-mixed" in accepted.out


def test_the_gate_records_the_same_rule(tmp_path: Path) -> None:
    runs = _shipping_pair(tmp_path)
    _edit_manifest(runs.cache, runs.cand, options={"temperature": 0.8})
    store = DirStore(runs.cache / "runs")
    x, decision = decide(load_run(store, runs.base), load_run(store, runs.cand), margin=0.0)
    assert decision.verdict == x.verdict == "inconclusive" and x.confounded == ("model", "options")


def test_a_run_compared_with_itself_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _shipping_pair(tmp_path)
    err = one_line_error(run_compare(capsys, runs.cache, runs.cand, runs.cand))
    assert f"run {runs.cand} is compared with itself" in err
    copy = runs.cand[:-8] + "0" * 8
    shutil.copytree(runs.cache / "runs" / runs.cand, runs.cache / "runs" / copy)
    result = run_compare(capsys, runs.cache, runs.cand, copy)
    assert result.code == 1 and result.out == "" and result.err.count("\n") == 1
    # refused as a copy either way: by compare, or already when the copy's records are read (id != directory)
    assert "compared with itself" in result.err or "copied or renamed" in result.err


def test_compare_refuses_one_run_id_on_both_sides() -> None:
    scores = {"c": [1.0]}
    with pytest.raises(ComparisonError, match="run r1 is compared with itself"):
        compare(RunScores("t", "r1", scores), RunScores("t", "r1", scores))


def test_a_prompt_change_on_the_stub_says_the_stub_does_not_read_the_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _offline(tagging_eval.TASK, tmp_path)
    prompt = tmp_path / "prompt.json"
    prompt.write_text(json.dumps({"instructions": "Tag the item.\nUse only the reader's topics."}), encoding="utf-8")
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(prompt))
    cand = _offline(tagging_eval.TASK, tmp_path)
    result = run_compare(capsys, tmp_path, base, cand)
    assert result.code == 3
    assert "the stub backend does not read the prompt" in result.out
    assert "add cases" not in result.out
    assert "  system prompts, line by line:" in result.out
    assert re.search(r"^    \+Tag the item\.$", result.out, re.M)  # the diff of the system prompts


def test_two_runs_that_answered_alike_are_not_told_to_add_cases() -> None:
    same = {f"c{i}": [float(i % 2)] for i in range(20)}
    x = compare(RunScores("t", "a", same), RunScores("t", "b", same))
    assert x.verdict == "inconclusive"
    assert "add cases" not in to_text(x)
    assert "one measurement taken twice" in to_text(x)
    moved = RunScores("t", "b", same, provenance={"model": "m2"})
    assert "no case changed score" in to_text(compare(RunScores("t", "a", same, provenance={"model": "m1"}), moved))


# --- narrowed references ---------------------------------------------------------------------------------


def test_latest_can_be_narrowed_by_model_and_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _shipping_pair(tmp_path)
    newer = record(runs.cache, runs.corpus, [], model="other")
    _edit_manifest(runs.cache, runs.base, label="baseline")
    plain = run_compare(capsys, runs.cache, "tagging@previous", "tagging@latest", "--json").json()
    assert plain["candidate"]["run"] == newer
    narrowed = run_compare(
        capsys, runs.cache, "tagging@latest,label=baseline", "tagging@latest,backend=fake,model=cand", "--json"
    ).json()
    assert (narrowed["baseline"]["run"], narrowed["candidate"]["run"]) == (runs.base, runs.cand)
    by_option = run_compare(
        capsys, runs.cache, "tagging@latest", "tagging@latest", "--base-filter", "model=base", "--cand-filter",
        "model=cand", "--json",
    ).json()  # fmt: skip
    assert (by_option["baseline"]["run"], by_option["candidate"]["run"]) == (runs.base, runs.cand)
    for bad in (("tagging@latest,colour=red", "tagging@latest"), ("tagging@latest", "x", "--cand-filter", "model")):
        assert "KEY one of backend, model, label, split" in usage(capsys, runs.cache, *bad)


def test_a_reference_says_when_it_skipped_newer_unfinished_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _shipping_pair(tmp_path)
    unfinished = record(runs.cache, runs.corpus, [], model="cand")
    _edit_manifest(runs.cache, unfinished, status="generating")
    result = run_compare(capsys, runs.cache, "tagging@latest,model=base", "tagging@latest,model=cand")
    assert result.code == 0
    assert result.err.count("\n") == 1
    # its writer is gone (no process holds its lock), so it lists as interrupted
    assert (
        f"skipped 1 newer run(s) that are not complete or ran a subset ({unfinished} (interrupted)); using {runs.cand}"
    ) in result.err


# --- markdown and JSON escape what text escapes -----------------------------------------------------------

HOSTILE = "m1<img src=x></details># SHIP *bold* [link](http://x) | cell\u202e\x9b\nnext"


def test_markdown_escapes_every_field_from_a_manifest_or_server() -> None:
    prov_a = {"model": "plain", "label": "a"}
    prov_b = {"model": HOSTILE, "label": "`code` <b>"}
    base = RunScores("t", "a", {"c": [0.0], "d": [1.0]}, {"c": HOSTILE}, provenance=prov_a)
    cand = RunScores("t", "b", {"c": [1.0], "d": [1.0]}, {"c": HOSTILE}, provenance=prov_b)
    md = to_markdown(compare(base, cand))
    assert "<img" not in md and "</details>#" not in md and "<b>" not in md
    assert "\u202e" not in md and "\x9b" not in md and "\\u202e" in md
    row = next(line for line in md.splitlines() if line.startswith("| model |"))
    assert row.count(" | ") == 2 and row.endswith(" |")  # one row, three cells: no line break, no extra cell
    assert "&lt;img src=x&gt;&lt;/details&gt;\\# SHIP \\*bold\\* \\[link\\]\\(http://x\\) \\| cell" in row
    assert html.unescape("&lt;") == "<"


def test_json_escapes_control_and_bidi_characters_as_text_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _shipping_pair(tmp_path)
    _edit_manifest(runs.cache, runs.cand, model="m\u202egnp.exe\x9b[2J")
    out = run_compare(capsys, runs.cache, runs.base, runs.cand, "--json")
    data = out.json()
    change = next(c for c in data["what_changed"] if c["key"] == "model")
    assert change["candidate"] == "m\\u202egnp.exe\\x9b[2J"
    assert "\u202e" not in json.dumps(data, ensure_ascii=False)


# --- the gate and the re-check on few changed graded cases ------------------------------------------------


@pytest.mark.parametrize("changed", [0, 1, 2])
def test_the_gate_and_the_recheck_decide_graded_runs_that_differ_in_m_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changed: int
) -> None:
    runs = make_pair(tmp_path, better=0, worse=0, both_right=10, both_wrong=2)
    path = runs.cache / "runs" / runs.cand / "report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    for result in report["results"][:changed]:
        result["score"] = 0.5  # a partly right answer: graded, and the only change
    path.write_text(json.dumps(report), encoding="utf-8")
    store = DirStore(runs.cache / "runs")
    base, cand = load_run(store, runs.base), load_run(store, runs.cand)
    x, decision = decide(base, cand, margin=0.0)
    assert x.paired.regressed == changed and decision.verdict == "inconclusive"
    assert recheck(decision, base, cand)["now"] == "inconclusive"
    assert run_compare(capsys, runs.cache, runs.base, runs.cand).code == 3
