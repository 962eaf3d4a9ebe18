"""A team's PostgreSQL store: a teammate's rerun, N workers on one run, and lookups against the local cache.

A real PostgreSQL 16 from the `pgserver` package (unix socket) holds the store; a fresh
database per measurement. Every worker is `evals/run_reaction_eval.py --backend openai
--store URL` in its own process, with its own empty local cache and its own fake model
server (benchmarks/_fakeserver.py: 200 ms per answer, one slot), on 200 reaction cases
x `--repeat 5` = 1,000 samples.

(a) teammate: after the one-worker cold run, a second "clone" (an empty cache directory,
    its own fake server) runs the same eval against the same store: its model calls (0)
    and its wall time as a fraction of the cold run's (target <= 5%).
(b) workers: 1, 2 and 4 workers started together on one run; the model calls over all
    servers must equal the samples exactly, and the speedup over one worker must be at
    least 0.9 x N.
(c) lookups: one hit (`get`) and a 1,000-key `get_many`, the store against the local cache,
    in process.

Sleep-bound, not CPU-bound: one repeat takes about six minutes, so it repeats
min(REPEATS, 2) times (stated in the notes).

(d)-(f), the store across a network (a loopback proxy adding 0, 10 or 40 ms per round
trip: N workers on one job, `runs list` of 40 and 1,000 runs, `pull` of 100k answers), are
benchmarks/_store_network.py.

`python -m benchmarks.bench_store` runs everything; `--only network` runs (d)-(f) alone and
`--only local` (a)-(c) alone. `--smoke` shrinks the network section to a few samples to check
that it runs (its figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchmarks import _store_network
from benchmarks._common import REPEATS, ROOT, Row, Spread, print_rows, rotated, script_command
from evals.reaction_eval import CORPUS
from evals.store.keys import Entry
from evals.store.open import open_store

CASES, REPEAT = 200, 5
SAMPLES = CASES * REPEAT
DELAY_S = 0.2
LEVELS = (1, 2, 4)
RUNS = min(REPEATS, 2)
LOOKUPS = 1000


@contextmanager
def _postgres() -> Iterator[tuple[Path, str]]:
    """A scratch directory (traversable by the server's user when run as root) and a running server's socket dir."""
    top = Path(tempfile.mkdtemp(prefix="attest-bench-store-"))
    top.chmod(0o755)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server

        server = get_server(top / "pg", cleanup_mode="stop")
    try:
        yield top, str(psycopg.conninfo.conninfo_to_dict(server.get_uri())["host"])
    finally:
        server.cleanup()
        shutil.rmtree(top, ignore_errors=True)


def _database(socket_dir: str, name: str) -> str:
    with psycopg.connect(f"postgresql://postgres@/postgres?host={socket_dir}", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://postgres@/{name}?host={socket_dir}"


@contextmanager
def _fake_servers(n: int, slots: int = 1) -> Iterator[list[str]]:
    script = str(Path(__file__).with_name("_fakeserver.py"))
    procs = [
        subprocess.Popen(
            [sys.executable, script, "--slots", str(slots), "--delay", str(DELAY_S)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(n)
    ]
    try:
        urls = []
        for proc in procs:
            assert proc.stdout is not None
            urls.append(f"http://127.0.0.1:{int(proc.stdout.readline())}")
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


def _calls(url: str) -> int:
    return int(httpx.get(f"{url}/stats", timeout=10).json()["requests"])


def _workers(store: str, servers: list[str], corpus: Path, root: Path) -> tuple[float, list[dict[str, Any]]]:
    """Start one eval per server at once against `store`; wall seconds until the last ends, and their reports."""
    script = str(ROOT / "evals" / "run_reaction_eval.py")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "OLLAMA_"))}
    common = ["--backend", "openai", "--model", "fake", "--split", "all", "--repeat", str(REPEAT), "--concurrency", "1"]
    common.append("--json")
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                script,
                *common,
                "--corpus",
                str(corpus),
                "--cache-dir",
                str(root / f"clone-{n}"),
                "--json",
            ],
            env={**base, "ATTEST_OPENAI_BASE_URL": url, "ATTEST_STORE": store, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, url in enumerate(servers)
    ]
    outputs = [p.communicate(timeout=1800) for p in procs]
    seconds = time.perf_counter() - start
    for proc, (_, err) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            raise RuntimeError(f"a worker failed: {err.strip().splitlines()[-1:]}")
    return seconds, [json.loads(out) for out, _ in outputs if out.strip()]  # one run per job: one report


def _corpus(root: Path, cases: int = CASES) -> Path:
    path = root / f"corpus-{cases}.json"
    path.write_text(json.dumps(json.loads(CORPUS.read_text(encoding="utf-8"))[:cases]), encoding="utf-8")
    return path


def _measure(socket_dir: str, root: Path, corpus: Path, repeat: int, n: int, found: dict[str, Any]) -> None:
    store = _database(socket_dir, f"bench_{repeat}_{n}")
    with _fake_servers(n) as servers:
        seconds, reports = _workers(store, servers, corpus, root / f"r{repeat}-n{n}")
        found["calls"].setdefault(n, []).append(sum(_calls(u) for u in servers))
        found["times"].setdefault(n, []).append(seconds)
        found["spans"].setdefault(n, []).append(_span(reports))
        found["split"][n] = reports[0]["generate"].get("workers", {})
    if n == 1:  # (a) a teammate's second clone: empty local cache, same store, its own server
        with _fake_servers(1) as servers:
            again, _ = _workers(store, servers, corpus, root / f"r{repeat}-teammate")
            found["teammate_calls"].append(_calls(servers[0]))
            found["teammate"].append(again / seconds)


def _span(reports: list[dict[str, Any]]) -> float:
    """Seconds from the first worker starting to generate to the last one finishing (each report is scored
    right after its generate stage: `scored_at` ends it, `generate.seconds` before that starts it). Workers of
    one job make one run: the last to finish reports, so with N workers this is that worker's generate stage."""
    starts = [r["scored_at"] - r["generate"]["seconds"] for r in reports]
    return float(max(r["scored_at"] for r in reports) - min(starts))


def _lookups(socket_dir: str, root: Path) -> dict[str, list[float]]:
    keys = [f"{n:064x}" for n in range(LOOKUPS)]
    entry = Entry('{"verdict": true}', 0.2, 10, 10, "fake", "", created=time.time(), worker="bench", server="bench")
    out: dict[str, list[float]] = {}
    for name, url in (("local", None), ("store", _database(socket_dir, "bench_lookups"))):
        opened = open_store(url, root / f"lookups-{name}")
        try:
            for key in keys:
                opened.answers.put(key, entry)
            for _ in range(REPEATS):
                one = []
                for key in keys[:200]:
                    t = time.perf_counter()
                    opened.answers.get(key)
                    one.append(time.perf_counter() - t)
                out.setdefault(f"{name} hit", []).append(statistics.median(one))
                t = time.perf_counter()
                assert all(v is not None for v in opened.answers.get_many(keys).values())
                out.setdefault(f"{name} many", []).append(time.perf_counter() - t)
        finally:
            opened.close()
    return out


def run(argv: Sequence[str] = ()) -> list[Row]:
    options = _options(argv)
    if options.smoke:
        _store_network.shrink_for_smoke()
    local, network = options.only in ("all", "local"), options.only in ("all", "network")
    found: dict[str, Any] = {"calls": {}, "times": {}, "spans": {}, "split": {}, "teammate": [], "teammate_calls": []}
    rows: list[Row] = []
    with _postgres() as (root, socket_dir):
        if local:
            corpus = _corpus(root)
            for i in range(RUNS):
                for n in rotated(LEVELS, i):
                    _measure(socket_dir, root, corpus, i, n, found)
            lookups = _lookups(socket_dir, root)
            rows += [_teammate_row(found), *(_workers_row(n, found) for n in LEVELS), *_lookup_rows(lookups)]
        if network:
            small = _corpus(root, _store_network.CASES)
            database = lambda name: _database(socket_dir, name)  # noqa: E731
            rows += _store_network.rows(socket_dir, database, root, _fake_servers, small)
    return rows


def _options(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_store", description="The team store's figures.")
    parser.add_argument(
        "--only",
        choices=("all", "local", "network"),
        default=os.environ.get("ATTEST_BENCH_STORE", "all"),
        help="local: (a)-(c) on a unix socket; network: (d)-(f) behind the latency proxy (default: all)",
    )
    parser.add_argument("--smoke", action="store_true", help="the network section at a few samples (a smoke test)")
    return parser.parse_args(list(argv))


def _notes() -> list[str]:
    return [
        f"{CASES} reaction cases x --repeat {REPEAT} = {SAMPLES} samples; each worker its own process, empty local "
        f"cache and fake server ({DELAY_S * 1000:.0f} ms per answer, 1 slot); PostgreSQL 16 from pgserver on a unix "
        f"socket; {RUNS} repeats (a repeat takes about six minutes)",
    ]


def _teammate_row(found: dict[str, Any]) -> Row:
    share = Spread.of(found["teammate"])
    calls = found["teammate_calls"]
    return Row(
        "store (a): a teammate's rerun from an empty clone",
        f"{max(calls)} model calls; {share.fmt(scale=100, unit='%')} of the cold run's wall time",
        f"the cold one-worker run: {Spread.of(found['times'][1]).fmt(unit='s')}, {SAMPLES} model calls",
        f"{share.fmt()}",
        "0 model calls, <= 5% of the cold wall time",
        max(calls) == 0 and share.median <= 0.05,
        script_command("bench_store.py"),
        _notes(),
    )


def _workers_row(n: int, found: dict[str, Any]) -> Row:
    spans, times = found["spans"], found["times"]
    speedup = Spread.of(t1 / tn for t1, tn in zip(spans[1], spans[n], strict=True))
    wall = Spread.of(t1 / tn for t1, tn in zip(times[1], times[n], strict=True))
    calls = found["calls"][n]
    split = ", ".join(str(v) for v in found["split"].get(n, {}).values())
    return Row(
        f"store (b): {n} worker(s) on one run",
        f"generating {Spread.of(spans[n]).fmt(unit='s')}; model calls {', '.join(map(str, calls))} "
        f"(samples per worker: {split})",
        f"1 worker: generating {Spread.of(spans[1]).fmt(unit='s')}; {SAMPLES} samples",
        f"speedup {speedup.fmt()}x",
        f"model calls == {SAMPLES} exactly; speedup >= {0.9 * n:g}x",
        all(c == SAMPLES for c in calls) and speedup.median >= 0.9 * n,
        script_command("bench_store.py"),
        [
            "generating: from the first worker starting its generate stage to the last one ending it; "
            f"process to process (start-up, scoring and report included) the speedup is {wall.fmt()}x, "
            f"{Spread.of(times[n]).fmt(unit='s')}: the {n} processes start on one machine's cores at once"
        ],
    )


def _lookup_rows(found: dict[str, list[float]]) -> list[Row]:
    rows = []
    for what, label, scale, unit in (
        ("hit", "one hit (get)", 1e3, "ms"),
        ("many", f"{LOOKUPS:,}-key get_many", 1e3, "ms"),
    ):
        store, local = Spread.of(found[f"store {what}"]), Spread.of(found[f"local {what}"])
        ratio = Spread.of(a / b for a, b in zip(store.values, local.values, strict=True))
        rows.append(
            Row(
                f"store (c): {label}, PostgreSQL store vs local cache",
                store.fmt(scale, unit),
                f"local cache: {local.fmt(scale, unit)}",
                f"{ratio.fmt()}x",
                "reported (no target)",
                None,
                script_command("bench_store.py"),
            )
        )
    return rows


if __name__ == "__main__":
    print_rows(run(sys.argv[1:]))
