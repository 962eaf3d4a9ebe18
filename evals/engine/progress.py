"""Progress of the generate stage on stderr: done/total, rate, elapsed and ETA.

On a terminal (stderr is a tty) it is a bar redrawn in place at most five times a
second; in a log (not a tty) it is one plain line every few seconds and one at the
end. The rate and the ETA count the model's answers only: cache hits are settled
before the first call and would make the ETA of a half-cached run a lie.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Protocol, TextIO

__all__ = ["Counts", "ProgressLine", "stderr_progress"]

BAR_WIDTH = 24
TTY_EVERY_S = 0.2
LOG_EVERY_S = 5.0


class Counts(Protocol):
    """What progress reads of the generate stage's stats."""

    samples: int
    hits: int
    misses: int


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class ProgressLine:
    """Formats and throttles the progress of one run; call it with the stats after each sample."""

    def __init__(self, label: str, out: TextIO, *, tty: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.out = out
        self.tty = tty
        self.clock = clock
        self.start = clock()
        self.first_hits: int | None = None  # the hits settled before the first call
        self.last_shown = float("-inf")

    def text(self, stats: Counts, now: float) -> str:
        done, total = stats.hits + stats.misses, stats.samples
        if self.first_hits is None:
            self.first_hits = stats.hits
        elapsed = now - self.start
        asked = done - self.first_hits
        rate = asked / elapsed if elapsed > 0 and asked > 0 else 0.0
        eta = _clock((total - done) / rate) if rate > 0 else "--:--"
        counts = f"{done}/{total}"
        if self.tty:
            filled = BAR_WIDTH * done // total if total else BAR_WIDTH
            counts = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {counts}"
        return (
            f"{self.label}: {counts} samples, {rate:.2f}/s, elapsed {_clock(elapsed)}, ETA {eta} "
            f"(hits {stats.hits}, model {stats.misses})"
        )

    def __call__(self, stats: Counts) -> None:
        now = self.clock()
        finished = stats.hits + stats.misses >= stats.samples
        if not finished and now - self.last_shown < (TTY_EVERY_S if self.tty else LOG_EVERY_S):
            if self.first_hits is None:
                self.first_hits = stats.hits
            return
        self.last_shown = now
        line = self.text(stats, now)
        if self.tty:
            self.out.write("\r\x1b[K" + line + ("\n" if finished else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()


def stderr_progress(label: str) -> ProgressLine:
    """The generate stage's progress on stderr: a bar on a terminal, a line every few seconds in a log."""
    return ProgressLine(label, sys.stderr, tty=sys.stderr.isatty())
