"""The command lines: every option of every entry point has help text, shared options
mean the same everywhere, and nonsense or contradictory values are refused in one
line (exit 2) before any work starts."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from attest import cli
from evals import compare, corpus_check, judge_check, reaction_eval, rescore, runs
from evals.cli import optimize_options, runner

REPO = Path(__file__).resolve().parents[2]
PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "attest": cli.build_parser,
    "run_reaction_eval.py": lambda: runner._parser(reaction_eval.TASK),
    "rescore": rescore._parser,
    "runs": runs._parser,
    "compare": compare._parser,
    "corpus_check": corpus_check._parser,
    "optimize_tagging.py": optimize_options.optimise_parser,
    "judge_check": judge_check._parser,
}


def _all_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_parsers(sub)


def _options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for each in _all_parsers(parser):
        for action in each._actions:
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                yield action


@pytest.mark.parametrize("name", PARSERS)
def test_every_option_has_help_text(name: str) -> None:
    missing = [a.option_strings or a.dest for a in _options(PARSERS[name]()) if not (a.help or "").strip()]
    assert not missing, f"{name}: no help for {missing}"


def _shared(option: str) -> dict[str, argparse.Action]:
    found = {}
    for name, make in PARSERS.items():
        for action in _options(make()):
            if option in action.option_strings:
                found[name] = action
    return found


@pytest.mark.parametrize("option", ["--backend", "--model", "--retries", "--timeout", "--cache-dir"])
def test_a_shared_option_means_the_same_everywhere(option: str) -> None:
    """The same words (before any default), type and choices in every entry point that has it."""
    found = _shared(option)
    assert len(found) >= 3, found
    words = {name: (a.help or "").split(" (")[0].split("; default")[0] for name, a in found.items()}
    assert len(set(words.values())) == 1, words
    assert len({a.type for a in found.values()}) == 1
    assert len({tuple(a.choices or ()) for a in found.values()}) == 1


def test_json_is_a_flag_and_split_names_the_same_splits_everywhere() -> None:
    assert all(a.nargs == 0 for a in _shared("--json").values())
    splits = _shared("--split")
    assert splits and all(set(a.choices or ()) <= {"train", "dev", "all"} for a in splits.values())


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "extra",
    [
        ["--offline", "--backend", "local"],
        ["--repeat", "0"],
        ["--worst", "-1"],
        ["--timeout", "-1"],
        ["--timeout", "nan"],
        ["--retries", "0"],
        ["--concurrency", "0"],
        ["--temperature", "nan"],
        ["--lease-wait", "-5"],
    ],
    ids=lambda extra: " ".join(extra),
)
def test_run_scripts_refuse_nonsense_in_one_line(extra: list[str], tmp_path: Path) -> None:
    done = _run([str(REPO / "evals/run_tagging_eval.py"), "--cache-dir", str(tmp_path / "c"), *extra], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "error:" in done.stderr, done.stderr
    assert not (tmp_path / "c").exists()  # refused before any work: no cache, no run


def test_make_eval_passes_no_backend_so_attest_backend_is_honoured() -> None:
    """`make eval` leaves the backend to ATTEST_BACKEND (else auto): it must not hard-code --backend."""
    dry = subprocess.run(["make", "-n", "eval"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    recipe = [line for line in dry.stdout.splitlines() if "eval-reaction" in line]
    assert recipe and all("--backend" not in line for line in recipe), dry.stdout


@pytest.mark.slow
def test_attest_backend_chooses_the_run_scripts_backend(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}", "ATTEST_BACKEND": "stub"}
    done = subprocess.run(
        [sys.executable, str(REPO / "evals/run_tagging_eval.py"), "--cache-dir", str(tmp_path), "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"backend": "stub"' in done.stdout


def test_make_help_lists_the_targets() -> None:
    done = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for target in ("test", "eval", "corpus-check", "rescore", "runs", "dev", "bench"):
        assert f"make {target} " in done.stdout, target
