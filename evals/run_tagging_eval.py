"""Generate (cached) and score the tagging eval: `python evals/run_tagging_eval.py --help`."""

from __future__ import annotations

from evals.cli.runner import main
from evals.tagging_eval import TASK

if __name__ == "__main__":
    raise SystemExit(main(TASK))
