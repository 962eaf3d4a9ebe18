"""rescore's command line: its options (evals/rescore.py runs it), and the judge they name."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from attest.errors import AttestError
from attest.options import OneLineErrorParser
from evals.cli.options import add_judge_options, judge_settings
from evals.engine.judge import known_judge
from evals.store.keys import Identity
from evals.store.models import Manifest
from evals.store.settings import add_store_arguments

__all__ = ["judge_identity", "rescore_parser"]


def rescore_parser() -> argparse.ArgumentParser:
    """The options of `python -m evals.rescore`."""
    parser = OneLineErrorParser(
        prog="rescore",
        description="Re-score past runs from the cache with today's scorers and labels; never calls a model. "
        "Exit 0 when every run was re-scored (label and scorer changes are reported), 1 on an error, "
        "2 on a usage error.",
    )
    parser.add_argument("--run", help="re-score this run id only (see `python -m evals.runs list`)")
    parser.add_argument("--all", action="store_true", help="re-score every complete run, not only the latest per task")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    add_store_arguments(parser)
    parser.add_argument(
        "--corpus", type=Path, help="read the labels from this corpus file instead of the run's own (needs --run)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_judge_options(
        parser,
        what="re-judge each run's answers with this judge's cached judgements, never asking it (env "
        "ATTEST_JUDGE_BACKEND; default: the judgements of the run's own judge); the judge must have judged a run",
    )
    return parser


def judge_identity(args: argparse.Namespace, manifests: Iterable[Manifest]) -> Identity | None:
    """--judge-backend/--judge-model: that judge's identity as a run it judged recorded it (rescore builds no
    backend, so the digest comes from the record); None without the options."""
    settings = judge_settings(args)
    if settings is None:
        return None
    found = known_judge(manifests, settings.backend, settings.model)
    if found is None:
        raise AttestError(
            f"--judge-backend {settings.backend}: no run in the store was judged by it, so its judgements cannot be in "
            "the cache: judge a run with it (the eval scripts' --judge-backend), or leave the option out"
        )
    return found
