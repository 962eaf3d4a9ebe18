"""`runs prune` and `runs gc` on a team's store: the same choices and dry run as on the local cache.

Both are one statement each. Prune never removes a run whose writer is alive (its heartbeat is
fresh); gc removes only answers no run's manifest references, stored before it started. They
need DELETE on schema attest: a role without it is refused in one line and nothing is changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from attest.errors import AttestError
from evals.store.postgres.runs import PgRuns
from evals.store.refs import RunRow

__all__ = ["gc_store", "prune_store"]


def prune_store(runs: PgRuns, doomed: list[RunRow], *, yes: bool, say: Callable[[str], None] = print) -> int:
    """Remove `doomed` from the store (`yes`), or say what would go."""
    if not yes:
        for row in doomed:
            say(f"would remove {row.run_id}")
        say("dry run: nothing removed; add --yes to remove these")
        return 0
    wanted = [r.run_id for r in doomed]
    removed = runs.remove(wanted) if wanted else []
    for run_id in wanted:
        say(f"remove {run_id}" if run_id in removed else f"keep   {run_id} (a live worker is writing it)")
    say(f"removed {len(removed)} run(s) from {runs.where}")
    return 0


def gc_store(runs: PgRuns, rows: list[RunRow], *, yes: bool, say: Callable[[str], None] = print) -> int:
    """Remove (`yes`) or count the store's answers no run references."""
    unreadable = [r.run_id for r in rows if r.summary is None]
    if unreadable:
        raise AttestError(
            f"run {unreadable[0]} in {runs.where} is unreadable, so its answers cannot be kept: "
            "prune it first (`runs prune --incomplete --yes`)"
        )
    count, size = runs.unreferenced(time.time(), delete=yes)
    say(f"{'removed' if yes else 'would remove'} {count} answers no run references ({size} bytes) in {runs.where}")
    if not yes:
        say("dry run: nothing removed; add --yes to remove them")
    return 0
