"""The run's page for the largest corpus (target < 1 s): `report.html` for a 226-case run.

The stub's reaction run over every case (both splits) is recorded once with the run
script (`--offline --split all`); then the page is written from the records as `runs show
--html` writes it: the manifest, report and prompts read and validated, every answer read
from the cache, the corpus file read, the degenerate-answer check, four matplotlib plots
to SVG and the Jinja2 template. The reference is `runs show` as text on the same run
(the same records and answers, no plots). The notes give the page's size (target < 2 MB)
and the first page of the process, which pays for importing Jinja2 and matplotlib.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from benchmarks._common import REPEATS, Row, Spread, print_rows, rotated, script_command, timed, workdir
from evals import reaction_eval
from evals.cli import runner
from evals.render.show import show_run
from evals.store.local.cache import ResponseCache
from evals.store.records import DirStore

__all__ = ["run"]

TARGET_S = 1.0
SIZE_LIMIT = 2_000_000


def _setup() -> tuple[Path, str]:
    cache = workdir("html")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(cache), "--split", "all"]) == 0
    run_id = next(p.name for p in (cache / "runs").iterdir() if p.is_dir())
    return cache, run_id


def _page(cache: Path, run_id: str, target: Path) -> int:
    from evals.render.html import write_page
    from evals.render.pages import stored_run_html

    answers = ResponseCache(cache)
    try:
        page = stored_run_html(DirStore(cache / "runs"), answers, run_id)
    finally:
        answers.close()
    write_page(page, target)
    return len(page.encode("utf-8"))


def _text(cache: Path, run_id: str) -> int:
    answers = ResponseCache(cache)
    try:
        return len(show_run(DirStore(cache / "runs"), answers, run_id))
    finally:
        answers.close()


def run() -> list[Row]:
    cache, run_id = _setup()
    target = cache / "page.html"
    size, first = timed(lambda: _page(cache, run_id, target))
    cases = (cache / "runs" / run_id / "report.html").read_text(encoding="utf-8").count("<tr data-case=")
    ours: list[float] = []
    ref: list[float] = []
    for i in range(REPEATS):
        for who in rotated(["ours", "ref"], i):
            if who == "ours":
                ours.append(timed(lambda: _page(cache, run_id, target))[1])
            else:
                ref.append(timed(lambda: _text(cache, run_id))[1])
    o, r = Spread.of(ours), Spread.of(ref)
    return [
        Row(
            f"the run's page (report.html), {cases} cases",
            o.fmt(unit="s"),
            f"`runs show` as text on the same run: {r.fmt(unit='s')}",
            f"{o.median / r.median:.1f}x",
            f"< {TARGET_S:g} s and < 2 MB",
            o.hi < TARGET_S and size < SIZE_LIMIT,
            script_command("bench_html.py"),
            [f"{size:,} bytes; the first page of the process (imports Jinja2 and matplotlib): {first:.2f} s"],
        )
    ]


if __name__ == "__main__":
    print_rows(run())
