"""A run's life as another process sees it: the report is on disk before the run says `complete`; a
run whose writer is alive lists as `generating k/n`; one whose writer was SIGKILLed lists as
`interrupted` (never `generating` forever) and is offered by `runs prune --incomplete`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from attest.backends.stub import StubBackend
from attest.backends.types import ChatResponse, Message
from evals import reaction_eval
from evals.engine.chat import CachedChat, MemoryCache, unsampled
from evals.engine.execute import IN_PROCESS, RunSpec, execute
from evals.store import refs
from evals.store.models import Manifest
from evals.store.records import DirStore
from tests.cli.test_runs import cli

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]


def _stub(messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
    return StubBackend(answer=reaction_eval.TASK.stub_answer).chat_json(messages, schema)


class _OrderedStore(DirStore):
    """A DirStore that notes each save: (name, the manifest's status when it is the manifest)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.saves: list[tuple[str, str]] = []

    def save(self, run_id: str, name: str, record: BaseModel) -> None:
        self.saves.append((name, record.status if isinstance(record, Manifest) else ""))
        super().save(run_id, name, record)


def _spec(n: int) -> RunSpec:
    cases = reaction_eval.load_cases(split="dev")[:n]
    return RunSpec(reaction_eval.TASK, cases, cases, reaction_eval.TASK.corpus, "dev")


def test_the_report_is_written_before_the_run_is_marked_complete(tmp_path: Path) -> None:
    store = _OrderedStore(tmp_path / "runs")
    execute(_spec(3), CachedChat(unsampled(_stub), MemoryCache(), IN_PROCESS), store, record_git=False)
    names = [name for name, _ in store.saves]
    complete = store.saves.index(("manifest", "complete"))
    assert "report" in names[:complete], store.saves


def test_a_live_run_lists_as_k_of_n(tmp_path: Path) -> None:
    store = DirStore(tmp_path / "runs")
    seen: list[str] = []

    def answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        if len(seen) < 6:
            (row,) = refs.list_runs(store)  # listed from inside the writer: its lock is held
            assert row.summary is not None
            seen.append(row.summary.status)
            time.sleep(0.25)  # past the progress record's one-second throttle within the six
        return _stub(messages, schema)

    execute(_spec(6), CachedChat(unsampled(answer), MemoryCache(), IN_PROCESS), store, record_git=False)
    assert all(re.fullmatch(r"generating \d/6", s) for s in seen), seen
    assert seen[0] == "generating 0/6" and seen[-1] != "generating 0/6", seen  # it moves
    (row,) = refs.list_runs(store)
    assert row.summary is not None and row.summary.status == "complete"


_WRITER = """
import sys, time
from pathlib import Path
from evals import reaction_eval
from evals.engine.execute import IN_PROCESS, RunSpec, execute
from evals.engine.chat import CachedChat, MemoryCache, unsampled
from evals.store.records import DirStore
from attest.backends.stub import StubBackend

def answer(messages, schema):
    print("answering", flush=True)
    time.sleep(60)
    return StubBackend(answer=reaction_eval.TASK.stub_answer).chat_json(messages, schema)

cases = reaction_eval.load_cases(split="dev")[:3]
spec = RunSpec(reaction_eval.TASK, cases, cases, reaction_eval.TASK.corpus, "dev")
execute(spec, CachedChat(unsampled(answer), MemoryCache(), IN_PROCESS), DirStore(Path(sys.argv[1])), record_git=False)
"""


def test_a_run_whose_writer_was_killed_lists_as_interrupted_and_is_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(cache / "runs")], stdout=subprocess.PIPE, text=True, cwd=REPO, env=env
    ) as writer:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "answering\n"
        _, out, _ = cli(cache, capsys, "list", "--json")
        (live,) = json.loads(out)
        assert live["status"] == "generating 0/3"
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    _, out, _ = cli(cache, capsys, "list")
    (row,) = [line for line in out.splitlines() if line.startswith(live["run_id"])]
    assert " interrupted " in row
    _, out, _ = cli(cache, capsys, "prune", "--incomplete")
    assert f"would remove {live['run_id']}" in out
