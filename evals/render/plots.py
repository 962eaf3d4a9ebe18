"""The pages' plots: matplotlib figures rendered to inline SVG (the `svg` backend through `Agg`'s
canvas-free path), with no external reference and no untrusted markup.

Text stays text (`svg.fonttype = none`, a generic sans-serif family, no @font-face), so a
plot is small and loads nothing. Labels that come from data (family names, task names)
are made printable and cut before matplotlib sees them, and mathtext is off;
matplotlib escapes `<`, `>` and `&` in SVG text; and `clean` then removes every comment,
the metadata block and any `href` that is not a local `#id`, so the result may be inlined
into a page as is.

Matplotlib takes half a second to import, more than the rest of a warm rerun, so it is
imported only when a plot is drawn, and every plot is remembered by a digest of its
inputs, this module's source and matplotlib's version (`$XDG_CACHE_HOME/attest/plots`,
the newest `MEMO_KEEP`): a rerun whose scores did not change draws nothing and never
imports matplotlib. A remembered plot is `clean`ed again when read.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec

from attest.files import FileReadError, MiB, read_text_bounded, user_cache_dir
from attest.text import printable
from evals.store.records import write_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MEMO_KEEP",
    "MEMO_MAX_BYTES",
    "Point",
    "clean",
    "confusion",
    "figure",
    "forest",
    "histogram",
    "label",
    "memo_dir",
    "reliability",
    "styled",
    "svg_of",
]

MEMO_KEEP = 512  # remembered plots; the oldest go first
MEMO_MAX_BYTES = 8 * MiB  # a remembered plot larger than this is drawn again
P = ParamSpec("P")

BLUE, GREY, RED, GREEN, ORANGE = "#1f5fa8", "#8a8a8a", "#b3261e", "#1e7b34", "#c26a00"
LABEL_MAX = 28
_STYLE: Any = {  # matplotlib types rc keys as Literals; this dict is checked by matplotlib at use
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "text.parse_math": False,  # a `$` in a family name is a dollar sign, never mathtext
    "axes.spines.top": False,
    "axes.spines.right": False,
}


FOREST_ROWS = 60  # rows a forest plot draws: a report from a store may list 20,000 families


@dataclass(frozen=True)
class Point:
    """One row of a forest plot: a mean and its interval, and optional extra markers (name -> x)."""

    label: str
    mean: float
    low: float
    high: float
    marks: tuple[tuple[str, float], ...] = ()


def label(text: str) -> str:
    """A data label made printable and short (mathtext is off for every plot: `text.parse_math`)."""
    shown = printable(text)
    shown = shown if len(shown) <= LABEL_MAX else shown[: LABEL_MAX - 1] + "…"
    return shown


@functools.cache
def _mpl() -> Any:
    """matplotlib, imported on first use, its canvas-free `Agg` backend chosen before pyplot is imported."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # reached as matplotlib.pyplot

    return matplotlib


def memo_dir() -> Path:
    return user_cache_dir() / "plots"


@functools.cache
def _code_digest() -> str:
    """What, besides its inputs, decides a plot: this file and matplotlib's version."""
    try:
        version = importlib.metadata.version("matplotlib")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return hashlib.sha256(Path(__file__).read_bytes() + version.encode()).hexdigest()


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"cannot key a plot on {type(value).__name__}")


def _remembered(draw: Callable[P, str]) -> Callable[P, str]:
    """`draw`, remembered on disk by a digest of its arguments (see the module's docstring)."""

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> str:
        key = json.dumps([draw.__name__, args, kwargs, _code_digest()], default=_plain, sort_keys=True)
        path = memo_dir() / f"{hashlib.sha256(key.encode()).hexdigest()}.svg"
        try:
            return clean(read_text_bounded(path, MEMO_MAX_BYTES))
        except FileReadError:  # none yet, or not a plain UTF-8 file: draw it
            pass
        svg = draw(*args, **kwargs)
        _remember(path, svg)
        return svg

    return wrapper


