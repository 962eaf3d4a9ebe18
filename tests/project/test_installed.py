"""The harness as installed: `pip install .` puts `attest/` and `evals/` (corpora included) in site-packages.

A real `pip install` needs the package index (it runs by hand; CONTRIBUTING.md says how).
Here the wheel's layout is copied into a temporary site directory (the packages the
wheel lists in pyproject.toml, with every non-Python file in them) and run from a
directory outside any checkout: no project root is assumed, the commit is recorded as
unknown, and corpus paths are absolute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evals.corpus import paths
from evals.engine import provenance

REPO = Path(__file__).resolve().parents[2]


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    packages = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]
    for package in packages["targets"]["wheel"]["packages"]:
        source = REPO / package
        shutil.copytree(source, site / source.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return site


def _python(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "ATTEST_DEBUG": "1"}
    env.pop("ATTEST_CACHE_DIR", None)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_runs_list_and_an_offline_eval_work_outside_a_checkout(tmp_path: Path) -> None:
    site, outside = _site(tmp_path), tmp_path / "outside"
    outside.mkdir()
    git = ["git", "-C", str(outside), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)  # someone else's repository, with a commit
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True, timeout=30)
    probe = "import evals, evals.corpus.paths as p; print(evals.__file__, p.CHECKOUT)"
    where = _python(site, outside, "-c", probe)
    assert where.stdout.split() == [str(site / "evals" / "__init__.py"), "None"], where.stderr
    cache = tmp_path / "x"
    cache.mkdir()  # a missing cache directory is an error of its own (tests/cli/test_runs_options.py)
    for argv in (["--cache-dir", str(cache), "list"], ["list", "--cache-dir", str(cache)]):
        listed = _python(site, outside, "-m", "evals.runs", *argv)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("run ")
    ran = _python(site, outside, "-m", "evals.run_tagging_eval", "--offline", "--cache-dir", str(cache), "--json")
    assert ran.returncode == 0, ran.stderr
    (manifest,) = (cache / "runs").glob("*/manifest.json")
    recorded = json.loads(manifest.read_text(encoding="utf-8"))["provenance"]
    assert recorded["git_commit"] is None and recorded["git_dirty"] is None  # not the outside repository's
    assert recorded["corpus"] == str(site / "evals" / "tagging_cases.json")  # absolute: outside the cwd


def test_outside_a_checkout_paths_are_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "CHECKOUT", None)  # what an installed copy finds
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.json").write_text("[]", encoding="utf-8")
    assert paths.corpus_ref(tmp_path / "mine.json") == "mine.json"
    assert paths.resolve_corpus("mine.json") == tmp_path / "mine.json"
    assert paths.corpus_ref(REPO / "evals" / "tagging_cases.json") == str(REPO / "evals" / "tagging_cases.json")
    assert provenance.git_state() == (None, None)
