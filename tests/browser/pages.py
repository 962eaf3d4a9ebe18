"""Pages the browser tests open (and the README's screenshots show), built through the real commands.

- `stub_run(cache_dir)`: the reaction eval's dev split on the stub backend (`--offline`),
  which writes `report.html` beside its records.
- `changed_run(cache_dir)`: the same cases answered by a tweaked stub: a verdict flipped on
  every fifth case, a reasoning that names the item on every seventh; so a comparison
  against `stub_run` has regressed, improved and unchanged cases.
- `compare_page(cache_dir, target)`: `python -m evals.compare BASE CAND --html target`.

`python -m tests.browser.pages DIR` writes docs' screenshots (1280x800) of both pages to DIR.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attest.backends.stub import StubBackend
from attest.backends.types import Message
from evals import compare, reaction_eval
from evals.cli import runner
from tests.fakes import FakeBackend, RecordingChat

__all__ = ["changed_run", "compare_page", "stub_run"]

CHROMIUM = Path(os.environ.get("ATTEST_CHROMIUM", "/usr/bin/chromium"))  # Debian's package; another path for trying
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _runs(cache_dir: Path) -> set[Path]:
    root = cache_dir / "runs"
    return {p for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def _new_run(cache_dir: Path, before: set[Path]) -> Path:
    """The one run directory added since `before` (two runs in one second do not sort by time)."""
    (added,) = _runs(cache_dir) - before
    return added


def stub_run(cache_dir: Path, *argv: str) -> Path:
    """The stub's reaction run on dev; returns its run directory (report.html inside)."""
    before = _runs(cache_dir)
    assert runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(cache_dir), *argv]) == 0
    return _new_run(cache_dir, before)


def _tweaked(messages: Sequence[Message], schema: Mapping[str, Any]) -> str:
    stub = StubBackend(answer=reaction_eval.TASK.stub_answer)
    answer: dict[str, Any] = json.loads(stub.chat_json(messages, schema).text)
    user = messages[-1]["content"]
    bucket = zlib.crc32(user.encode("utf-8"))
    if bucket % 5 == 0:
        answer["verdict"] = not answer["verdict"]
    elif bucket % 7 == 0:
        title = next((line[len("Title: ") :] for line in user.splitlines() if line.startswith("Title: ")), "")
        answer["reasoning"] = f"It is about {title}. {answer['reasoning']}"
    return json.dumps(answer)


def changed_run(cache_dir: Path, *argv: str) -> Path:
    """The same cases answered by the tweaked stub (another model, so other cache keys)."""
    chat = RecordingChat(_tweaked, model="stub-tweaked", digest="sha256:tweaked")
    backend = FakeBackend(chat, options=StubBackend().options)  # only the model differs from the stub run
    args = ["--cache-dir", str(cache_dir), *argv]
    before = _runs(cache_dir)
    assert runner.main(reaction_eval.TASK, args, backend_factory=lambda settings: backend) == 0
    return _new_run(cache_dir, before)


def compare_page(cache_dir: Path, base: str, cand: str, target: Path, *extra: str) -> int:
    return compare.main(["--cache-dir", str(cache_dir), base, cand, "--html", str(target), *extra])


def screenshots(out: Path, work: Path) -> None:
    """docs/run-page.png and docs/compare-page.png at 1280x800."""
    from playwright.sync_api import sync_playwright

    base = stub_run(work)
    cand = changed_run(work)
    compare_page(work, base.name, cand.name, work / "compare.html")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        for source, name in ((base / "report.html", "run-page.png"), (work / "compare.html", "compare-page.png")):
            page.goto(source.resolve().as_uri())
            page.screenshot(path=str(out / name))
        browser.close()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        screenshots(Path(sys.argv[1]), Path(tmp))
