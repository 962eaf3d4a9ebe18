"""Generate (cached) and score the explanation eval: `python evals/run_explanation_eval.py --help`."""

from __future__ import annotations

from evals.cli.runner import main
from evals.explanation_eval import TASK

if __name__ == "__main__":
    raise SystemExit(main(TASK))
