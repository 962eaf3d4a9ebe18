"""`compare --summary FILE` (issue 34, item 2): the markdown comparison appended, never overwriting,
long case lists folded into <details>; an unwritable file is one line after the verdict is printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_compare import make_pair, run_compare


def test_summary_appends_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=0, worse=14, both_right=3, both_wrong=3)
    summary = tmp_path / "step-summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    first = run_compare(capsys, runs.cache, runs.base, runs.cand, "--summary", str(summary))
    assert first.code == 4 and "verdict     REGRESS" in first.out
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n")
    assert "### tagging: **regress**" in text
    assert "<details><summary>Regressed (14)</summary>" in text  # 14 cases fold
    assert "**Regressed" not in text
    assert "| task | run | tokens | cost |" in text  # both runs' tokens and cost follow the comparison
    assert "| tagging | baseline |" in text and "| tagging | candidate |" in text
    second = run_compare(capsys, runs.cache, runs.base, runs.cand, "--summary", str(summary), "--json")
    assert second.code == 4
    again = summary.read_text(encoding="utf-8")
    assert again.startswith(text) and again.count("### tagging: **regress**") == 2


def test_a_short_case_list_stays_inline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=3, worse=0, both_right=3, both_wrong=3)
    summary = tmp_path / "new.md"
    run_compare(capsys, runs.cache, runs.base, runs.cand, "--summary", str(summary))
    text = summary.read_text(encoding="utf-8")
    assert "**Improved (3):** " in text and "<summary>Improved" not in text


def test_an_unwritable_summary_is_one_line_after_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = make_pair(tmp_path, better=3, worse=0, both_right=3, both_wrong=3)
    result = run_compare(capsys, runs.cache, runs.base, runs.cand, "--summary", str(tmp_path / "no" / "dir.md"))
    assert result.code == 1 and "verdict" in result.out
    assert result.err.count("\n") == 1 and f"--summary {tmp_path / 'no' / 'dir.md'}: cannot append" in result.err


def test_markdown_output_carries_both_runs_tokens_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_pair(tmp_path, better=3, worse=0, both_right=3, both_wrong=3)
    out = run_compare(capsys, runs.cache, runs.base, runs.cand, "--markdown").out
    assert "| task | run | tokens | cost |" in out
    assert out.count("| tagging | ") == 2
