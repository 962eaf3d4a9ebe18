"""The harness the figure scripts share: repeats, median and spread, and the results table.

Every figure is a ratio or a rate measured in one run against its reference, repeated
at least `REPEATS` times; a figure reports the median and the min-max spread. No
absolute time is ever asserted: the machine is shared and noisy.
"""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

__all__ = [
    "REPEATS",
    "ROOT",
    "Row",
    "Spread",
    "num",
    "print_rows",
    "rotated",
    "script_command",
    "timed",
    "workdir",
]

ROOT = Path(__file__).resolve().parent.parent
# At least 5 for any figure worth reporting; a smaller ATTEST_BENCH_REPEATS is for trying the scripts out.
REPEATS = max(1, int(os.environ.get("ATTEST_BENCH_REPEATS", "5")))
T = TypeVar("T")


@dataclass(frozen=True)
class Spread:
    """Repeated measurements of one quantity: the median and the min-max range."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        vals = tuple(values)
        if not vals:
            raise ValueError("a spread needs at least one measurement")
        return cls(vals)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def lo(self) -> float:
        return min(self.values)

    @property
    def hi(self) -> float:
        return max(self.values)

    def fmt(self, scale: float = 1.0, unit: str = "", digits: int = 3) -> str:
        """`median (min-max, n=K) unit`, every value multiplied by `scale`."""
        m, lo, hi = (num(v * scale, digits) for v in (self.median, self.lo, self.hi))
        suffix = f" {unit}" if unit else ""
        return f"{m}{suffix} ({lo}-{hi}, n={len(self.values)})"


def num(value: float, digits: int = 3) -> str:
    """A number for the table: thousands separators from 1,000 up, else `digits` significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.{digits}g}"


@dataclass
class Row:
    """One line of RESULTS.md."""

    figure: str
    ours: str
    reference: str
    ratio: str
    target: str
    met: bool | None
    command: str
    notes: list[str] = field(default_factory=list)


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """Call `fn` and return its result and its wall time in seconds."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def rotated(items: Sequence[T], i: int) -> list[T]:
    """`items` rotated by `i`: repeat i runs the contenders in a different order."""
    k = i % len(items)
    return [*items[k:], *items[:k]]


_scratch: list[Path] = []


def workdir(label: str) -> Path:
    """A fresh scratch directory, removed at exit unless ATTEST_BENCH_KEEP=1."""
    if not _scratch:
        _scratch.append(Path(tempfile.mkdtemp(prefix="attest-bench-")))
        if os.environ.get("ATTEST_BENCH_KEEP") != "1":
            atexit.register(shutil.rmtree, _scratch[0], True)
    return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=_scratch[0]))


def script_command(script: str) -> str:
    """The command that reproduces a figure on its own."""
    return f"python -m benchmarks.{script.removesuffix('.py')}"


def print_rows(rows: Sequence[Row]) -> None:
    """A figure script's own output when run alone."""
    for row in rows:
        verdict = {True: "met", False: "MISSED", None: "n/a"}[row.met]
        print(f"{row.figure}\n  ours:      {row.ours}\n  reference: {row.reference}")
        print(f"  ratio:     {row.ratio}\n  target:    {row.target} ({verdict})")
        for note in row.notes:
            print(f"  note:      {note}")
