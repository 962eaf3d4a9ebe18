"""Papercuts a new user hit in `runs` (issue 22, item 6): shared options on either side of the
subcommand, a missing cache or an unknown task as an error naming what there is, model names whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import reaction_eval, runs
from tests.cli.test_runs import eval_run, one_line_error


def _runs(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = runs.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("where", ["before", "after"])
def test_cache_dir_is_taken_before_or_after_the_subcommand(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = eval_run(reaction_eval.TASK, tmp_path, capsys)
    option = ["--cache-dir", str(tmp_path)]
    for command in (["list"], ["show", run_id], ["prune", "--incomplete"], ["gc"]):
        argv = [*option, *command] if where == "before" else [*command, *option]
        code, out, err = _runs(capsys, *argv)
        assert code == 0, err
    code, out, _ = _runs(capsys, *(["--cache-dir", str(tmp_path / "nowhere"), "list", *option]))
    assert code == 0 and run_id in out  # the one after the subcommand wins


def test_a_missing_cache_directory_is_an_error_not_an_empty_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _runs(capsys, "list", "--cache-dir", str(tmp_path / "nowhere"))
    assert code == 1 and out == ""
    one_line_error(err, "runs")
    assert f"no cache directory {tmp_path / 'nowhere'}" in err and "--cache-dir" in err


def test_an_unknown_task_is_an_error_naming_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    eval_run(reaction_eval.TASK, tmp_path, capsys)
    for argv in (["list", "--task", "reactoin"], ["show", "reactoin@latest"]):
        code, out, err = _runs(capsys, "--cache-dir", str(tmp_path), *argv)
        assert code == 1 and out == ""
        one_line_error(err, "runs")
        assert "unknown task 'reactoin'" in err and all(t in err for t in ("explanation", "reaction", "tagging"))


def test_a_long_model_name_is_never_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = eval_run(reaction_eval.TASK, tmp_path, capsys)
    path = tmp_path / "runs" / run_id / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "model": "qwen2.5-coder-32b-instruct-q4_K_M"}), encoding="utf-8")
    code, out, _ = _runs(capsys, "--cache-dir", str(tmp_path), "list")
    assert code == 0
    header, row = out.splitlines()
    assert " qwen2.5-coder-32b-instruct-q4_K_M " in row
    assert header.index("split") == row.index("dev"), out  # the columns still line up


def test_rescore_after_a_label_change_names_the_cases_whose_labels_and_scores_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals import rescore

    run_id = eval_run(reaction_eval.TASK, tmp_path, capsys, "--split", "dev")
    cases = json.loads(reaction_eval.CORPUS.read_text(encoding="utf-8"))
    dev = [c for c in cases if c["split"] == "dev"]
    flipped = {dev[0]["id"], dev[3]["id"]}
    for case in cases:
        if case["id"] in flipped:
            case["verdict"] = not case["verdict"]
    corpus = tmp_path / "relabelled.json"
    corpus.write_text(json.dumps(cases), encoding="utf-8")
    code = rescore.main(["--cache-dir", str(tmp_path), "--run", run_id, "--corpus", str(corpus), "--json"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    (labels,) = [c for c in row["changes"] if c.startswith("cases whose label or inputs changed: ")]
    assert set(labels.partition(": ")[2].split(", ")) == flipped
    (scores,) = [c for c in row["changes"] if c.startswith("scores moved: ")]
    assert {part.split()[0] for part in scores.partition(": ")[2].split(", ")} == flipped


def test_the_readme_react_and_explain_examples_show_what_they_print(capsys: pytest.CaptureFixture[str]) -> None:
    """Each `attest react|explain` line in README.md is followed by `# OUTPUT`, the line it prints; and the stub
    answers them sensibly (a reader of these interests opens the item; the explanation names a word, not a stem)."""
    import shlex

    from attest.cli import main as attest_main

    lines = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").splitlines()
    shown = {
        line.split()[1]: (shlex.split(line)[1:], lines[i + 1].removeprefix("# "))
        for i, line in enumerate(lines)
        if line.startswith(("attest react ", "attest explain "))
    }
    assert set(shown) == {"react", "explain"}
    for argv, expected in shown.values():
        assert attest_main(argv) == 0
        assert capsys.readouterr().out.strip() == expected
    assert json.loads(shown["react"][1])["verdict"] is True
    assert "catalysis" in json.loads(shown["explain"][1])["text"]
