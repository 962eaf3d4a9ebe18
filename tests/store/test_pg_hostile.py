"""Hostile rows planted in a real PostgreSQL store are read as untrusted, as local files are: each is one
line (`skipped answer KEY: why`, or `unreadable` for a run), a miss or a skip, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from evals import rescore, runs
from evals.cli.runner import main as run_main
from evals.reaction_eval import TASK
from evals.store import records
from evals.store.keys import ANSWER_BYTES
from evals.store.open import open_store

pytestmark = pytest.mark.postgres


def _run(url: str, cache: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, str]:
    code = run_main(TASK, ["--offline", "--split", "dev", "--store", url, "--cache-dir", str(cache), *more])
    out = capsys.readouterr()
    return code, out.out, out.err


def _sql(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def _one_run(url: str) -> str:
    [(run_id,)] = _sql(url, "SELECT DISTINCT run_id FROM attest.records")
    return str(run_id)


@pytest.fixture
def stored(pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The store after one complete offline run of the reaction task's dev split."""
    assert _run(pg_url, tmp_path / "first", capsys)[0] == 0
    return pg_url


@pytest.mark.parametrize(
    ("planted", "why"),
    [
        ("jsonb_set(value, '{latency_s}', '1e400'::jsonb)", "out of range: latency_s"),
        ("(repeat('[', 3000) || repeat(']', 3000))::jsonb", "nested too deep"),
        ("jsonb_set(value, '{text}', to_jsonb(repeat('x', %s)))", "over the"),
    ],
    ids=["latency-1e400", "nested-3000", "over-the-cap"],
)
def test_a_bad_answer_is_a_miss_with_one_line_and_is_replaced(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str, why: str
) -> None:
    [(key,)] = _sql(stored, "SELECT key FROM attest.answers ORDER BY key LIMIT 1")
    params = (ANSWER_BYTES + 10, key) if "%s" in planted else (key,)
    _sql(stored, f"UPDATE attest.answers SET value = {planted} WHERE key = %s", *params)
    code, _, err = _run(stored, tmp_path / "second", capsys)
    assert code == 0, err
    said = [line for line in err.splitlines() if "skipped answer" in line]
    assert said == [f"warning: skipped answer {key[:12]}: " + said[0].split(": ", 2)[2]] and why in said[0], err
    assert "internal error" not in err
    store = open_store(stored, tmp_path)
    try:
        assert store.answers.get(key) is not None  # the rerun stored the sample again over the bad row
        assert not store.answers.warnings
    finally:
        store.close()


