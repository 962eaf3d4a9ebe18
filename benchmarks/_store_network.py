"""bench_store's network figures: the team store behind a loopback proxy that adds round-trip time.

(d) N workers (1, 2, 4, 8) on one job at 0, 10 and 40 ms RTT: whole-job wall time from the first
    start to the last exit, ms per sample, statements (transactions) per sample; 72 reaction cases x
    --repeat 4 = 288 samples, each worker `--concurrency 4` against its own fake server (200 ms per
    answer, 4 slots). Target: 8 workers at 40 ms take at most a third of 1 worker's wall time.
(e) `runs list --store` of 40 and of 1,000 runs at 40 ms RTT, as a command (process start included).
    Targets: 1.5 s and 2 s.
(f) `runs pull` of 100,000 answers at 40 ms RTT, as a command (reported).

One repeat of each (the whole section takes about ten minutes), said in the notes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from attest.backends.types import ChatResponse
from benchmarks._common import ROOT, Row, script_command
from benchmarks._latency_proxy import LatencyProxy
from evals.store.keys import Entry
from evals.store.open import open_store

CASES, REPEAT, CONCURRENCY = 72, 4, 4
SAMPLES = CASES * REPEAT
WORKERS: tuple[int, ...] = (1, 2, 4, 8)
RTTS_MS: tuple[int, ...] = (0, 10, 40)
PULL_ANSWERS = 100_000
LISTINGS: tuple[int, ...] = (40, 1000)


def shrink_for_smoke() -> None:
    """Tiny sizes for checking that the section runs (`bench_store --smoke`): its figures mean nothing."""
    global CASES, REPEAT, SAMPLES, WORKERS, RTTS_MS, PULL_ANSWERS, LISTINGS
    CASES, REPEAT, WORKERS, RTTS_MS, PULL_ANSWERS, LISTINGS = 4, 2, (1, 2), (10,), 2_000, (5,)
    SAMPLES = CASES * REPEAT


Database = Callable[[str], str]  # name -> the superuser's unix-socket URL of a fresh database


def rows(socket_dir: str, database: Database, root: Path, fake_servers: Any, corpus: Path) -> list[Row]:
    """Every network figure, each from one measurement."""
    target = f"{socket_dir}/.s.PGSQL.5432"
    jobs: dict[tuple[int, int], dict[str, float]] = {}
    for rtt in RTTS_MS:
        with LatencyProxy(target, rtt / 1000) as proxy:
            for n in WORKERS:
                name = f"net_{rtt}_{n}"
                local = database(name)
                with fake_servers(n, CONCURRENCY) as servers:
                    jobs[rtt, n] = _job(proxy.url(name), local, servers, corpus, root / name)
    with LatencyProxy(target, 0.040) as proxy:
        listing = {count: _listing(proxy, database, count, root) for count in LISTINGS}
        pulled = _pull(proxy, database, root)
    return [*_job_rows(jobs), *_listing_rows(listing), _pull_row(pulled)]


def _job(store: str, direct: str, servers: list[str], corpus: Path, root: Path) -> dict[str, float]:
    """Start one worker per server on one job at once; wall seconds to the last exit, statements sent."""
    before = _transactions(direct)
    script = str(ROOT / "evals" / "run_reaction_eval.py")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "OLLAMA_", "PG"))}
    args = ["--backend", "openai", "--model", "fake", "--split", "all", "--repeat", str(REPEAT)]
    args += ["--concurrency", str(CONCURRENCY), "--corpus", str(corpus), "--json"]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, script, *args, "--cache-dir", str(root / f"clone-{n}")],
            env={**base, "ATTEST_OPENAI_BASE_URL": url, "ATTEST_STORE": store, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, url in enumerate(servers)
    ]
    errors = [p.communicate(timeout=1800)[1] for p in procs]
    wall = time.perf_counter() - start
    for proc, err in zip(procs, errors, strict=True):
        if proc.returncode != 0:
            raise RuntimeError(f"a worker failed: {err.strip().splitlines()[-1:]}")
    time.sleep(1.5)  # the server flushes its per-database counters about once a second
    return {"wall": wall, "statements": _transactions(direct) - before}


def _transactions(url: str) -> float:
    """Transactions committed in the URL's database: each autocommit statement is one."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return float(row[0]) if row else 0.0


