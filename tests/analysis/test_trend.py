"""`runs trend`'s steps (issue 34, item 3): each run against the one before it, flagged as `compare`
would call the step, with what changed in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import runs
from evals.analysis.pairing import load_run
from evals.analysis.trend import trend
from evals.cli.trend import step_line
from evals.store.records import DirStore
from tests.cli.test_compare import make_pair


@pytest.mark.parametrize(("better", "worse", "flag"), [(0, 14, "REGRESS"), (14, 0, "SHIP"), (3, 3, "")])
def test_a_step_is_flagged_as_compare_would_call_it(tmp_path: Path, better: int, worse: int, flag: str) -> None:
    pair = make_pair(tmp_path, better=better, worse=worse, both_right=3, both_wrong=3)
    store = DirStore(pair.cache / "runs")
    steps = trend([load_run(store, pair.base), load_run(store, pair.cand)], {})
    assert (steps[0].verdict, steps[0].changed, steps[0].flag) == ("", (), "")
    assert steps[1].changed == ("model",) and steps[1].flag == flag
    line = step_line(steps[1])
    assert line.startswith(f"{pair.cand}  ") and "changed model" in line
    assert line.endswith(f"changed model  {flag}" if flag else "changed model")


def test_the_trend_command_prints_a_line_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pair = make_pair(tmp_path, better=0, worse=14, both_right=3, both_wrong=3)
    capsys.readouterr()
    assert runs.main(["--cache-dir", str(pair.cache), "trend", "tagging"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [pair.base, pair.cand]
    assert lines[1].endswith("changed model  REGRESS")
