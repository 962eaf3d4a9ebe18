"""A `--store` eval names its page (issue 34, item 6): the page is written into the local cache and
printed last, and every printed hint carries `--store` so that it works when pasted."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from evals import compare, runs
from evals.cli.runner import main as run_main
from evals.reaction_eval import TASK

pytestmark = pytest.mark.postgres


def test_a_store_eval_prints_its_page_last_and_hints_that_paste(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    assert run_main(TASK, ["--offline", "--store", pg_url, "--cache-dir", str(cache)]) == 0
    *_, show, page = capsys.readouterr().out.rstrip("\n").splitlines()
    match = re.fullmatch(r"  answers +python -m evals\.runs (.*) show (\S+)", show)
    assert match, show
    run_id = match.group(2)
    assert page.split() == ["page", str(cache / "pages" / run_id / "report.html")]
    html = Path(page.split()[1]).read_text(encoding="utf-8")
    assert run_id in html and "<html" in html
    pasted = shlex.split(match.group(1))
    assert pasted == ["--cache-dir", str(cache), "--store", pg_url]
    assert runs.main([*pasted, "show", run_id, "--case", "fx-chemist-item-03"]) == 0  # the hint works as printed
    assert "fx-chemist-item-03" in capsys.readouterr().out
    assert run_main(TASK, ["--offline", "--store", pg_url, "--cache-dir", str(cache)]) == 0
    capsys.readouterr()
    compare.main(["--store", pg_url, "--cache-dir", str(cache), "reaction@previous", "reaction@latest"])
    see = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    assert see.startswith("see a case: python -m evals.runs ") and f"--store {shlex.quote(pg_url)}" in see, see


def test_a_hint_leaves_the_password_out() -> None:
    from evals.store.settings import hint_options

    assert (
        hint_options(None, "postgresql://ann:s3cret@db.example/evals") == " --store postgresql://ann@db.example/evals"
    )
    assert hint_options("c d", None) == " --cache-dir 'c d'"
    assert hint_options(None, None) == ""


def test_runs_list_on_a_store_shows_a_run_in_flight_as_generating_k_of_n(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.store.models import RunProgress
    from evals.store.open import open_store
    from evals.store.records import new_run_id

    assert run_main(TASK, ["--offline", "--store", pg_url, "--cache-dir", str(tmp_path), "--limit", "6"]) == 0
    opened = open_store(pg_url, tmp_path)
    try:
        (done,) = opened.runs.run_ids()
        flying = new_run_id("reaction")
        manifest = opened.runs.manifest(done).replace(run_id=flying, status="generating")
        opened.runs.save(flying, "manifest", manifest)
        opened.runs.save(flying, "progress", RunProgress(run_id=flying, done=4, total=6, updated=1.0))
    finally:
        opened.close()
    capsys.readouterr()
    assert runs.main(["--store", pg_url, "--cache-dir", str(tmp_path), "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "generating 4/6" in rows[flying] and " complete " in rows[done]


def test_trend_reads_the_store_and_links_the_local_pages(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import getpass
    import socket

    cache = tmp_path / "cache"
    made = []
    for label in ("one", "two"):
        assert run_main(TASK, ["--offline", "--store", pg_url, "--cache-dir", str(cache), "--label", label]) == 0
        made.append(capsys.readouterr().out.rstrip("\n").splitlines()[-2].split()[-1])
    page = tmp_path / "trend.html"
    assert runs.main(["--store", pg_url, "--cache-dir", str(cache), "trend", "reaction", "--html", str(page)]) == 0
    lines = capsys.readouterr().out.splitlines()[:-1]
    assert [line.split()[0] for line in lines] == made
    assert all(f"by {getpass.getuser()}@{socket.gethostname()}" in line for line in lines), lines
    html = page.read_text(encoding="utf-8")
    for run_id in made:
        assert f'href="{(cache / "pages" / run_id / "report.html").resolve().as_uri()}"' in html
