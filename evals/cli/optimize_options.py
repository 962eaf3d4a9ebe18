"""The tagging optimiser's command line: its options and their defaults (evals/optimize_tagging.py runs it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from attest.options import OneLineErrorParser, add_backend_options, at_least
from evals.cli.options import label_type, margin_type
from evals.store.settings import add_store_arguments

__all__ = ["DEFAULT_BUDGET", "DEFAULT_MAX_DEMOS", "DEFAULT_OUTPUT", "optimise_parser"]

DEFAULT_OUTPUT = Path(__file__).parent.parent / "prompts" / "tagging.json"
DEFAULT_BUDGET = 12
DEFAULT_MAX_DEMOS = 3  # with 3 demos a request is ~1200 tokens; SmolLM2 (local) has 2048 for prompt and answer


def optimise_parser() -> argparse.ArgumentParser:
    """The options of optimize_tagging.py."""
    parser = OneLineErrorParser(
        prog="optimize_tagging.py",
        description="Bootstrap few-shot demos for the tagging prompt on train cases; compare the candidate with "
        "the shipped prompt on dev and write it only when the verdict is ship. Exit 0 whatever the verdict "
        "(it is printed and recorded), 1 on an error, 2 on a usage error.",
    )
    parser.add_argument(
        "--budget",
        type=at_least(1),
        default=DEFAULT_BUDGET,
        help=f"model calls the optimiser may make on train cases "
        f"(default {DEFAULT_BUDGET}); dev scoring costs up to twice the dev cases more, less when cached",
    )
    parser.add_argument("--seed", type=int, default=0, help="which train cases the optimiser tries (default 0)")
    parser.add_argument(
        "--max-demos",
        type=at_least(1),
        default=DEFAULT_MAX_DEMOS,
        help=f"demos in the prompt (default {DEFAULT_MAX_DEMOS})",
    )
    parser.add_argument(
        "--margin", type=margin_type, default=0.0, help="gain over the baseline required to ship, fixed before looking"
    )
    parser.add_argument(
        "--split",
        choices=("dev", "train"),
        default="dev",
        help="where the candidate is judged: dev (default); train is refused, the demos were chosen there",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="where an accepted artifact goes (default evals/prompts/tagging.json)",
    )
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    add_store_arguments(parser)
    parser.add_argument(
        "--label",
        type=label_type,
        default="optimiser",
        metavar="NAME",
        help="label the two runs 'NAME baseline' and 'NAME candidate' (default optimiser)",
    )
    parser.add_argument("--json", action="store_true", help="print the record of the run as JSON")
    add_backend_options(parser, default_backend="auto")
    return parser
