"""Refs that find the run you mean (issue 34, item 1): `TASK@latest` passes over a quick try unless
`subset=` asks for it, and says so; `label=`, `branch=`, `commit=` narrow; `--label` on the eval
scripts; runs record the branch; an unknown task names the known ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import compare, reaction_eval, runs
from evals.cli import runner
from evals.engine import provenance
from evals.store import refs
from evals.store.records import DirStore


def _run(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> str:
    capsys.readouterr()
    assert runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(cache), "--json", *args]) == 0
    run_id: str = json.loads(capsys.readouterr().out)["run_id"]
    return run_id


def _compare(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = compare.main(["--cache-dir", str(cache), "--json", *args])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_latest_passes_over_a_limit_run_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _run(capsys, tmp_path)
    second = _run(capsys, tmp_path)
    quick = _run(capsys, tmp_path, "--limit", "10")
    code, out, err = _compare(capsys, tmp_path, "reaction@previous", "reaction@latest")
    assert code != 1, err  # the README's comparison works after a quick try
    found = json.loads(out)
    assert (found["baseline"]["run"], found["candidate"]["run"]) == (first, second)
    assert f"skipped 1 newer run(s) that are not complete or ran a subset ({quick} (--limit)); using {second}" in err
    store = DirStore(tmp_path / "runs")
    assert refs.resolve_ref(store, "reaction@latest,subset=limit") == quick
    assert refs.resolve_ref(store, "reaction@latest,subset=any") == quick
    assert refs.resolve_ref(store, "reaction@latest") == second
    assert refs.resolve(store, "reaction@latest").skipped == (f"{quick} (--limit)",)
    assert refs.resolve_ref(store, quick) == quick  # by id: any run
    assert runs.main(["--cache-dir", str(tmp_path), "show", "reaction@latest"]) == 0
    shown = capsys.readouterr()
    assert shown.out.startswith(f"run {second}: ") and f"({quick} (--limit)); using {second}" in shown.err


def test_a_case_run_is_passed_over_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = _run(capsys, tmp_path)
    one = _run(capsys, tmp_path, "--case", "fx-chemist-item-03")
    store = DirStore(tmp_path / "runs")
    assert refs.resolve_ref(store, "reaction@latest") == whole
    assert refs.resolve_ref(store, "reaction@latest,subset=case") == one
    with pytest.raises(refs.RunError, match="has 0 complete run"):
        refs.resolve_ref(store, "reaction@latest,subset=limit")


def test_label_branch_and_commit_narrow_a_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    on_main = _run(capsys, tmp_path, "--label", "baseline")
    monkeypatch.setenv("GITHUB_HEAD_REF", "feature/x")
    on_feature = _run(capsys, tmp_path, "--label", "candidate")
    store = DirStore(tmp_path / "runs")
    assert store.manifest(on_main).provenance.git_branch == "main"
    assert store.manifest(on_feature).provenance.git_branch == "feature/x"
    assert store.manifest(on_main).label == "baseline"
    assert refs.resolve_ref(store, "reaction@latest") == on_feature
    assert refs.resolve_ref(store, "reaction@latest,branch=main") == on_main
    assert refs.resolve_ref(store, "reaction@latest,label=baseline") == on_main
    assert refs.resolve_ref(store, "reaction@latest,branch=feature/x,label=candidate") == on_feature
    commit, _ = provenance.git_state()
    assert commit is not None
    assert refs.resolve_ref(store, f"reaction@previous,commit={commit[:7]}") == on_main
    with pytest.raises(refs.RunError, match="has 0 complete whole-split run"):
        refs.resolve_ref(store, "reaction@latest,commit=0000000")
    code, out, err = _compare(capsys, tmp_path, "reaction@latest,branch=main", "reaction@latest")
    assert code != 1, err
    found = json.loads(out)
    assert (found["baseline"]["run"], found["candidate"]["run"]) == (on_main, on_feature)


def test_the_branch_comes_from_the_checkout_outside_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    import subprocess

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    assert provenance.git_branch(repo) == "trunk"
    assert provenance.git_branch(tmp_path / "nowhere") is None


def test_label_is_checked_and_an_unknown_task_names_the_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(tmp_path), "--label", "x\ny"])
    assert "a label is one printable line" in capsys.readouterr().err
    _run(capsys, tmp_path)
    code, _, err = _compare(capsys, tmp_path, "reactoin@previous", "reaction@latest")
    assert code == 1 and "unknown task 'reactoin'; the known tasks are tagging, reaction" in err, err
