"""Generate (cached) and score the reaction eval: `python evals/run_reaction_eval.py --help`."""

from __future__ import annotations

from evals.cli.runner import main
from evals.reaction_eval import TASK

if __name__ == "__main__":
    raise SystemExit(main(TASK))
