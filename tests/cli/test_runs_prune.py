"""Pruning keeps what matters (issue 34, item 7), and `runs show --case` (item 5): `--keep-last N` counts
complete whole-split runs, so warm reruns of a quick try never push the baseline out; quick tries go by
`--subsets`; a dry run with nothing to do says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import reaction_eval
from tests.cli.test_runs import cli, eval_run


def test_keep_last_counts_whole_split_runs_and_subsets_go_by_their_own_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = eval_run(reaction_eval.TASK, tmp_path, capsys)
    tries = [eval_run(reaction_eval.TASK, tmp_path, capsys, "--limit", "5") for _ in range(2)]
    one = eval_run(reaction_eval.TASK, tmp_path, capsys, "--case", "fx-chemist-item-03")
    code, out, _ = cli(tmp_path, capsys, "prune", "--keep-last", "1")
    assert code == 0 and out == "nothing to prune\n"  # the step-1 baseline stays, however many quick tries
    latest = eval_run(reaction_eval.TASK, tmp_path, capsys)
    code, out, _ = cli(tmp_path, capsys, "prune", "--keep-last", "1")
    assert out.splitlines() == [f"would remove {baseline}", "dry run: nothing removed; add --yes to remove these"]
    code, out, _ = cli(tmp_path, capsys, "prune", "--subsets", "--yes")
    assert code == 0 and sorted(line.split()[1] for line in out.splitlines()[:-1]) == sorted([*tries, one])
    left = {p.name for p in (tmp_path / "runs").iterdir() if p.is_dir()}
    assert left == {baseline, latest}


def test_a_dry_run_that_removes_nothing_says_nothing_to_prune(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_run(reaction_eval.TASK, tmp_path, capsys)
    for argv in (["--incomplete"], ["--subsets"], ["--keep-last", "3"], ["--incomplete", "--yes"]):
        code, out, _ = cli(tmp_path, capsys, "prune", *argv)
        assert (code, out) == (0, "nothing to prune\n"), argv


def test_runs_show_case_prints_inputs_and_gold_beside_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    run_id = eval_run(reaction_eval.TASK, tmp_path, capsys)
    case = next(c for c in json.loads(reaction_eval.TASK.corpus.read_text(encoding="utf-8")) if c["split"] == "dev")
    code, out, _ = cli(tmp_path, capsys, "show", run_id, "--case", case["id"])
    assert code == 0
    lines = out.splitlines()
    assert f"      input   title: {case['title']}" in lines
    assert f"      gold    verdict: {json.dumps(case['verdict'])}" in lines
    assert any(line.startswith("      answer  ") for line in lines)
    code, out, _ = cli(tmp_path, capsys, "show", run_id, "--case", case["id"], "--json")
    (row,) = json.loads(out)["cases"]
    assert row["inputs"]["title"] == case["title"] and row["gold"] == {"verdict": json.dumps(case["verdict"])}
