"""What the reliability modules share: a slice of the reaction corpus on disk, and an in-process reaction run.

Every module here drives the reaction eval (the task with the most fields to corrupt)
against tests/reliability/fakeserver.py; they differ in the fault, not in how a corpus
is written or a run's stderr is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attest.backends.registry import make_backend
from evals.cli.runner import BackendFactory, main
from evals.reaction_eval import CORPUS, TASK

PROGRESS = f"{TASK.name} all: "  # the progress lines of a run over --split all, which no test reads


def corpus_cases(part: slice) -> list[dict[str, Any]]:
    """The cases `part` of the reaction corpus, as JSON objects."""
    cases: list[dict[str, Any]] = json.loads(CORPUS.read_text(encoding="utf-8"))[part]
    return cases


def write_corpus(directory: Path, part: slice, name: str = "corpus.json") -> Path:
    """The cases `part` of the reaction corpus written to `directory/name` (the directory is made)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(corpus_cases(part), indent=1), encoding="utf-8")
    return path


def run_reaction(
    cache_dir: Path,
    corpus: Path,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
    backend_factory: BackendFactory = make_backend,
) -> tuple[int, list[str]]:
    """The reaction eval over `corpus` (every split) on the openai backend, in process: its exit status and
    its stderr lines, progress left out. `extra` options follow the shared ones."""
    argv = ["--backend", "openai", "--cache-dir", str(cache_dir), "--corpus", str(corpus), "--split", "all", *extra]
    code = main(TASK, argv, backend_factory=backend_factory)
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if not line.startswith(PROGRESS)]
