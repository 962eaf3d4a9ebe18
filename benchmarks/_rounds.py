"""The model rounds that figures 4, 5 and 6 share, run once per process.

Every round sends the same reaction cases to the same in-process llama.cpp server
(`attest.backends.llamacpp.shared_server()`, SmolLM2-135M, one slot, one thread) three times,
in an order that rotates from round to round:

- ours:    the whole reaction eval in-process, `evals.cli.runner.main` with
           `--backend local` and a fresh cache dir (its generate stage is figure 4's
           pipeline side; the whole run is figure 5's and 6's cold eval);
- bare:    the identical request bodies as sequential `httpx` POSTs (figure 4's reference);
- inspect: the same cases as an Inspect AI task in-process, `inspect_ai.eval` with a
           fresh INSPECT_CACHE_DIR (figure 6's reference).

Before each of the three, one throwaway request (the reaction system prompt and a
one-word user message, one token) leaves the server's prompt cache in the same
state, so no contender inherits a longer cached prefix than another. Then, from
the caches and logs the round just made: both warm evals in-process, both warm
evals as command-line processes, and both re-scoring commands.

The three cold runs of a round cost 3 x cases model calls, so the case count is
chosen from one calibration request to fit the time budget (ATTEST_BENCH_CASES
overrides it).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from attest.backends.llamacpp import LocalServer, shared_server
from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.simulate import REACTION_SYSTEM_PROMPT
from benchmarks._common import REPEATS, ROOT, rotated, timed, workdir
from evals import reaction_eval
from evals.cli import runner
from evals.corpus.cases import ReactionCase
from evals.store.local.cache import ResponseCache

__all__ = ["Round", "Rounds", "measure"]

ROUNDS_BUDGET_S = float(os.environ.get("ATTEST_BENCH_ROUNDS_BUDGET_S", "540"))
MIN_CASES, MAX_CASES = 3, 10
CALIBRATION_CASES = 2
TASK_FILE = Path(__file__).with_name("inspect_reaction.py")


@dataclass
class Round:
    """One round's wall times (seconds) and the model time inside the cold runs."""

    ours_cold: float = 0.0
    ours_generate: float = 0.0
    ours_model: float = 0.0
    bare: float = 0.0
    inspect_cold: float = 0.0
    inspect_model: float = 0.0
    ours_warm: float = 0.0
    inspect_warm: float = 0.0
    ours_cli_warm: float = 0.0
    inspect_cli_warm: float = 0.0
    ours_rescore_cli: float = 0.0
    inspect_score_cli: float = 0.0
    same_answers: int = 0
    bare_same: int = 0
    run_id: str = ""


@dataclass
class Rounds:
    """Every round, and what they ran on."""

    cases: list[str]
    model: str
    calibration: str
    setup_s: float
    rounds: list[Round] = field(default_factory=list)
    elapsed_s: float = 0.0

    def values(self, name: str) -> list[float]:
        return [float(getattr(r, name)) for r in self.rounds]


_measured: Rounds | None = None


def measure() -> Rounds:
    """Run the rounds once per process; every later call returns the same measurements."""
    global _measured
    if _measured is None:
        _measured = _Bench().run()
    return _measured


def _inspect_env(server: LocalServer) -> dict[str, str]:
    return {"LLAMACPP_BASE_URL": f"{server.base_url}/v1", "LLAMACPP_API_KEY": "none-needed"}


