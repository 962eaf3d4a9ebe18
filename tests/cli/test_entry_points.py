"""Every entry point, driven as a user would from a shell, with a bad corpus, a bad cache
directory and an unreachable server: one line on stderr naming the problem, exit 1.

Each command runs in a subprocess so that what reaches the terminal is what is checked.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN_SCRIPTS = [f"evals/run_{task}_eval.py" for task in ("tagging", "reaction", "explanation")]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    yield port


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}", **env}
    environ.pop("ATTEST_DEBUG", None)
    environ.pop("ATTEST_BACKEND", None)
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
    )


def _one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    err = done.stderr
    assert done.returncode == 1, (done.returncode, done.stdout, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback (most recent" not in err and ": error: " in err, err
    for word in words:
        assert word in err, (word, err)
    return err


def _bad_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "broken_cases.json"
    path.write_text('[{"id": "no-such-fields", "split": "dev"}]', encoding="utf-8")
    return path


def _file_as_cache_dir(tmp_path: Path) -> Path:
    path = tmp_path / "not-a-directory"
    path.write_text("x", encoding="utf-8")
    return path


@pytest.mark.parametrize("script", RUN_SCRIPTS)
def test_run_script_with_a_bad_corpus(script: str, tmp_path: Path) -> None:
    bad = _bad_corpus(tmp_path)
    done = _run([str(REPO / script), "--offline", "--corpus", str(bad), "--cache-dir", str(tmp_path / "c")], tmp_path)
    _one_line_error(done, str(bad), "no-such-fields")


@pytest.mark.parametrize("script", RUN_SCRIPTS)
def test_run_script_with_a_missing_corpus(script: str, tmp_path: Path) -> None:
    done = _run(
        [str(REPO / script), "--offline", "--corpus", "nope.json", "--cache-dir", str(tmp_path / "c")], tmp_path
    )
    _one_line_error(done, "nope.json")


@pytest.mark.parametrize("script", RUN_SCRIPTS)
def test_run_script_with_a_bad_cache_dir(script: str, tmp_path: Path) -> None:
    bad = _file_as_cache_dir(tmp_path)
    done = _run([str(REPO / script), "--offline", "--cache-dir", str(bad)], tmp_path)
    _one_line_error(done, str(bad))


def test_run_script_with_an_unreachable_server(tmp_path: Path, closed_port: int) -> None:
    args = [str(REPO / RUN_SCRIPTS[0]), "--backend", "ollama", "--retries", "1", "--timeout", "2"]
    done = _run([*args, "--cache-dir", str(tmp_path / "c")], tmp_path, OLLAMA_HOST=f"127.0.0.1:{closed_port}")
    _one_line_error(done, f"127.0.0.1:{closed_port}", "ollama serve")


def test_attest_with_an_unreachable_server(tmp_path: Path, closed_port: int) -> None:
    args = ["-m", "attest.cli", "tag", "--retries", "1", "--timeout", "2", "A title", "A summary."]
    done = _run(args, tmp_path, OLLAMA_HOST=f"127.0.0.1:{closed_port}")
    _one_line_error(done, f"127.0.0.1:{closed_port}")


def test_attest_with_a_bad_items_file(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text('{"title": "   ", "summary": "s"}\n', encoding="utf-8")
    done = _run(["-m", "attest.cli", "tag", "--backend", "stub", "--file", str(items)], tmp_path)
    _one_line_error(done, "title", f"{items}:1")


def test_rescore_with_a_bad_cache_dir(tmp_path: Path) -> None:
    bad = _file_as_cache_dir(tmp_path)
    done = _run(["-m", "evals.rescore", "--cache-dir", str(bad)], tmp_path)
    _one_line_error(done, str(bad))


@pytest.mark.slow
def test_rescore_with_a_bad_corpus(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    assert _run([str(REPO / RUN_SCRIPTS[0]), "--offline", "--cache-dir", str(cache)], tmp_path).returncode == 0
    (run_id,) = [p.name for p in (cache / "runs").iterdir()]
    bad = _bad_corpus(tmp_path)
    done = _run(["-m", "evals.rescore", "--cache-dir", str(cache), "--run", run_id, "--corpus", str(bad)], tmp_path)
    _one_line_error(done, str(bad))


def test_corpus_check_with_a_missing_corpus(tmp_path: Path) -> None:
    done = _run(["-m", "evals.corpus_check", "--tagging", "nope.json"], tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "nope.json" in done.stdout + done.stderr


@pytest.mark.parametrize("command", [["list"], ["show", "tagging@latest"], ["prune", "--incomplete"], ["gc"]])
def test_runs_with_a_bad_cache_dir(command: list[str], tmp_path: Path) -> None:
    bad = _file_as_cache_dir(tmp_path)
    done = _run(["-m", "evals.runs", "--cache-dir", str(bad), *command], tmp_path)
    _one_line_error(done, str(bad))