def _remember(path: Path, svg: str) -> None:
    """Atomically (`write_atomic`); then only the newest MEMO_KEEP stay. Never fails a page."""
    try:
        write_atomic(path, svg)
        kept = sorted(path.parent.glob("*.svg"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[MEMO_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a memo we cannot write only costs drawing the plot again next time


def _svg(fig: Figure) -> str:
    matplotlib = _mpl()
    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "attest"}):  # ids from content: a page is reproducible
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    matplotlib.pyplot.close(fig)
    return clean(out.getvalue())


_COMMENT = re.compile(r"<!--.*?-->", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)
_PROLOG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>", re.S)
_HREF = re.compile(r'\s(?:xlink:)?href="(?!#)[^"]*"')


def clean(svg: str) -> str:
    """An SVG made fit to inline: no prolog, comments, metadata, or link that is not a local #id."""
    for pattern in (_PROLOG, _COMMENT, _METADATA, _HREF):
        svg = pattern.sub("", svg)
    return svg.strip()


def _figure(width: float, height: float, *, left: float, bottom: float = 0.45, top: float = 0.12) -> tuple[Figure, Any]:
    """A figure with fixed margins in inches (a tight bounding box would draw every plot twice)."""
    matplotlib = _mpl()
    with matplotlib.rc_context(_STYLE):
        fig, ax = matplotlib.pyplot.subplots(figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=1 - 0.15 / width, bottom=bottom / height, top=1 - top / height)
    return fig, ax


def styled() -> Any:
    """The house style as a context, for a plot drawn beside its page (page_trend.py) with `figure` and `svg_of`."""
    return _mpl().rc_context(_STYLE)


def figure(width: float, height: float, *, left: float) -> tuple[Figure, Any]:
    return _figure(width, height, left=left)


svg_of = _svg


@_remembered
def forest(
    points: Sequence[Point],
    *,
    xlabel: str,
    lines: Sequence[tuple[float, str]] = (),
    xlim: tuple[float, float] = (0, 1),
    width: float = 4.8,
) -> str:
    """Points with intervals, one row each (top to bottom), with reference lines (x, name) drawn across;
    at most FOREST_ROWS rows (a record decides how many there are), the rest counted in the label."""
    if len(points) > FOREST_ROWS:
        xlabel = f"{xlabel}; {len(points) - FOREST_ROWS} more not shown"
        points = points[:FOREST_ROWS]
    with _mpl().rc_context(_STYLE):
        labels = [label(p.label) for p in points]
        legend = bool(lines or any(p.marks for p in points))
        chars = max([len(t) for t in labels] + [4])
        fig, ax = _figure(
            width, 1.0 + 0.26 * max(1, len(points)), left=0.2 + 0.068 * chars, top=0.35 if legend else 0.1
        )
        ys = list(range(len(points)))[::-1]
        for y, p in zip(ys, points, strict=True):
            ax.plot([p.low, p.high], [y, y], color=BLUE, lw=2, solid_capstyle="butt")
            ax.plot([p.mean], [y], "o", color=BLUE, ms=5)
            for (name, x), marker in zip(p.marks, ("D", "x", "s", "^"), strict=False):
                ax.plot([x], [y], marker, color=GREY, ms=4, label=label(name) if y == ys[0] else None)
        for (x, name), colour in zip(lines, (GREY, ORANGE, RED), strict=False):
            ax.axvline(x, color=colour, lw=1, ls="--", label=name)
        ax.set_yticks(ys, labels)
        pad = 0.03 * (xlim[1] - xlim[0])  # a point on the edge (a score of 1) stays whole
        ax.set_xlim(xlim[0] - pad, xlim[1] + pad)
        ax.set_ylim(-0.7, len(points) - 0.3)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", color="#e4e4e4", lw=0.6)
        if legend:
            ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False, fontsize=8)
        return _svg(fig)


@_remembered
def histogram(scores: Sequence[float]) -> str:
    """The distribution of per-sample scores in [0, 1]."""
    with _mpl().rc_context(_STYLE):
        fig, ax = _figure(3.4, 2.3, left=0.55)
        ax.hist(list(scores), bins=[i / 10 for i in range(11)], color=BLUE, edgecolor="white")
        ax.set_xlim(0, 1)
        ax.set_xlabel("score")
        ax.set_ylabel("samples")
        return _svg(fig)


@_remembered
def confusion(counts: Sequence[Sequence[int]], names: Sequence[str], *, field: str) -> str:
    """A confusion matrix: rows are the gold value, columns the answer's (counts, with the unparseable column)."""
    with _mpl().rc_context(_STYLE):
        fig, ax = _figure(3.2, 2.3, left=0.85, bottom=0.5)
        top = max([max(row) for row in counts] + [1])
        ax.pcolormesh(counts, cmap="Blues", vmin=0, vmax=top, edgecolors="white", linewidth=2)  # vector, no image
        ax.invert_yaxis()
        for i, row in enumerate(counts):
            for j, value in enumerate(row):
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    str(value),
                    ha="center",
                    va="center",
                    color="white" if value > top / 2 else "black",
                )
        columns = [label(n) for n in names] + ["unparsed"]
        ax.set_xticks([j + 0.5 for j in range(len(columns))], columns)
        ax.set_yticks([i + 0.5 for i in range(len(names))], [label(n) for n in names])
        ax.tick_params(length=0)
        ax.set_xlabel(f"answered {label(field)}")
        ax.set_ylabel(f"gold {label(field)}")
        for spine in ax.spines.values():
            spine.set_visible(False)
        return _svg(fig)


@_remembered
def reliability(rows: Sequence[tuple[int, float, int]], *, field: str) -> str:
    """Stated confidence against accuracy: (confidence value, share right, how many) per value."""
    with _mpl().rc_context(_STYLE):
        fig, ax = _figure(3.6, 2.3, left=0.6)
        values = [r[0] for r in rows]
        lo, hi = (min(values), max(values)) if values else (1, 5)
        if hi > lo:
            ax.plot([lo, hi], [0, 1], color=GREY, lw=1, ls="--", label="calibrated (lowest=0, highest=1)")
        ax.plot(values, [r[1] for r in rows], "o-", color=BLUE, label="share right")
        for value, share, n in rows:
            ax.annotate(f"n={n}", (value, share), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
        ax.set_ylim(-0.05, 1.12)
        ax.set_xlim(lo - 0.5, hi + 0.5)
        ax.set_xticks(range(math.floor(lo), math.ceil(hi) + 1))
        ax.set_xlabel(f"stated {label(field)}")
        ax.set_ylabel("accuracy")
        ax.legend(loc="lower right", frameon=False, fontsize=7)
        return _svg(fig)