def _job_rows(jobs: dict[tuple[int, int], dict[str, float]]) -> list[Row]:
    out = []
    for rtt in RTTS_MS:
        one = jobs[rtt, 1]["wall"]
        for n in WORKERS:
            job = jobs[rtt, n]
            share = job["wall"] / one
            target = n == 8 and rtt == 40
            out.append(
                Row(
                    f"store (d): {n} worker(s), one job, {rtt} ms RTT",
                    f"whole job {job['wall']:.1f} s, {1000 * job['wall'] / SAMPLES:.0f} ms per sample, "
                    f"{job['statements'] / SAMPLES:.1f} statements per sample",
                    f"1 worker at {rtt} ms RTT: {one:.1f} s",
                    f"speedup {one / job['wall']:.2f}x",
                    "<= 1/3 of 1 worker's wall" if target else "reported",
                    share <= 1 / 3 if target else None,
                    script_command("bench_store.py"),
                    [
                        f"{CASES} cases x --repeat {REPEAT} = {SAMPLES} samples, --concurrency {CONCURRENCY}, one "
                        "fake server per worker (200 ms per answer, 4 slots); the store behind "
                        f"benchmarks/_latency_proxy.py adding {rtt} ms per round trip; one measurement; statements "
                        "are the database's committed transactions (each autocommit statement is one), all workers"
                    ],
                )
            )
    return out


def _listing(proxy: LatencyProxy, database: Database, count: int, root: Path) -> float:
    """Seconds for `runs list --store` (a new process) over `count` runs at the proxy's RTT."""
    name = f"net_list_{count}"
    direct = database(name)
    _seed_runs(direct, count, root)
    command = [sys.executable, "-m", "evals.runs", "--store", proxy.url(name), "list"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "PG"))}
    times = []
    for _ in range(3):
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, timeout=600)
        times.append(time.perf_counter() - start)
        if done.returncode != 0 or done.stdout.count("\n") != count + 1:
            raise RuntimeError(f"runs list failed: {done.stderr.strip()[-300:]}")
    return sorted(times)[1]


def _seed_runs(direct: str, count: int, root: Path) -> None:
    from evals.engine.chat import unsampled
    from evals.engine.execute import evaluate
    from evals.reaction_eval import TASK, load_cases
    from evals.store.records import MemoryStore

    memory = MemoryStore()
    evaluate(TASK, unsampled(_answer), load_cases()[:CASES], store=memory)
    [first] = memory.run_ids()
    manifest, report = memory.manifest(first), memory.report(first)
    assert report is not None
    store = open_store(direct, root / "seed")
    try:
        for i in range(count):
            run_id = f"{first}-{i:04d}"
            store.runs.save(run_id, "manifest", manifest.replace(run_id=run_id, created=manifest.created + i))
            store.runs.save(run_id, "report", report.replace(run_id=run_id))
    finally:
        store.close()


def _answer(messages: object, schema: object) -> ChatResponse:
    return ChatResponse('{"verdict": true, "confidence": 3, "reasoning": "fits"}', 0.2, 10, 10, "fake", "")


def _listing_rows(listing: dict[int, float]) -> list[Row]:
    targets = {40: 1.5, 1000: 2.0}
    return [
        Row(
            f"store (e): runs list --store of {count:,} runs at 40 ms RTT",
            f"{seconds:.2f} s as a command",
            "the issue's measurement: 1,000 runs in 113 s at 39 ms",
            f"{seconds / targets[count]:.2f} of the target" if count in targets else "",
            f"<= {targets[count]:g} s" if count in targets else "reported (smoke size)",
            seconds <= targets[count] if count in targets else None,
            script_command("bench_store.py"),
            ["median of 3; a new process each time (start-up, connecting, schema check and the one listing statement)"],
        )
        for count, seconds in listing.items()
    ]


def _pull(proxy: LatencyProxy, database: Database, root: Path) -> dict[str, float]:
    name = "net_pull"
    direct = database(name)
    entry = Entry('{"verdict": true}', 0.2, 10, 10, "fake", "", created=time.time(), worker="bench", server="bench")
    store = open_store(direct, root / "pull-seed")
    try:
        keys = [f"{n:064x}" for n in range(PULL_ANSWERS)]
        for first in range(0, PULL_ANSWERS, 5000):
            store.answers.put_many([(k, entry) for k in keys[first : first + 5000]])  # type: ignore[attr-defined]
    finally:
        store.close()
    before = _transactions(direct)
    command = [sys.executable, "-m", "evals.runs", "--store", proxy.url(name), "--cache-dir", str(root / "pulled")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "PG"))}
    start = time.perf_counter()
    done = subprocess.run([*command, "pull"], env=env, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or f"{PULL_ANSWERS} answers" not in done.stdout:
        raise RuntimeError(f"runs pull failed: {(done.stdout + done.stderr).strip()[-300:]}")
    time.sleep(1.5)
    return {"seconds": seconds, "statements": _transactions(direct) - before}


def _pull_row(pulled: dict[str, float]) -> Row:
    return Row(
        f"store (f): runs pull of {PULL_ANSWERS:,} answers at 40 ms RTT",
        f"{pulled['seconds']:.1f} s as a command, {pulled['statements']:.0f} statements",
        "the issue's measurement: 8 round trips per run record",
        f"{1e6 * pulled['seconds'] / PULL_ANSWERS:.0f} us per answer",
        "reported",
        None,
        script_command("bench_store.py"),
        ["one measurement; into an empty local cache"],
    )
