"""Pages that read well (issue 34, item 5), measured in Chromium: the reaction dev page stays under
40,000 px at 1280 px with each reader's profile shown once; at 400 px neither the run page nor the
compare page scrolls sideways; compare rows show the item's title; hashes show 12 characters with the
whole value on hover."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.browser.conftest import Opened
from tests.browser.pages import changed_run, compare_page, stub_run

pytestmark = pytest.mark.browser
CORPUS = Path(__file__).parents[2] / "evals" / "reaction_cases.json"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    cache = tmp_path_factory.mktemp("cache")
    base, cand = stub_run(cache), changed_run(cache)
    manifest = json.loads((cand / "manifest.json").read_text(encoding="utf-8"))
    manifest["provenance"]["git_commit"] = "c0ffee" * 6 + "c0ff"  # made on another commit: a hash in what changed
    (cand / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    target = cache / "compare.html"
    assert compare_page(cache, base.name, cand.name, target) in (0, 3, 4)
    return base / "report.html", target


def _height(o: Opened) -> int:
    height: int = o.page.evaluate("document.documentElement.scrollHeight")
    return height


def _sideways(o: Opened) -> int:
    """How far the page scrolls sideways (0: not at all)."""
    extra: int = o.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    return extra


def test_the_reaction_dev_page_shows_each_reader_once_and_stays_short(
    pages: tuple[Path, Path], open_page: Callable[[Path], Opened]
) -> None:
    dev = [c for c in json.loads(CORPUS.read_text(encoding="utf-8")) if c["split"] == "dev"]
    personas = {c["persona"] for c in dev}
    o = open_page(pages[0])
    o.assert_quiet()
    assert o.page.locator("details.reader").count() == len(personas)
    text = o.page.inner_text("body")
    for persona in personas:
        assert text.count(persona) == 1  # in the readers section only, not in every case row
    assert o.page.locator("tr[data-case] a[href^='#reader-']").count() == len(dev)
    assert _height(o) < 40_000, _height(o)


def test_hashes_show_twelve_characters_and_the_whole_on_hover(
    pages: tuple[Path, Path], open_page: Callable[[Path], Opened]
) -> None:
    o = open_page(pages[0])
    facts = o.page.eval_on_selector_all(
        "#provenance dd", "dds => dds.map(d => [d.previousElementSibling.textContent, d.textContent, d.title])"
    )
    shown = {name: (text, title) for name, text, title in facts}
    text, title = shown["prompt fingerprint"]
    assert len(text) == 12 and len(title) == 64 and title.startswith(text)
    o = open_page(pages[1])
    cells = o.page.eval_on_selector_all(".changed td[title]", "tds => tds.map(t => [t.textContent, t.title])")
    (commit,) = [c for c in cells if c[0].startswith("c0ffee")]
    assert commit[0].split()[0] == "c0ffeec0ffee" and commit[1].split()[0] == "c0ffee" * 6 + "c0ff", cells
    for text, title in cells:
        assert len(text) < len(title) and len(text.split()[0]) == 12


def test_compare_rows_show_the_items_title(pages: tuple[Path, Path], open_page: Callable[[Path], Opened]) -> None:
    titles = {c["id"]: c["title"] for c in json.loads(CORPUS.read_text(encoding="utf-8"))}
    o = open_page(pages[1])
    rows = o.page.eval_on_selector_all(
        "tr[data-case]", "rows => rows.map(r => [r.dataset.case, r.querySelector('.title').textContent])"
    )
    assert rows and all(title == titles[case] for case, title in rows)


@pytest.mark.parametrize("which", [0, 1], ids=["run", "compare"])
def test_at_400_px_nothing_scrolls_sideways(
    pages: tuple[Path, Path], open_page: Callable[[Path], Opened], which: int
) -> None:
    o = open_page(pages[which])
    o.page.set_viewport_size({"width": 400, "height": 800})
    assert _sideways(o) == 0
    o.page.set_viewport_size({"width": 1280, "height": 800})
    assert o.page.eval_on_selector("tr[data-case]", "r => getComputedStyle(r).display") == "table-row"
