"""Rescore: today's scorers over past runs, from the cache alone, never a model request."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import diskcache
import pytest

from evals import reaction_eval, rescore, tagging_eval, tasks
from evals.cli import runner
from evals.engine.pipeline import load_cases
from evals.engine.task import Task
from evals.store.local.cache_db import JSONDisk
from tests.conftest import ATTEST_ENV

REPO = Path(__file__).resolve().parents[2]
TASKS: dict[str, Task[Any]] = {t.name: t for t in tasks.all_tasks()}  # the registry's, not a copy


def _generate(task: str, cache_dir: Path, *extra: str) -> Path:
    """Run the task's eval offline (the run scripts' entry point) and return its run directory."""
    before = set(_runs(cache_dir))
    argv = ["--offline", "--cache-dir", str(cache_dir), "--split", "all", *extra]
    assert runner.main(TASKS[task], argv) == 0
    (new,) = set(_runs(cache_dir)) - before
    return new


def _runs(cache_dir: Path) -> list[Path]:
    root = cache_dir / "runs"
    return sorted(root.iterdir()) if root.is_dir() else []


def _read(run_dir: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / name).read_text(encoding="utf-8"))
    return data


def _rescore(cache_dir: Path, *extra: str) -> int:
    return rescore.main(["--cache-dir", str(cache_dir), *extra])


@pytest.fixture(scope="module")
def _three_runs_made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One offline run of each task in one cache, made once for the module: the cache and task -> run id.
    Each test gets its own copy (`three_runs`), so what one test writes no other sees."""
    cache_dir = tmp_path_factory.mktemp("three-runs")
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()):
        for name in ATTEST_ENV:  # as the autouse _hermetic_env does for each test
            mp.delenv(name, raising=False)
        return cache_dir, {name: _generate(name, cache_dir).name for name in TASKS}


