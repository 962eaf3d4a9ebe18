"""Plots are remembered by their inputs, so a warm rerun neither draws nor imports matplotlib.

Matplotlib's import alone (about half a second) was most of a warm rerun's time once
every eval wrote its page: benchmarks fig5 and fig6 fell from met to missed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evals.render import plots

DRAW = """
import json, sys
from evals.render import plots
svg = plots.histogram([0.0, 0.5, 1.0, float(sys.argv[1])])
print(json.dumps({"matplotlib": "matplotlib" in sys.modules, "svg": svg}))
"""


def _draw(xdg: Path, value: str) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", DRAW, value], capture_output=True, text=True, env=env, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_second_process_drawing_the_same_plot_never_imports_matplotlib(tmp_path: Path) -> None:
    first = _draw(tmp_path, "1.0")
    again = _draw(tmp_path, "1.0")
    other = _draw(tmp_path, "0.0")
    assert first["matplotlib"] is True
    assert again == {"matplotlib": False, "svg": first["svg"]}
    assert other["matplotlib"] is True and other["svg"] != first["svg"]


def test_a_planted_memo_is_cleaned_before_it_reaches_a_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    plots.histogram([0.25])
    (memo,) = plots.memo_dir().glob("*.svg")
    memo.write_text('<svg><a href="https://example.invalid/x"><!-- c --><text>hi</text></a></svg>', encoding="utf-8")
    svg = plots.histogram([0.25])
    assert "href" not in svg and "<!--" not in svg and "<text>hi</text>" in svg


def test_the_memo_keeps_only_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(plots, "MEMO_KEEP", 3)
    for n in range(5):
        plots.histogram([n / 10])
    assert len(list(plots.memo_dir().glob("*.svg"))) == 3


def test_an_unwritable_memo_still_draws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert plots.histogram([0.5]).startswith("<svg")


def test_a_fifo_in_place_of_a_memo_is_drawn_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    drawn = plots.histogram([0.75])
    (memo,) = plots.memo_dir().glob("*.svg")
    memo.unlink()
    os.mkfifo(memo)  # an open for reading would wait for a writer forever
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(plots.histogram([0.75])), daemon=True)
    reader.start()
    reader.join(30)
    assert found == [drawn], "the memo read waited on a FIFO"
