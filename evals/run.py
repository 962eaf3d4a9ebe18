"""`python -m evals.run TASK [eval options]`: generate (cached) and score any registered task.

TASK is a built-in task (tagging, reaction, explanation) or one a plug-in package adds through
the `attest.tasks` entry points; the options are the eval options (`python -m evals.run TASK --help`).
`evals/run_*_eval.py` are this command with the task fixed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from attest.backends.registry import make_backend
from attest.errors import run_main
from attest.options import OneLineErrorParser
from evals import tasks
from evals.cli.runner import BackendFactory
from evals.cli.runner import main as run_task

__all__ = ["main"]

_PROG = "python -m evals.run"


def main(argv: Sequence[str] | None = None, *, backend_factory: BackendFactory = make_backend) -> int:
    """Run the eval of the task named first in `argv`, with the options that follow it."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_main(_PROG, lambda: _run(args, backend_factory))


def _run(args: list[str], backend_factory: BackendFactory) -> int:
    parser = OneLineErrorParser(
        prog=_PROG, usage=f"{_PROG} TASK [eval options]", description=(__doc__ or "").split("\n")[0]
    )
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        print(f"\n{tasks.known()}")
        return 0 if args else 2
    if args[0] not in tasks.names():
        parser.error(f"unknown task {args[0]!r}: {tasks.known()}")
    return run_task(tasks.get(args[0]), args[1:], backend_factory=backend_factory, prog=f"{_PROG} {args[0]}")


if __name__ == "__main__":
    raise SystemExit(main())
