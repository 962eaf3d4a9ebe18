"""The pages without a browser: one self-contained file under its policy, the largest corpus under
2 MB, every command that writes one, and the pure parts (diffs, what changed, inputs and gold)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markupsafe import escape

from evals import reaction_eval, runs
from evals.cli import runner
from evals.render import html
from evals.render.page_compare import diff_lines, word_diff
from evals.render.page_run import split_case
from tests.browser.test_hostile import PAYLOAD, _compare_page, _run_page


@pytest.fixture(scope="module")
def every_case_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stub's run over every reaction case (both splits): the largest corpus."""
    cache = tmp_path_factory.mktemp("cache")
    assert runner.main(reaction_eval.TASK, ["--offline", "--cache-dir", str(cache), "--split", "all"]) == 0
    return next(p for p in (cache / "runs").iterdir() if p.is_dir())


def test_the_largest_corpus_gives_one_page_under_2_mb(every_case_run: Path) -> None:
    page = (every_case_run / "report.html").read_text(encoding="utf-8")
    rows = page.count("<tr data-case=")
    assert rows == len(reaction_eval.load_cases())
    assert rows >= 200 and len(page.encode("utf-8")) < 2_000_000


def test_the_page_loads_nothing_and_runs_only_its_own_script(every_case_run: Path) -> None:
    page = (every_case_run / "report.html").read_text(encoding="utf-8")
    script = (html.TEMPLATES / "page.js").read_text(encoding="utf-8")
    assert f'http-equiv="Content-Security-Policy" content="{escape(html.csp(script))}"' in page
    assert html.csp(script).startswith("default-src 'none'; script-src 'sha256-")
    assert page.count("<script") == 1 and f"<script>{script}</script>" in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?!#)[a-z]""", page, re.I)  # no external reference at all
    assert "<link" not in page and "@import" not in page and not re.search(r"url\((?!#)", page)  # url(#clip) is local


@pytest.mark.parametrize("build", [_run_page, _compare_page], ids=["run", "compare"])
def test_hostile_text_is_escaped_in_the_file(build: object, tmp_path: Path) -> None:
    path, _ = build(tmp_path)  # type: ignore[operator]
    page = path.read_text(encoding="utf-8")
    assert page.count("<script") == 1
    assert "&lt;script&gt;window.__pwned=1" in page
    assert "\u202e" not in page and "\x07" not in page and "\\u202eevil" in page
    assert 'src="http' not in page and 'href="javascript' not in page


def test_runs_show_html_writes_the_page_to_a_file_or_stdout(
    every_case_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = every_case_run.parent.parent
    target = tmp_path / "page.html"
    assert runs.main(["--cache-dir", str(cache), "show", every_case_run.name, "--html", str(target)]) == 0
    assert capsys.readouterr().out.strip() == f"page            {target}"
    written = target.read_text(encoding="utf-8")
    assert written.count("<tr data-case=") == len(reaction_eval.load_cases())
    assert runs.main(["--cache-dir", str(cache), "show", "reaction@latest", "--html", "-"]) == 0
    assert capsys.readouterr().out == written


def test_word_diff_marks_removed_and_added_words() -> None:
    assert word_diff('{"verdict": true, "x": 1}', '{"verdict": false, "x": 1}') == [
        (" ", '{"verdict": '),
        ("-", "true,"),
        ("+", "false,"),
        (" ", ' "x": 1}'),
    ]


def test_the_prompt_diff_and_the_confounding_come_from_the_comparison(tmp_path: Path) -> None:
    path, _ = _compare_page(tmp_path)  # prompts and model differ between the two hostile runs
    page = path.read_text(encoding="utf-8")
    assert '<span class="minus">-&lt;script&gt;' in page and '<span class="plus">+other &lt;script&gt;' in page
    assert "More than one thing changed</strong> (prompt, model)" in page


def test_diff_lines_drop_the_header_and_keep_each_lines_kind() -> None:
    diff = ["--- baseline", "+++ candidate", "@@ -1,3 +1,3 @@", " one", "-two", "+2"]
    assert diff_lines(diff) == [("@", "@@ -1,3 +1,3 @@"), (" ", " one"), ("-", "-two"), ("+", "+2")]


def test_a_cases_text_fields_are_inputs_and_the_rest_gold() -> None:
    case = {"id": "x", "split": "dev", "family": "f", "note": "n", "title": "T", "verdict": True, "tags": ["a"]}
    assert split_case(case) == ({"title": "T"}, {"verdict": "true", "tags": '["a"]'})


def test_the_payload_holds_what_the_brief_names() -> None:
    for part in ("<script>", "</textarea>", "javascript:", "onerror", "\u202e", "\x07", "\x85"):
        assert part in PAYLOAD
    assert json.dumps(PAYLOAD)


def test_a_run_answering_as_the_stub_is_named_in_its_report_its_page_and_runs_show_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from attest.backends.stub import StubBackend
    from tests.fakes import FakeBackend, RecordingChat

    stub = StubBackend(answer=reaction_eval.TASK.stub_answer)
    backend = FakeBackend(RecordingChat(lambda m, s: stub.chat_json(m, s).text, model="copycat"))
    cache = tmp_path / "cache"
    assert runner.main(reaction_eval.TASK, ["--cache-dir", str(cache)], backend_factory=lambda _: backend) == 0
    warning = "144 of 144 answers (100%) are identical to the stub backend&#39;s (keyword overlap)"
    assert warning.replace("&#39;", "'") in capsys.readouterr().out
    run_dir = next(p for p in (cache / "runs").iterdir() if p.is_dir())
    assert warning in (run_dir / "report.html").read_text(encoding="utf-8")
    assert runs.main(["--cache-dir", str(cache), "show", run_dir.name, "--html", "-"]) == 0
    assert warning in capsys.readouterr().out
