"""Real worker processes on one PostgreSQL store: each sample generated once, teammates and CI
pay nothing twice, push/pull, and the faults (SIGKILL, server restart) lose and duplicate nothing.

Workers are `run_reaction_eval.py --backend openai` subprocesses, each against its own fake
model server (tests/reliability/fakeserver.py) that counts the requests it answers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from evals.reaction_eval import CORPUS
from tests.reliability.fakeserver import ROOT, FakeServer, reaction_command, script_env
from tests.store.conftest import Pg

pytestmark = pytest.mark.postgres
CASES = 40


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    cases: list[dict[str, Any]] = json.loads(CORPUS.read_text(encoding="utf-8"))
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(cases[:CASES], indent=1), encoding="utf-8")
    return path


def _worker(cache_dir: Path, corpus: Path, server: FakeServer, url: str | None, *args: str) -> subprocess.Popen[bytes]:
    extra = {"ATTEST_STORE": url} if url else {}
    return subprocess.Popen(
        reaction_command(cache_dir, "--corpus", str(corpus), *args),
        cwd=ROOT,
        env=script_env(server.url, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return out.decode(), err.decode()


def _stored(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM attest.answers").fetchone()
    return int(row[0]) if row else 0


@pytest.mark.slow
def test_two_workers_generate_each_sample_once_and_a_teammate_pays_nothing(
    pg_url: str, corpus: Path, tmp_path: Path
) -> None:
    with FakeServer(delay=0.05) as one, FakeServer(delay=0.05) as two, FakeServer() as three:
        procs = [_worker(tmp_path / f"w{n}", corpus, s, pg_url, "--concurrency", "2") for n, s in enumerate((one, two))]
        outs = [_finish(p) for p in procs]
        sent = Counter(r.messages_key for s in (one, two) for r in s.requests)
        assert len(sent) == CASES and sum(sent.values()) == CASES  # every sample asked once, of one server
        assert one.count > 0 and two.count > 0, (one.count, two.count)  # both workers did part of the work
        [(report, _)] = [o for o in outs if "helped run" not in o[0]]  # one run per job: the last scores it
        [(helped, _)] = [o for o in outs if "helped run" in o[0]]  # the other says which run it helped
        assert f"model server    {one.url}" in report and f"model server    {two.url}" in report, report
        assert report.count("  worker          ") == 2, report
        with psycopg.connect(pg_url) as conn:
            [(run_id,)] = conn.execute("SELECT DISTINCT run_id FROM attest.records").fetchall()
        assert f"helped run {run_id}" in helped and f"runs show {run_id}" in helped, helped
        _finish(_worker(tmp_path / "teammate", corpus, three, pg_url))
        assert three.count == 0  # a teammate's rerun from an empty local cache: no model call
    assert _stored(pg_url) == CASES
    assert not (tmp_path / "teammate" / "runs").exists()  # the records went to the store, not the local cache


@pytest.mark.slow
def test_push_then_pull_copy_everything_once(pg_url: str, corpus: Path, tmp_path: Path) -> None:
    local = tmp_path / "offline"
    with FakeServer() as server:
        _finish(_worker(local, corpus, server, None))
        assert server.count == CASES
        push = [*_runs(local), "push"]
        first = subprocess.run(push, env=script_env(server.url, ATTEST_STORE=pg_url), capture_output=True, text=True)
        again = subprocess.run(push, env=script_env(server.url, ATTEST_STORE=pg_url), capture_output=True, text=True)
        assert first.returncode == 0, first
        assert f"{CASES} answers (0 already there), 1 run(s) (0 already" in first.stdout, first  # runs, not files
        assert again.returncode == 0 and f"0 answers ({CASES} already there), 0 run(s) (1" in again.stdout, again
        pulled = tmp_path / "pulled"
        pull = subprocess.run(
            [*_runs(pulled), "pull"], env=script_env(server.url, ATTEST_STORE=pg_url), capture_output=True, text=True
        )
        assert pull.returncode == 0 and f"{CASES} answers (0 already there), 1 run(s) (0 already" in pull.stdout, pull
        _finish(_worker(pulled, corpus, server, None))  # offline from the pulled cache
        assert server.count == CASES
    listed = subprocess.run(
        [*_runs(local), "--store", pg_url, "list"], env=script_env("http://127.0.0.1:1"), capture_output=True, text=True
    )
    assert listed.returncode == 0 and "commit" in listed.stdout.splitlines()[0], listed
    assert "reaction" in listed.stdout.splitlines()[1] and "@" in listed.stdout.splitlines()[1]


def _runs(cache_dir: Path) -> list[str]:
    import sys

    return [sys.executable, "-m", "evals.runs", "--cache-dir", str(cache_dir)]


@pytest.mark.slow
def test_a_worker_killed_with_sigkill_frees_its_claims_at_once(pg_url: str, corpus: Path, tmp_path: Path) -> None:
    with FakeServer(delay=5.0) as slow, FakeServer() as fast:
        victim = _worker(tmp_path / "victim", corpus, slow, pg_url, "--concurrency", "4")
        deadline = time.monotonic() + 60
        while slow.count < 4 and time.monotonic() < deadline:  # it holds four claims, its answers on the way
            time.sleep(0.05)
        assert slow.count == 4
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=30)
        started = time.monotonic()
        _finish(_worker(tmp_path / "rescuer", corpus, fast, pg_url, "--lease-wait", "3"))
        assert time.monotonic() - started < 30
        assert fast.count == CASES  # the killed worker stored nothing; every sample asked once more, none twice
    assert _stored(pg_url) == CASES


@pytest.mark.slow
def test_a_server_restart_mid_run_with_two_workers_loses_nothing_and_both_finish(
    pg: Pg, pg_db: str, corpus: Path, tmp_path: Path
) -> None:
    url = pg.url(pg_db)
    with FakeServer(delay=0.1) as one, FakeServer(delay=0.1) as two, FakeServer() as after:
        procs = [_worker(tmp_path / f"w{n}", corpus, s, url, "--concurrency", "2") for n, s in enumerate((one, two))]
        deadline = time.monotonic() + 60
        while one.count + two.count < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        pg.stop()
        time.sleep(2.0)  # the store is away for a while: the workers' model calls go on, their writes wait
        pg.start()
        outs = [_finish(p) for p in procs]  # both exit 0
        for _, err in outs:
            said = [line for line in err.splitlines() if "lost the connection" in line]
            assert said and pg_db in said[0] and "reconnecting for up to 60 s" in said[0], err
            assert "Traceback" not in err and "internal error" not in err
        assert _stored(url) == CASES  # nothing lost
        asked = one.count + two.count
        assert CASES <= asked <= CASES + 2 * 2, asked  # duplicates: at most the requests in flight
        _finish(_worker(tmp_path / "w0", corpus, after, url))
        assert after.count == 0


@pytest.mark.slow
def test_a_store_away_longer_than_store_retry_stops_the_run_in_one_line(
    pg: Pg, pg_db: str, corpus: Path, tmp_path: Path
) -> None:
    url = pg.url(pg_db)
    with FakeServer(delay=0.1) as server, FakeServer() as after:
        proc = _worker(tmp_path / "w", corpus, server, url, "--concurrency", "1", "--store-retry", "1")
        deadline = time.monotonic() + 60
        while server.count < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        pg.stop()
        _, err = proc.communicate(timeout=60)
        pg.start()
        stored = _stored(url)
        lines = err.decode().strip().splitlines()
        assert proc.returncode == 1 and "Traceback" not in err.decode() and "internal error" not in err.decode()
        assert "reconnecting for up to 1 s" in lines[-2], lines
        assert pg_db in lines[-1] and "server restarted" in lines[-1] and "rerun" in lines[-1], lines
        assert 0 < stored < CASES
        _finish(_worker(tmp_path / "w", corpus, after, url))
        assert after.count == CASES - stored  # only what was missing
    assert _stored(url) == CASES
