"""`runs trend --html`: a task's score over its runs, plotted with intervals and a marker where something
changed, over a table with one `data-run` row per run linking to its page where one was written."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evals.analysis.trend import TrendStep
from evals.render import html, plots

__all__ = ["TrendRow", "trend_html", "trend_plot"]


@dataclass(frozen=True)
class TrendRow:
    step: TrendStep
    number: int  # 1-based, the x of the plot
    when: str
    changed: str
    page: str  # the run page's file URI, or ""


def trend_html(task: str, steps: Sequence[TrendStep], pages: Mapping[str, str]) -> str:
    """The trend's page: one file, offline, under the same policy as the run and compare pages."""
    rows = [
        TrendRow(s, i, time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created)), _changed(s), pages.get(s.run_id, ""))
        for i, s in enumerate(steps, 1)
    ]
    return html.render_trend(task, rows, trend_plot(steps))


def _changed(step: TrendStep) -> str:
    if step.note:
        return f"not comparable: {step.note}"
    return ", ".join(step.changed) or ("" if step.verdict else "(first)")


def trend_plot(steps: Sequence[TrendStep]) -> str:
    """Score against run number: each run's mean and 95% interval, a dashed line before each run where
    something changed (named), flagged steps in red (regress) or green (ship)."""
    with plots.styled():
        fig, ax = plots.figure(max(4.8, 0.45 * len(steps) + 1.5), 2.8, left=0.6)
        xs = list(range(1, len(steps) + 1))
        ax.plot(xs, [s.mean for s in steps], color=plots.GREY, lw=1)
        for x, s in zip(xs, steps, strict=True):
            colour = {"REGRESS": plots.RED, "SHIP": plots.GREEN}.get(s.flag, plots.BLUE)
            if s.low is not None and s.high is not None:
                ax.plot([x, x], [s.low, s.high], color=colour, lw=2, solid_capstyle="butt")
            ax.plot([x], [s.mean], "o", color=colour, ms=5)
            if s.changed:
                ax.axvline(x - 0.5, color=plots.ORANGE, lw=0.8, ls="--")
                ax.annotate(plots.label(", ".join(s.changed)), (x - 0.45, 1.02), fontsize=7, color=plots.ORANGE)
        ax.set_xlim(0.4, len(steps) + 0.6)
        ax.set_ylim(-0.03, 1.1)
        ax.set_xticks(xs)
        ax.set_xlabel("run (oldest first)")
        ax.set_ylabel("mean score, 95% interval")
        ax.grid(axis="y", color="#e4e4e4", lw=0.6)
        return plots.svg_of(fig)
