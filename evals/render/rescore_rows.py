"""rescore's table: each run's old and new rule score and, for a judged run, its judged pass rate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attest.text import printable

__all__ = ["judged_rate", "print_rows"]


def judged_rate(judged: Mapping[str, Any]) -> float | None:
    """The judged pass rate over samples of a report's `judged` block; None for an unjudged run."""
    rows = judged.get("results", []) if judged else []
    return sum(1 for r in rows if r["passed"]) / len(rows) if rows else None


def print_rows(rows: list[dict[str, Any]], seconds: float) -> None:
    print(f"{'run':<36} {'task':<12} {'samples':>7} {'old':>7} {'new':>7}")
    for row in rows:
        print(f"{row['run_id']:<36} {row['task']:<12} {row['samples']:>7} {_f(row['old']):>7} {row['new']:>7.3f}")
        if "judged" in row:
            judged = row["judged"]
            print(f"  judged: {row['run_id']}: {_f(judged['old'])} -> {_f(judged['new'])} from the cached judgements")
        if row["changes"]:
            print(f"  note: {row['run_id']}: {printable('; '.join(row['changes']))}")
    samples = sum(r["samples"] for r in rows)
    print(
        f"re-scored {len(rows)} run(s), {samples} samples, in {seconds:.3f} s "
        "from the cache (no backend exists in rescore)"
    )


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