class _Bench:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.server = shared_server()
        self.model = f"openai-api/llamacpp/{self.server.model_name}"
        self.root = workdir("model")
        self.client = httpx.Client(timeout=600)
        os.environ.update(_inspect_env(self.server))
        dev = reaction_eval.load_cases(split="dev")
        self.pool, self.calibration_cases = dev[:-CALIBRATION_CASES], dev[-CALIBRATION_CASES:]

    # --- setup ---------------------------------------------------------------------------

    def run(self) -> Rounds:
        import inspect_ai  # noqa: F401 (imported here, outside every timing)

        first, next_, other = self._calibrate()
        count = _case_count(first, next_, other)
        cases = self.pool[:count]
        self._use(cases)
        calibration = (
            f"{count} cases, chosen by a {CALIBRATION_CASES}-case calibration (first request {first:.1f} s, "
            f"next {next_:.1f} s, rest of a round {other:.0f} s) to fit {REPEATS} rounds in {ROUNDS_BUDGET_S:.0f} s"
        )
        if os.environ.get("ATTEST_BENCH_CASES"):
            calibration = f"{count} cases: set by ATTEST_BENCH_CASES"
        result = Rounds([c.id for c in cases], self.server.model_name, calibration, time.perf_counter() - self.start)
        for i in range(REPEATS):
            result.rounds.append(self._round(i))
        result.elapsed_s = time.perf_counter() - self.start
        self.client.close()
        return result

    def _use(self, cases: list[ReactionCase]) -> None:
        self.cases = cases
        self.ids = ",".join(c.id for c in cases)
        self.corpus = self.root / f"subset-{len(cases)}.json"
        self.corpus.write_text(json.dumps([c.model_dump() for c in cases], indent=1), encoding="utf-8")
        self.bodies = _request_bodies(cases)

    def _calibrate(self) -> tuple[float, float, float]:
        """Two cases through both tools, in-process and as commands.

        Returns the model seconds of the first request after the throwaway one, of
        the next request, and the seconds a round spends outside its cold runs.

        This warms both tools' lazy imports, and the command-line runs here write
        bytecode (this machine sets PYTHONDONTWRITEBYTECODE and uv installs without
        it, while an ordinary install has it), so the timed processes of both tools
        start as they would on a user's machine.
        """
        self._use(self.calibration_cases)
        r, d = Round(), self.root / "calibration"
        self._normalise()
        report = self._ours(d / "ours-cache")
        r.run_id = str(report["run_id"])
        latencies = [float(x["latency_s"]) for x in report["results"]]
        self._normalise()
        self._inspect_cold(r, d / "inspect-cache", d / "inspect-logs")
        for attempt in range(2):  # the first pass writes the bytecode; the second is timed like a round's
            with _bytecode_written() if attempt == 0 else nullcontext():
                self._ours_cli(r, d / "ours-cache")
                self._inspect_cli(r, d / "inspect-cache", d / f"inspect-cli-logs-{attempt}")
                self._ours_rescore(r, d / "ours-cache")
                self._inspect_score(r, _only_log(d / "inspect-logs"))
        other = r.ours_cli_warm + r.inspect_cli_warm + r.ours_rescore_cli + r.inspect_score_cli + 1.0
        return latencies[0], latencies[1], other

    def _normalise(self) -> None:
        """One throwaway request: the server's prompt cache then holds the system prompt and nothing more."""
        body = {
            "messages": [{"role": "system", "content": REACTION_SYSTEM_PROMPT}, {"role": "user", "content": "Reader:"}],
            "max_tokens": 1,
            "temperature": 0.0,
        }
        self.client.post(f"{self.server.base_url}/v1/chat/completions", json=body).raise_for_status()

    # --- one round -------------------------------------------------------------------------

    def _round(self, i: int) -> Round:
        r = Round()
        d = self.root / f"round-{i}"
        ours_dir, inspect_cache, logs = d / "ours-cache", d / "inspect-cache", d / "inspect-logs"
        cold: dict[str, Callable[[], None]] = {
            "ours": lambda: self._ours_cold(r, ours_dir),
            "bare": lambda: self._bare(r),
            "inspect": lambda: self._inspect_cold(r, inspect_cache, logs),
        }
        for name in rotated(list(cold), i):
            self._normalise()
            cold[name]()
        log = _only_log(logs)
        ours = _our_answers(ours_dir)
        r.same_answers = _same_answers(ours, log)
        r.bare_same = sum(ours.get(c.id) == text for c, text in zip(self.cases, self.bare_texts, strict=True))
        after: dict[str, Callable[[], None]] = {
            "ours_warm": lambda: self._ours_warm(r, ours_dir),
            "inspect_warm": lambda: self._inspect_warm(r, inspect_cache, d / "inspect-warm-logs"),
            "ours_cli": lambda: self._ours_cli(r, ours_dir),
            "inspect_cli": lambda: self._inspect_cli(r, inspect_cache, d / "inspect-cli-logs"),
            "ours_rescore": lambda: self._ours_rescore(r, ours_dir),
            "inspect_score": lambda: self._inspect_score(r, log),
        }
        for name in rotated(list(after), i):
            after[name]()
        print(f"bench: model round {i + 1}/{REPEATS} done ({len(self.cases)} cases)", file=sys.stderr, flush=True)
        return r

    def _ours_cold(self, r: Round, cache_dir: Path) -> None:
        report, r.ours_cold = timed(lambda: self._ours(cache_dir))
        assert report["generate"]["misses"] == len(self.cases), "the cold run was not cold"
        r.ours_generate = float(report["generate"]["seconds"])
        r.ours_model = sum(float(x["latency_s"]) for x in report["results"])
        r.run_id = str(report["run_id"])

    def _ours_warm(self, r: Round, cache_dir: Path) -> None:
        report, r.ours_warm = timed(lambda: self._ours(cache_dir))
        assert report["generate"]["hits"] == len(self.cases), "the warm run called the model"

    def _ours(self, cache_dir: Path) -> dict[str, Any]:
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            code = runner.main(reaction_eval.TASK, self._ours_args(cache_dir))
        assert code == 0, f"the reaction eval failed with exit code {code}"
        report: dict[str, Any] = json.loads(out.getvalue())
        return report

    def _ours_args(self, cache_dir: Path) -> list[str]:
        corpus = ["--corpus", str(self.corpus), "--split", "all"]
        return ["--backend", "local", *corpus, "--cache-dir", str(cache_dir), "--concurrency", "1", "--json"]

    def _bare(self, r: Round) -> None:
        headers = {"content-type": "application/json"}

        def post_all() -> list[Any]:
            with httpx.Client(timeout=600) as client:
                return [
                    client.post(self.server.base_url + path, content=body, headers=headers).raise_for_status().json()
                    for path, body in self.bodies
                ]

        answers, r.bare = timed(post_all)
        self.bare_texts = [a["choices"][0]["message"]["content"] for a in answers]

    def _inspect_cold(self, r: Round, cache: Path, logs: Path) -> None:
        log, r.inspect_cold = timed(lambda: self._inspect(cache, logs))
        r.inspect_model = sum(
            float(e.working_time or 0.0) for s in log.samples or [] for e in s.events if e.event == "model"
        )

    def _inspect_warm(self, r: Round, cache: Path, logs: Path) -> None:
        log, r.inspect_warm = timed(lambda: self._inspect(cache, logs))
        _assert_all_cached(log)

    def _inspect(self, cache: Path, logs: Path) -> Any:
        import inspect_ai

        os.environ["INSPECT_CACHE_DIR"] = str(cache)
        [log] = inspect_ai.eval(
            os.path.relpath(TASK_FILE),
            task_args={"ids": self.ids},
            model=self.model,
            max_connections=1,
            display="none",
            log_dir=str(logs),
            log_level="warning",
        )
        assert log.status == "success", f"the Inspect eval failed: {log.error}"
        return log

    # --- command-line processes --------------------------------------------------------------

    def _ours_cli(self, r: Round, cache_dir: Path) -> None:
        cmd = [sys.executable, "evals/run_reaction_eval.py", *self._ours_args(cache_dir)]
        out, r.ours_cli_warm = timed(lambda: _check(cmd))
        assert json.loads(out)["generate"]["hits"] == len(self.cases), "the warm CLI run called the model"

    def _inspect_cli(self, r: Round, cache: Path, logs: Path) -> None:
        cmd = [
            *_inspect_cmd(),
            "eval",
            os.path.relpath(TASK_FILE),
            "--model",
            self.model,
            "-T",
            f"ids={self.ids}",
            "--max-connections",
            "1",
            "--display",
            "none",
            "--log-dir",
            str(logs),
            "--log-level",
            "warning",
        ]
        _, r.inspect_cli_warm = timed(lambda: _check(cmd, {"INSPECT_CACHE_DIR": str(cache)}))
        from inspect_ai.log import read_eval_log

        _assert_all_cached(read_eval_log(str(_only_log(logs))))

    def _ours_rescore(self, r: Round, cache_dir: Path) -> None:
        cmd = [sys.executable, "-m", "evals.rescore", "--run", r.run_id, "--cache-dir", str(cache_dir)]
        _, r.ours_rescore_cli = timed(lambda: _check(cmd))

    def _inspect_score(self, r: Round, log: Path) -> None:
        cmd = [*_inspect_cmd(), "score", "--action", "overwrite", "--overwrite", "--model", "none"]
        _, r.inspect_score_cli = timed(lambda: _check([*cmd, "--display", "none", str(log)]))