def test_pull_and_show_and_rescore_skip_a_bad_answer(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [(key,)] = _sql(stored, "SELECT key FROM attest.answers ORDER BY key LIMIT 1")
    _sql(stored, "UPDATE attest.answers SET value = jsonb_set(value, '{latency_s}', '1e400') WHERE key = %s", key)
    local = tmp_path / "mine"
    assert runs.main(["--store", stored, "--cache-dir", str(local), "pull"]) == 0
    err = capsys.readouterr().err
    assert f"skipped answer {key[:12]}: out of range" in err and "internal error" not in err
    assert runs.main(["--store", stored, "--cache-dir", str(local), "show", "reaction@latest"]) == 0
    assert rescore.main(["--store", stored, "--cache-dir", str(local)]) == 1  # its one run lacks a sample
    err = capsys.readouterr().err
    assert "internal error" not in err and "skipped" in err


def test_a_row_whose_body_names_another_run_is_unreadable_and_never_pulled(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _one_run(stored)
    _sql(
        stored,
        "INSERT INTO attest.records (run_id, name, body, host, username) "
        "SELECT 'planted-1', name, body, host, username FROM attest.records WHERE run_id = %s",
        real,
    )
    local = tmp_path / "mine"
    assert runs.main(["--store", stored, "--cache-dir", str(local), "list"]) == 0
    out = capsys.readouterr().out
    assert "planted-1" in out and "unreadable" in out
    assert runs.main(["--store", stored, "--cache-dir", str(local), "pull"]) == 0
    err = capsys.readouterr().err
    assert "unreadable run planted-1" in err and "records run id" in err
    assert not (local / "runs" / "planted-1").exists() and (local / "runs" / real / "manifest.json").is_file()


def test_pull_never_writes_over_a_local_run_that_differs(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = tmp_path / "mine"
    assert run_main(TASK, ["--offline", "--split", "dev", "--cache-dir", str(local)]) == 0
    [mine] = [p.name for p in (local / "runs").iterdir() if p.is_dir()]
    theirs = _one_run(stored)
    before = {p.name: p.read_bytes() for p in (local / "runs" / mine).glob("*.json")}
    for name in ("manifest", "report", "prompts"):  # the store's records, planted under the local run's id
        _sql(
            stored,
            "INSERT INTO attest.records (run_id, name, body, host, username) SELECT %s, name, "
            "CASE WHEN body ? 'run_id' THEN jsonb_set(body, '{run_id}', to_jsonb(%s::text)) ELSE body END, "
            "host, username FROM attest.records WHERE run_id = %s AND name = %s",
            mine,
            mine,
            theirs,
            name,
        )
    capsys.readouterr()
    assert runs.main(["--store", stored, "--cache-dir", str(local), "pull"]) == 0
    err = capsys.readouterr().err
    assert f"conflict: run {mine} differs from the local run" in err and "1 run(s) in conflict" in err
    assert {p.name: p.read_bytes() for p in (local / "runs" / mine).glob("*.json")} == before
    assert (local / "runs" / theirs / "report.json").is_file()  # the other run is pulled as usual


def test_a_record_over_its_cap_is_measured_in_sql_and_never_parsed(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(records.RECORD_BYTES, "report", 2000)  # the real cap (128 MiB) less a planted 150 MB
    run_id = _one_run(stored)
    assert runs.main(["--store", stored, "show", run_id]) == 1
    err = capsys.readouterr().err
    assert "is unreadable" in err and "over the 2000-byte cap" in err and err.count("\n") == 1, err
    assert runs.main(["--store", stored, "list"]) == 0  # the listing reads summary rows, never the report
    assert run_id in capsys.readouterr().out


def test_a_report_with_20000_families_draws_at_most_a_page(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.render import page_caps, plots

    run_id = _one_run(stored)
    families = [{"family": f"f{i}", "mean": 0.5, "low": 0.4, "high": 0.6, "baselines": {}} for i in range(20000)]
    _sql(
        stored,
        "UPDATE attest.records SET body = jsonb_set(body, '{uncertainty,families}', %s::jsonb) "
        "WHERE run_id = %s AND name = 'report'",
        json.dumps(families),
        run_id,
    )
    page = tmp_path / "page.html"
    assert runs.main(["--store", stored, "show", run_id, "--html", str(page)]) == 0, capsys.readouterr().err
    text = page.read_text(encoding="utf-8")
    assert f"{20000 - plots.FOREST_ROWS} more not shown" in text
    assert text.count(">f1") <= page_caps.PAGE_FAMILIES  # family labels drawn: the first rows only


def test_a_corpus_path_recorded_in_the_store_is_never_opened(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.reaction_eval import CORPUS

    cases = json.loads(CORPUS.read_text(encoding="utf-8"))
    planted = tmp_path / "elsewhere.json"  # a file on this machine at the path another machine recorded
    planted.write_text(json.dumps([{**c, "family": "SECRET-XYZ"} for c in cases]), encoding="utf-8")
    run_id = _one_run(stored)
    _sql(
        stored,
        "UPDATE attest.records SET body = jsonb_set(body, '{provenance,corpus}', to_jsonb(%s::text)) "
        "WHERE run_id = %s AND name = 'manifest'",
        str(planted),
        run_id,
    )
    page = tmp_path / "page.html"
    assert runs.main(["--store", stored, "show", run_id, "--html", str(page)]) == 0
    assert "SECRET-XYZ" not in page.read_text(encoding="utf-8")
    capsys.readouterr()
    assert rescore.main(["--store", stored, "--cache-dir", str(tmp_path), "--json"]) == 0
    printed = capsys.readouterr()
    assert "SECRET-XYZ" not in printed.out + printed.err
    [row] = json.loads(printed.out)["runs"]
    assert row["corpus"] == str(TASK.corpus)  # the task's corpus in this checkout, not the recorded path


def test_a_planted_summary_row_lists_as_unreadable(stored: str, capsys: pytest.CaptureFixture[str]) -> None:
    real = _one_run(stored)
    _sql(
        stored,
        "INSERT INTO attest.runs (run_id, task, created, summary, host, username) "
        "SELECT 'planted-2', task, created + 1, summary, host, username FROM attest.runs WHERE run_id = %s "
        "UNION ALL SELECT 'planted-3', task, created + 2, jsonb_set(summary, '{n}', '-5'), host, username "
        "FROM attest.runs WHERE run_id = %s "
        "UNION ALL SELECT 'planted-4', task, created + 3, (repeat('[', 3000) || repeat(']', 3000))::jsonb, host, "
        "username FROM attest.runs WHERE run_id = %s",
        real,
        real,
        real,
    )
    assert runs.main(["--store", stored, "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    said = {line.split()[0]: line for line in out[1:]}
    assert "records run id" in said["planted-2"] and "unreadable" in said["planted-3"], out
    assert "unreadable" in said["planted-4"] and "complete" in said[real], out
