"""A comparison's page in Chromium: the verdict banner, every paired case, regressed then improved
then unchanged, and filters that leave exactly the rows they should; with --all, one section per task."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evals import compare, explanation_eval, tagging_eval
from evals.cli import runner
from tests.browser.conftest import Opened
from tests.browser.pages import changed_run, compare_page, stub_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The page and the --json comparison of the stub run against the tweaked stub run."""
    cache = tmp_path_factory.mktemp("cache")
    base, cand = stub_run(cache).name, changed_run(cache).name
    page = cache / "compare.html"
    code = compare_page(cache, base, cand, page)
    assert code in (0, 3, 4)
    return page, _json(cache, base, cand)


def _json(cache: Path, base: str, cand: str) -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        compare.main(["--cache-dir", str(cache), base, cand, "--json"])
    found: dict[str, Any] = json.loads(out.getvalue())
    return found


def _ids(found: dict[str, Any], kind: str) -> list[str]:
    return [c["id"] for c in found[kind]]


def test_the_verdict_and_every_paired_case_regressed_first(
    compared: tuple[Path, dict[str, Any]], open_page: Callable[[Path], Opened]
) -> None:
    page, found = compared
    o = open_page(page)
    o.assert_quiet()
    assert o.page.inner_text("#verdict").split()[0] == found["verdict"].upper()
    regressed, improved = _ids(found, "regressed"), _ids(found, "improved")
    assert regressed and improved
    shown = o.visible()
    assert shown[: len(regressed) + len(improved)] == regressed + improved
    assert len(shown) == found["difference"]["n"]
    assert o.page.locator("#plot-verdict svg").count() == 1 and o.page.locator("#plot-families svg").count() == 1


@pytest.mark.parametrize("kind", ["regressed", "improved", "unchanged"])
def test_the_change_filter_leaves_those_cases(
    kind: str, compared: tuple[Path, dict[str, Any]], open_page: Callable[[Path], Opened]
) -> None:
    page, found = compared
    o = open_page(page)
    o.page.select_option("#f-kind", kind)
    shown = o.visible()
    if kind == "unchanged":
        assert len(shown) == found["difference"]["n"] - len(found["regressed"]) - len(found["improved"])
        assert not set(shown) & set(_ids(found, "regressed") + _ids(found, "improved"))
    else:
        assert shown == _ids(found, kind)


def test_the_family_filter_and_the_word_diff(
    compared: tuple[Path, dict[str, Any]], open_page: Callable[[Path], Opened]
) -> None:
    page, found = compared
    o = open_page(page)
    o.page.select_option("#f-kind", "regressed")
    o.page.select_option("#f-family", "bait")
    assert o.visible() == [c["id"] for c in found["regressed"] if c["family"] == "bait"]
    first = found["regressed"][0]["id"]
    row = o.page.locator(f'tr[data-case="{first}"]')
    assert row.locator("del").count() >= 1 and row.locator("ins").count() >= 1  # the flipped verdict


def test_with_all_one_section_per_task_and_the_holm_overview(
    tmp_path: Path, open_page: Callable[[Path], Opened]
) -> None:
    cache = tmp_path / "cache"
    for _ in range(2):
        stub_run(cache)
        for task in (tagging_eval.TASK, explanation_eval.TASK):
            assert runner.main(task, ["--offline", "--cache-dir", str(cache)]) == 0
    page = tmp_path / "all.html"
    assert compare_page(cache, "@previous", "@latest", page, "--all") == 3  # same answers: inconclusive
    o = open_page(page)
    o.assert_quiet()
    assert sorted(o.page.eval_on_selector_all("section[data-task]", "s => s.map(x => x.dataset.task)")) == [
        "explanation",
        "reaction",
        "tagging",
    ]
    assert o.page.locator("#plot-overview svg").count() == 1
    assert "Holm" in o.page.inner_text("#plot-overview")
    assert o.page.locator(".banner.inconclusive").count() == 3


def test_html_dash_writes_the_page_alone_to_stdout(
    compared: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    page, found = compared
    capsys.readouterr()
    compare.main(["--cache-dir", str(page.parent), found["baseline"]["run"], found["candidate"]["run"], "--html", "-"])
    out = capsys.readouterr().out
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")


def test_with_json_the_pages_path_goes_to_stderr_and_stdout_stays_json(
    compared: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, found = compared
    target = tmp_path / "page.html"
    capsys.readouterr()
    argv = ["--cache-dir", str(page.parent), found["baseline"]["run"], found["candidate"]["run"], "--json"]
    compare.main([*argv, "--html", str(target)])
    out, err = capsys.readouterr()
    assert json.loads(out)["verdict"] == found["verdict"]
    assert f"page        {target}" in err and target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