# --- helpers -------------------------------------------------------------------------------


@contextmanager
def _bytecode_written() -> Iterator[None]:
    saved = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["PYTHONDONTWRITEBYTECODE"] = saved


def _case_count(first: float, next_: float, other: float) -> int:
    """The most cases (MIN_CASES..MAX_CASES) for which REPEATS rounds fit in ROUNDS_BUDGET_S.

    A round is three cold runs, each a first request (a longer new prefix) and
    `cases - 1` next ones, plus `other` seconds of warm runs and commands.
    """
    if os.environ.get("ATTEST_BENCH_CASES"):
        return max(1, int(os.environ["ATTEST_BENCH_CASES"]))
    per_run = (ROUNDS_BUDGET_S / REPEATS - other) / 3
    fit = 1 + int((per_run - first) / max(next_, 0.1))
    return max(MIN_CASES, min(MAX_CASES, fit))


def _request_bodies(cases: list[ReactionCase]) -> list[tuple[str, bytes]]:
    """The path and exact bytes attest's `local` backend POSTs for each case, captured off the wire."""
    bodies: list[tuple[str, bytes]] = []

    def record(request: httpx.Request) -> httpx.Response:
        bodies.append((request.url.path, request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": "{}"}}]})

    client = httpx.Client(transport=httpx.MockTransport(record))
    backend = make_backend(Settings.resolve(backend="local"), client)
    for case in cases:
        backend.chat_json(reaction_eval.render(case), reaction_eval.TASK.schema)
    backend.close()
    return bodies


def _inspect_cmd() -> list[str]:
    return [sys.executable, "-m", "inspect_ai"]


def _check(cmd: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def _only_log(logs: Path) -> Path:
    [log] = sorted(logs.glob("*.eval"))
    return log


def _assert_all_cached(log: Any) -> None:
    events = [e for s in log.samples or [] for e in s.events if e.event == "model"]
    assert events and all(e.cache == "read" for e in events), "the warm Inspect run called the model"


def _our_answers(ours_cache: Path) -> dict[str, str | None]:
    """Each case's answer text in a one-run cache dir."""
    [run] = sorted((ours_cache / "runs").glob("*/manifest.json"))
    keys = {s["case"]: s["key"] for s in json.loads(run.read_text(encoding="utf-8"))["samples"]}
    cache = ResponseCache(ours_cache)
    try:
        entries = {cid: cache.get(k) for cid, k in keys.items()}
    finally:
        cache.close()
    return {cid: e.text if e is not None else None for cid, e in entries.items()}


def _same_answers(ours: dict[str, str | None], log_path: Path) -> int:
    """How many cases got the same answer text from both tools (same server, same requests)."""
    from inspect_ai.log import read_eval_log

    theirs = {str(s.id): s.output.completion for s in read_eval_log(str(log_path)).samples or []}
    return sum(ours.get(cid) == text for cid, text in theirs.items())
