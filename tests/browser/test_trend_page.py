"""`runs trend TASK` (issue 34, item 3): one line per complete whole-split run, oldest first, with what
changed and the verdict `compare` gives each step; `--html` writes a page that Chromium opens offline,
with one `[data-run]` row per run linking to that run's page."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from evals import compare, runs
from tests.browser.conftest import Opened
from tests.browser.pages import changed_run, stub_run

pytestmark = pytest.mark.browser


def _verdict(cache: Path, base: str, cand: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    compare.main(["--cache-dir", str(cache), base, cand, "--json"])
    verdict: str = json.loads(capsys.readouterr().out)["verdict"]
    return verdict


def test_trend_text_and_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], open_page: Callable[[Path], Opened]
) -> None:
    first = stub_run(tmp_path, "--label", "stub").name
    stub_run(tmp_path, "--limit", "5")  # a quick try: left out
    second = changed_run(tmp_path, "--label", "tweaked").name
    third = stub_run(tmp_path, "--label", "stub").name
    capsys.readouterr()
    page = tmp_path / "trend.html"
    assert runs.main(["--cache-dir", str(tmp_path), "trend", "reaction", "--html", str(page)]) == 0
    *lines, last = capsys.readouterr().out.splitlines()
    assert last == f"page        {page}"
    assert [line.split()[0] for line in lines] == [first, second, third]  # oldest first, the quick try left out
    assert lines[0].endswith("  first") and "label stub" in lines[0] and "n=144" in lines[0]
    assert "  changed model" in lines[1] and "label tweaked" in lines[1]
    for line, (base, cand) in zip(lines[1:], [(first, second), (second, third)], strict=True):
        verdict = _verdict(tmp_path, base, cand, capsys)
        flag = verdict.upper() if verdict != "inconclusive" else ""
        assert line.endswith(f"  {flag}" if flag else "changed model"), (line, verdict)

    o = open_page(page)
    o.assert_quiet()
    rows = o.page.eval_on_selector_all(
        "tr[data-run]", "rows => rows.map(r => [r.dataset.run, r.querySelector('a').getAttribute('href')])"
    )
    assert [run for run, _ in rows] == [first, second, third]
    for run, href in rows:
        assert href == (tmp_path / "runs" / run / "report.html").resolve().as_uri()
    assert o.page.locator("#plot-trend svg").count() == 1
    o.page.set_viewport_size({"width": 400, "height": 800})
    assert o.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0

    capsys.readouterr()
    assert runs.main(["--cache-dir", str(tmp_path), "trend", "reaction", "--label", "stub", "--limit", "1"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [third]
    assert runs.main(["--cache-dir", str(tmp_path), "trend", "reaction", "--branch", "no-such-branch"]) == 1
    assert "no complete whole-split run of reaction branch=no-such-branch" in capsys.readouterr().err
    assert runs.main(["--cache-dir", str(tmp_path), "trend", "reactoin"]) == 1
    assert "the known tasks are" in capsys.readouterr().err
