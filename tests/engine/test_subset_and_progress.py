"""A quick try: --limit (stratified, deterministic, recorded), --case, the progress display, and
compare refusing to pair a limited run with a whole one."""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from evals import compare, reaction_eval
from evals.cli import runner
from evals.engine.pipeline import load_cases
from evals.engine.progress import ProgressLine
from evals.engine.subset import UnknownCaseError, named, stratified


def _offline(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> dict[str, object]:
    capsys.readouterr()
    assert runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(cache), "--json", *args]) == 0
    report: dict[str, object] = json.loads(capsys.readouterr().out)
    return report


def _manifest(cache: Path, run_id: object) -> dict[str, object]:
    data: dict[str, object] = json.loads((cache / "runs" / str(run_id) / "manifest.json").read_text(encoding="utf-8"))
    return data


def test_limit_is_stratified_by_family_and_independent_of_the_corpus_order() -> None:
    dev = load_cases(reaction_eval.TASK, split="dev")
    picked = stratified(dev, 20)
    assert len(picked) == 20
    sizes, got = Counter(c.family for c in dev), Counter(c.family for c in picked)
    for family, size in sizes.items():
        assert abs(got[family] - 20 * size / len(dev)) < 1, (family, got[family], size)
    shuffled = list(dev)
    random.Random(7).shuffle(shuffled)
    assert {c.id for c in stratified(shuffled, 20)} == {c.id for c in picked}
    assert [c.id for c in picked] == [c.id for c in dev if c in picked]  # the corpus's order
    assert stratified(dev, 1000) == dev


def test_case_picks_named_cases_and_an_unknown_id_names_the_corpus() -> None:
    dev = load_cases(reaction_eval.TASK, split="dev")
    ids = [dev[5].id, dev[2].id]
    assert [c.id for c in named(dev, ids, "here")] == [dev[2].id, dev[5].id]
    with pytest.raises(UnknownCaseError, match="--case no-such-case: no case with that id in the dev split of X"):
        named(dev, ["no-such-case"], "the dev split of X")


def test_limit_and_case_are_recorded_in_the_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limited = _offline(capsys, tmp_path, "--limit", "12")
    assert limited["n"] == 12
    manifest = _manifest(tmp_path, limited["run_id"])
    assert (manifest["limit"], manifest["only"]) == (12, [])
    again = _offline(capsys, tmp_path, "--limit", "12")
    assert [r["id"] for r in again["results"]] == [r["id"] for r in limited["results"]]  # type: ignore[attr-defined]
    dev = load_cases(reaction_eval.TASK, split="dev")
    one = _offline(capsys, tmp_path, "--case", dev[3].id)
    assert [r["id"] for r in one["results"]] == [dev[3].id]  # type: ignore[attr-defined]
    assert _manifest(tmp_path, one["run_id"])["only"] == [dev[3].id]


def test_an_unknown_case_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(tmp_path), "--case", "nope"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "--case nope: no case with that id in the dev split of" in err, err


def test_compare_refuses_a_limited_run_against_a_whole_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limited = _offline(capsys, tmp_path, "--limit", "10")
    whole = _offline(capsys, tmp_path)
    code = compare.main(["--cache-dir", str(tmp_path), str(limited["run_id"]), str(whole["run_id"])])
    err = capsys.readouterr().err
    assert code == 1
    assert "ran --limit 10 and run" in err and "the whole dev split" in err and "--allow-split-mismatch" in err, err
    args = ["--cache-dir", str(tmp_path), "--allow-split-mismatch", str(limited["run_id"]), str(whole["run_id"])]
    compare.main(args)
    out = capsys.readouterr().out
    assert "10 cases paired" in out and "134 only in the candidate" in out, out


class _Stats:
    def __init__(self, samples: int, hits: int, misses: int) -> None:
        self.samples, self.hits, self.misses = samples, hits, misses


def test_progress_on_a_terminal_is_a_bar_with_rate_elapsed_and_eta() -> None:
    now = [0.0]
    out = io.StringIO()
    show = ProgressLine("reaction dev", out, tty=True, clock=lambda: now[0])
    show(_Stats(10, 2, 0))  # two hits settled before the first call
    now[0] = 4.0
    show(_Stats(10, 2, 4))
    text = out.getvalue()
    assert text.startswith("\r\x1b[K") and "\n" not in text
    assert "[##############..........] 6/10 samples, 1.00/s, elapsed 00:04, ETA 00:04" in text, text
    now[0] = 8.0
    show(_Stats(10, 2, 8))
    assert out.getvalue().endswith("10/10 samples, 1.00/s, elapsed 00:08, ETA 00:00 (hits 2, model 8)\n")


def test_progress_in_a_log_is_a_plain_line_every_few_seconds() -> None:
    now = [0.0]
    out = io.StringIO()
    show = ProgressLine("reaction dev", out, tty=False, clock=lambda: now[0])
    for i in range(1, 100):
        now[0] = i * 0.1
        show(_Stats(100, 0, i))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines  # the first call and one 5 s later, not one per sample
    assert all("[" not in line and "\r" not in line for line in lines)
    assert "ETA" in lines[-1] and "elapsed 00:05" in lines[-1]
