"""A real Chromium for the page tests: Debian's `chromium` package driven by Playwright.

Playwright's own browser download cannot work on these machines, so the browser is the
system's (`executable_path`). Without it the tests are skipped with one line naming the
install command, except under CI (the `CI` variable set), where a missing browser fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.pages import ARGS, CHROMIUM

INSTALL = "apt-get install chromium"


def _missing(why: str) -> None:
    message = f"{why}: {INSTALL} (and the dev extra for playwright)"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests; {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        _missing(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Opened:
    """A page opened from a file, with everything it logged, requested and tried."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.url = path.resolve().as_uri()
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.page = self.context.new_page()
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dialog)
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def visible(self) -> list[str]:
        """The data-case of every case row shown, in order."""
        ids: list[str] = self.page.eval_on_selector_all(
            "tr[data-case]", "rows => rows.filter(r => !r.hidden).map(r => r.dataset.case)"
        )
        return ids

    def assert_quiet(self) -> None:
        """No console error, no script error, no dialog, and no request but the page itself."""
        assert [c for c in self.console if c.startswith("error")] == []
        assert self.errors == []
        assert self.dialogs == []
        assert self.requests == [self.url]


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    opened: list[Opened] = []

    def open_(path: Path) -> Opened:
        opened.append(Opened(browser, path))
        return opened[-1]

    yield open_
    for o in opened:
        o.context.close()