@pytest.fixture
def three_runs(_three_runs_made: tuple[Path, dict[str, str]], tmp_path: Path) -> dict[str, Path]:
    """One offline run of each task in one cache (tmp_path): a copy of the module's runs."""
    made, run_ids = _three_runs_made
    shutil.copytree(made, tmp_path, symlinks=True, dirs_exist_ok=True)
    return {name: tmp_path / "runs" / run_id for name, run_id in run_ids.items()}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test (AssertionError is not an AttestError: nothing catches it)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a network connection was attempted: {args[1:] or args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# --- same scores, no model --------------------------------------------------------------


def test_rescore_gives_the_generate_runs_scores(
    three_runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _rescore(three_runs["tagging"].parent.parent) == 0
    out = capsys.readouterr().out
    for name, run_dir in three_runs.items():
        report, rescored = _read(run_dir, "report.json"), _read(run_dir, "rescore.json")
        assert rescored["overall"] == report["overall"] > 0.0, name
        assert [r["score"] for r in rescored["results"]] == [r["score"] for r in report["results"]]
        assert rescored["summary"] == report["summary"]
        assert run_dir.name in out
    assert "re-scored 3 run(s)" in out


def test_rescore_opens_no_connection(
    three_runs: dict[str, Path], no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(AssertionError, match="network connection"):
        socket.create_connection(("127.0.0.1", 9))  # the guard is live
    assert _rescore(three_runs["tagging"].parent.parent) == 0
    for run_dir in three_runs.values():
        assert _read(run_dir, "rescore.json")["overall"] == _read(run_dir, "report.json")["overall"]


class _CountingListener:
    """A real TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def wait_for(self, n: int, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.connections < n and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()


@pytest.fixture
def listener() -> Iterator[_CountingListener]:
    server = _CountingListener()
    try:
        yield server
    finally:
        server.close()


def test_rescore_in_a_subprocess_sends_nothing_to_a_live_server(
    three_runs: dict[str, Path], listener: _CountingListener
) -> None:
    with socket.create_connection(("127.0.0.1", listener.port), timeout=5):
        pass
    listener.wait_for(1)
    assert listener.connections == 1  # the counter counts
    listener.connections = 0

    url = f"http://127.0.0.1:{listener.port}"
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}",
        "OLLAMA_HOST": f"127.0.0.1:{listener.port}",
        "ATTEST_OPENAI_BASE_URL": url,
        "ATTEST_BACKEND": "ollama",
    }
    cache_dir = three_runs["tagging"].parent.parent
    proc = subprocess.run(
        [sys.executable, "-m", "evals.rescore", "--all", "--cache-dir", str(cache_dir)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "re-scored 3 run(s)" in proc.stdout
    time.sleep(0.2)
    assert listener.connections == 0


# --- today's scorer, chosen runs, failures ---------------------------------------------


def test_rescore_uses_todays_scorer(
    three_runs: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    swap_task: Callable[[Any], None],
) -> None:
    def strict(case: Any, out: str) -> dict[str, Any]:
        return {"id": case.id, "score": 0.0, "errors": ["the new scorer accepts nothing"], "predicted": []}

    swap_task(dataclasses.replace(tagging_eval.TASK, score_one=strict))
    assert _rescore(three_runs["tagging"].parent.parent) == 0
    tagging = _read(three_runs["tagging"], "rescore.json")
    assert _read(three_runs["tagging"], "report.json")["overall"] > 0.0
    assert tagging["overall"] == 0.0
    assert "scorer changed since the run" in capsys.readouterr().out
    assert all(r["errors"] == ["the new scorer accepts nothing"] for r in tagging["results"])
    reaction = three_runs["reaction"]
    assert _read(reaction, "rescore.json")["overall"] == _read(reaction, "report.json")["overall"]


def test_rescore_uses_todays_labels(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    swap_task: Callable[[Any], None],
) -> None:
    """A relabelled case is scored against its new label, from the same cached answer."""
    corpus = tmp_path / "reaction_cases.json"
    cases = json.loads(reaction_eval.CORPUS.read_text(encoding="utf-8"))[:4]
    corpus.write_text(json.dumps(cases), encoding="utf-8")
    task = dataclasses.replace(reaction_eval.TASK, corpus=corpus)  # the task's own corpus, not --corpus
    swap_task(task)
    assert runner.main(task, ["--offline", "--cache-dir", str(tmp_path / "cache"), "--split", "all"]) == 0
    (run_dir,) = _runs(tmp_path / "cache")
    before = _read(run_dir, "report.json")["results"][0]["score"]
    cases[0]["verdict"] = not cases[0]["verdict"]
    corpus.write_text(json.dumps(cases), encoding="utf-8")
    assert _rescore(tmp_path / "cache") == 0
    after = _read(run_dir, "rescore.json")["results"][0]["score"]
    assert (before == 0.0) != (after == 0.0)


def test_rescore_of_a_run_on_another_corpus_file_reads_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--corpus FILE` runs are rescored against FILE, not against the default corpus beside the eval."""
    corpus = tmp_path / "relabelled.json"
    cases = json.loads(tagging_eval.CORPUS.read_text(encoding="utf-8"))[:3]
    for case in cases:
        case["tags"] = ["catalysis"]
    corpus.write_text(json.dumps(cases), encoding="utf-8")
    run_dir = _generate("tagging", tmp_path / "cache", "--corpus", str(corpus))
    assert Path(_read(run_dir, "manifest.json")["provenance"]["corpus"]).resolve() == corpus.resolve()
    assert _rescore(tmp_path / "cache") == 0
    assert _read(run_dir, "rescore.json")["overall"] == _read(run_dir, "report.json")["overall"]


def test_dropped_case_error_hint_works(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    swap_task: Callable[[Any], None],
) -> None:
    """A run whose case left the corpus: the error says to rescore with --corpus OLD_FILE, and doing so works."""
    corpus, old = tmp_path / "tagging_cases.json", tmp_path / "old_tagging_cases.json"
    cases = json.loads(tagging_eval.CORPUS.read_text(encoding="utf-8"))[:3]
    old.write_text(json.dumps(cases), encoding="utf-8")
    corpus.write_text(json.dumps(cases), encoding="utf-8")
    task = dataclasses.replace(tagging_eval.TASK, corpus=corpus)
    swap_task(task)
    assert runner.main(task, ["--offline", "--cache-dir", str(tmp_path / "cache"), "--split", "all"]) == 0
    corpus.write_text(json.dumps(cases[1:]), encoding="utf-8")
    capsys.readouterr()
    assert _rescore(tmp_path / "cache") == 1
    err = capsys.readouterr().err
    assert cases[0]["id"] in err and "--corpus" in err and "Traceback" not in err
    (run_dir,) = _runs(tmp_path / "cache")
    assert _rescore(tmp_path / "cache", "--run", run_dir.name, "--corpus", str(old)) == 0


def test_run_option_selects_one_run(three_runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    chosen = three_runs["reaction"]
    assert _rescore(chosen.parent.parent, "--run", chosen.name) == 0
    out = capsys.readouterr().out
    assert chosen.name in out and "re-scored 1 run(s)" in out
    assert (chosen / "rescore.json").is_file()
    for name in ("tagging", "explanation"):
        assert three_runs[name].name not in out
        assert not (three_runs[name] / "rescore.json").exists()


def test_default_is_the_latest_run_per_task_and_all_takes_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _generate("tagging", tmp_path)
    time.sleep(1.05)  # run ids have one-second resolution
    second = _generate("tagging", tmp_path)
    assert _rescore(tmp_path) == 0
    assert (second / "rescore.json").is_file() and not (first / "rescore.json").exists()
    assert _rescore(tmp_path, "--all") == 0
    assert (first / "rescore.json").is_file()


def test_unknown_run_is_an_error(three_runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert _rescore(three_runs["tagging"].parent.parent, "--run", "20990101T000000-tagging-00001") == 1
    err = capsys.readouterr().err
    assert "20990101T000000-tagging-00001" in err and "Traceback" not in err


def test_missing_sample_is_a_one_line_error_naming_the_run(
    three_runs: dict[str, Path], no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = three_runs["explanation"]
    key = _read(run_dir, "manifest.json")["samples"][2]["key"]
    with diskcache.Cache(str(run_dir.parent.parent / "responses"), disk=JSONDisk) as db:
        assert db.delete(key)
    assert _rescore(run_dir.parent.parent, "--run", run_dir.name) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rescore: error: ")
    assert run_dir.name in err
    assert "generate" in err and "Traceback" not in err
    assert not (run_dir / "rescore.json").exists()


def test_no_runs_exits_1_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _rescore(tmp_path / "empty") == 1
    captured = capsys.readouterr()
    assert "no complete runs" in captured.out + captured.err
    assert "run an eval first" in captured.out + captured.err


def test_incomplete_run_is_not_rescored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _generate("tagging", tmp_path)
    manifest = _read(run_dir, "manifest.json")
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "generating"}), encoding="utf-8")
    assert _rescore(tmp_path) == 1
    assert not (run_dir / "rescore.json").exists()


# --- scale ---------------------------------------------------------------------------------


def test_rescore_every_task_full_corpus_repeat_5(
    tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {name: _generate(name, tmp_path, "--repeat", "5") for name in TASKS}
    capsys.readouterr()
    start = time.perf_counter()
    assert _rescore(tmp_path) == 0
    seconds = time.perf_counter() - start
    capsys.readouterr()
    samples = 0
    for run_dir in runs.values():
        rescored = _read(run_dir, "rescore.json")
        assert rescored["overall"] == _read(run_dir, "report.json")["overall"]
        samples += rescored["n"]
    assert samples == 5 * sum(len(load_cases(t)) for t in TASKS.values())
    with capsys.disabled():
        print(f"\nrescore: {samples} samples over 3 tasks scored in {seconds:.3f} s in-process")
