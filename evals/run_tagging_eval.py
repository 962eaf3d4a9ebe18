"""Generate (cached) and score the tagging eval: `python evals/run_tagging_eval.py --help`."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals.runner import main
from evals.tagging_eval import TASK

if __name__ == "__main__":
    raise SystemExit(main(TASK))
