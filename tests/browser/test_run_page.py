"""A run's page in Chromium: offline and quiet, every case row, and filters that leave exactly
the rows they should."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Opened
from tests.browser.pages import stub_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stub_run(tmp_path_factory.mktemp("cache"))


def _records(run_dir: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    corpus = json.loads((Path(__file__).parents[2] / manifest["provenance"]["corpus"]).read_text(encoding="utf-8"))
    family = {c["id"]: c["family"] for c in corpus}
    return report["results"], family


def test_the_page_loads_nothing_logs_no_error_and_shows_the_score_and_every_case(
    run_dir: Path, open_page: Callable[[Path], Opened]
) -> None:
    results, _ = _records(run_dir)
    o = open_page(run_dir / "report.html")
    o.assert_quiet()
    assert o.page.inner_text("#score").startswith("0.")
    assert o.visible() == [r["id"] for r in results]
    assert o.page.inner_text("#f-count") == f"{len(results)} of {len(results)} rows shown"  # the script ran
    for name in ("families", "distribution", "confusion", "reliability"):
        assert o.page.locator(f"#plot-{name} svg").count() == 1, name


def test_the_family_filter_leaves_that_familys_rows(run_dir: Path, open_page: Callable[[Path], Opened]) -> None:
    results, family = _records(run_dir)
    o = open_page(run_dir / "report.html")
    for name in sorted({family[r["id"]] for r in results}):
        o.page.select_option("#f-family", name)
        assert o.visible() == [r["id"] for r in results if family[r["id"]] == name]
    o.page.select_option("#f-family", "")
    assert len(o.visible()) == len(results)


def test_failed_only_leaves_the_rows_scoring_below_one(run_dir: Path, open_page: Callable[[Path], Opened]) -> None:
    results, _ = _records(run_dir)
    o = open_page(run_dir / "report.html")
    o.page.check("#f-failed")
    failed = [r["id"] for r in results if r["score"] < 1]
    assert 0 < len(failed) < len(results)
    assert o.visible() == failed


def test_free_text_finds_a_case_by_id_and_by_error(run_dir: Path, open_page: Callable[[Path], Opened]) -> None:
    results, _ = _records(run_dir)
    o = open_page(run_dir / "report.html")
    o.page.fill("#f-text", "adjacent-eco-snapper-stock-assessment")
    assert o.visible() == ["adjacent-eco-snapper-stock-assessment"]
    o.page.fill("#f-text", "WOULD SKIP THE ITEM")  # case-insensitive, in the errors column
    assert o.visible() == [r["id"] for r in results if any("would skip the item" in e for e in r["errors"])]


def test_filters_combine(run_dir: Path, open_page: Callable[[Path], Opened]) -> None:
    results, family = _records(run_dir)
    o = open_page(run_dir / "report.html")
    o.page.select_option("#f-family", "bait")
    o.page.check("#f-failed")
    assert o.visible() == [r["id"] for r in results if family[r["id"]] == "bait" and r["score"] < 1]


def test_sorting_by_score_orders_the_rows_both_ways(run_dir: Path, open_page: Callable[[Path], Opened]) -> None:
    results, _ = _records(run_dir)
    o = open_page(run_dir / "report.html")
    order = {r["id"]: i for i, r in enumerate(results)}
    score = {r["id"]: r["score"] for r in results}
    o.page.click("#sort-score")
    assert o.visible() == sorted(score, key=lambda c: (score[c], order[c]))
    o.page.click("#sort-score")
    assert o.visible() == sorted(score, key=lambda c: (-score[c], order[c]))
