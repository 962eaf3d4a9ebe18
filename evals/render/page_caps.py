"""What a record can make a run's page draw: a run from a team's store is untrusted, so the case table,
the family filter, the baseline cards and the family plot are capped, the rest counted as "N more not shown"."""

from __future__ import annotations

import math

from evals.render import plots

__all__ = ["PAGE_BASELINES", "PAGE_FAMILIES", "PAGE_ROWS", "family_points", "hidden"]

PAGE_ROWS, PAGE_FAMILIES, PAGE_BASELINES = 5000, 200, 8


def hidden(rows: int, families: int) -> str:
    """`N more rows and M more families not shown`, or "" when everything is drawn."""
    more_rows, more_families = rows - PAGE_ROWS, families - PAGE_FAMILIES
    parts = [
        f"{more_rows} more rows" if more_rows > 0 else "",
        f"{more_families} more families" if more_families > 0 else "",
    ]
    said = " and ".join(p for p in parts if p)
    return f"{said} not shown" if said else ""


def family_points(rows: object) -> list[plots.Point]:
    """The report's family intervals as plot rows; a row of another shape (a record is untrusted) is left out."""
    points = []
    for r in rows if isinstance(rows, list) else []:
        try:
            marks = tuple(sorted((str(k), float(v)) for k, v in r.get("baselines", {}).items()))
            point = plots.Point(str(r["family"]), float(r["mean"]), float(r["low"]), float(r["high"]), marks)
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
        if all(math.isfinite(x) for x in (point.mean, point.low, point.high, *(x for _, x in marks))):
            points.append(point)
    return points
