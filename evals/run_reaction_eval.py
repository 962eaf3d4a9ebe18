"""Generate (cached) and score the reaction eval: `python evals/run_reaction_eval.py --help`."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals.reaction_eval import TASK
from evals.runner import main

if __name__ == "__main__":
    raise SystemExit(main(TASK))
