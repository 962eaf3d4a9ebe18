"""Self-contained HTML pages: a run's and a comparison's, from Jinja2 templates with autoescaping.

One file, offline: the style and the one small script are inlined, the plots are inline
SVG made by evals/render/plots.py, and a Content-Security-Policy meta tag forbids every
load (`default-src 'none'`) and every script but the page's own (its sha256, computed
here at render time). Every value from data is escaped by Jinja2, and `_visible` first
turns control, format and bidi characters into visible escapes (`\\u202e`), so hostile
answers, case ids or prompts render as the text they are. Only the SVGs are marked safe,
after `plots.clean`; their data labels went through `plots.label`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from attest import __version__
from attest.text import printable
from evals.render.page_compare import ComparePage
from evals.render.page_run import RunPage

__all__ = ["TEMPLATES", "csp", "render_compare", "render_run", "write_page"]

TEMPLATES = Path(__file__).with_name("templates")


def _visible(value: Any) -> Any:
    """Jinja2's finalize: text shown with its control and bidi characters as visible escapes."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    if value.replace("\n", "").isprintable():  # the common case, at C speed: printable() would keep it as is
        return value
    return printable(value, multiline=True)


@cache
def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"], default=True),
        finalize=_visible,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


@cache
def _assets() -> tuple[str, str]:
    return (TEMPLATES / "style.css").read_text(encoding="utf-8"), (TEMPLATES / "page.js").read_text(encoding="utf-8")


def csp(script: str) -> str:
    """The page's policy: nothing loads; only this exact script runs; inline style and data: images only."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"


def _render(template: str, title: str, **values: Any) -> str:
    style, script = _assets()
    safe_svgs = {k: Markup(v) for k, v in values.pop("svgs", {}).items()}
    return (
        _env()
        .get_template(template)
        .render(
            title=title,
            style=Markup(style),
            script=Markup(script),
            csp=csp(script),
            version=__version__,
            svgs=safe_svgs,
            **values,
        )
    )


def render_run(page: RunPage) -> str:
    """A run's page."""
    m = page.manifest
    metrics = [(k, _metric(v)) for k, v in (page.report.summary.items() if page.report else [])]
    page.plots = {k: Markup(v) for k, v in page.plots.items()}  # made by plots.py, cleaned, labels escaped
    return _render("run.html", f"attest: {m.task} run {m.run_id}", page=page, metrics=metrics)


def render_compare(pages: Sequence[ComparePage], overview: str | None) -> str:
    """A comparison's page: one section per comparison; `overview` is the --all forest plot (SVG) or None."""
    for p in pages:
        p.plots = {k: Markup(v) for k, v in p.plots.items()}
    first = pages[0]
    title = f"attest: compare {first.x.cand_run} against {first.x.base_run}" if len(pages) == 1 else "attest: compare"
    svgs = {"overview": overview} if overview else {}
    families = sorted({f for p in pages for f in p.families})
    return _render("compare.html", title, pages=pages, svgs=svgs, families=families)


def render_trend(task: str, rows: Sequence[Any], svg: str) -> str:
    """A task's trend over its runs (rows from evals/render/page_trend.py; `svg` made by plots.py)."""
    return _render("trend.html", f"attest: {task} over its runs", task=task, rows=rows, svgs={"trend": svg})


def _metric(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return "  ".join(f"{k}: {v}" for k, v in value.items()) or "(empty)"
    return json.dumps(value) if not isinstance(value, str) else value


def write_page(html: str, target: str | Path) -> None:
    """Write a page to `target`; `-` is standard output."""
    import sys

    from evals.store.records import write_atomic

    if str(target) == "-":
        sys.stdout.write(html)
        sys.stdout.flush()
        return
    write_atomic(Path(target), html)
