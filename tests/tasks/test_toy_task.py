"""A fourth task is a plug-in: one module, one corpus, one `register` call (CONTRIBUTING.md, "Adding a task").

The toy task (does the reader's interest appear in the item? answer in a sentence or refuse)
is written into a temporary directory, imported from there and registered; then generate
(stub backend, through the toy's own stub answerer), score, report, rescore, compare and
corpus-check run on it through the real entry points, in process, and no file of the
project changes. The same task as an installed package, found through the `attest.tasks`
entry points: tests/tasks/test_task_plugin.py.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals import compare, corpus_check, rescore, tasks
from evals.cli import runner

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"

TOY_MODULE = '''
"""The toy task: refuse when the reader's interest is not in the item, else say it in a sentence."""

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from attest.vocab import REFUSAL
from evals.engine.scoring import parse_or_error
from evals.engine.task import CheckContext, CorpusChecks, DspyAdapter, Strategy, Task


class ToyCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    split: Literal["train", "dev"]
    family: Literal["hit", "miss"]
    note: str
    interests: str
    title: str
    summary: str
    refuse: bool


class Sentence(BaseModel):
    text: str


def render(case: ToyCase) -> list[dict[str, str]]:
    user = f"Interests: {case.interests}\\nTitle: {case.title}\\nSummary: {case.summary}"
    return [{"role": "system", "content": f"Say in a sentence why it matters, or answer {REFUSAL}"},
            {"role": "user", "content": user}]


def score_one(case: ToyCase, out: str) -> dict[str, Any]:
    parsed, why = parse_or_error(out, Sentence)
    if parsed is None:
        return {"id": case.id, "score": 0.0, "errors": [why]}
    refused = parsed.text.strip() == REFUSAL
    right = refused == case.refuse
    return {"id": case.id, "score": float(right), "errors": [] if right else ["wrong refusal"], "refused": refused}


def stub_answer(messages, schema):
    fields = dict(re.findall(r"^(Interests|Title): (.*)$", messages[-1]["content"], re.M))
    interests, title = fields["Interests"], fields["Title"]
    topic = interests.split()[0]
    return {"text": f"It is about {topic}."} if topic in title.lower() else {"text": REFUSAL}


def strategies(cases: Sequence[ToyCase]) -> list[Strategy[ToyCase]]:
    return [Strategy.constant(json.dumps({"text": REFUSAL}), "always refuse (toy)")]


def rules(path: Path, cases: Sequence[ToyCase], context: CheckContext) -> Iterable[str]:
    for case in cases:
        if case.refuse != (case.family == "miss"):
            yield f"{path}: case {case.id}: field 'refuse': a {case.family} case must refuse exactly when it misses"


TASK = Task(
    "toy",
    ToyCase,
    Sentence,
    Path(__file__).with_name("toy_cases.json"),
    render,
    score_one,
    strategies=strategies,
    interval="wilson",
    stub_answer=stub_answer,
    dspy=DspyAdapter(
        (("interests", "title", "summary"), ("refuse",)),
        lambda case: {"interests": case.interests, "refuse": case.refuse, "case": case},
    ),
    checks=CorpusChecks(("refuse",), lambda cases: [str(sum(c.refuse for c in cases))], rules),
)
'''


def _case(i: int, split: str, hit: bool) -> dict[str, Any]:
    topic = ["catalysis", "graphene", "proteins", "batteries", "lasers", "vaccines"][i % 6]
    other = "astronomy telescopes" if hit else "medieval poetry"
    return {
        "id": f"toy-{i:02d}",
        "split": split,
        "family": "hit" if hit else "miss",
        "note": "a toy case",
        "interests": f"{topic} research",
        "title": f"New {topic} results in {other}" if hit else f"Notes on {other} {i}",
        "summary": f"A study of {topic} methods." if hit else f"An essay on {other} number {i}.",
        "refuse": not hit,
    }


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The toy task module, written to tmp_path, imported from there and registered with one call."""
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "toy_eval.py").write_text(TOY_MODULE, encoding="utf-8")
    cases = [_case(i, "train" if i < 6 else "dev", hit=i % 2 == 0) for i in range(16)]
    (package / "toy_cases.json").write_text(json.dumps(cases, indent=1), encoding="utf-8")
    monkeypatch.syspath_prepend(str(package))
    module = importlib.import_module("toy_eval")
    tasks.register(module.TASK)  # the one line a plug-in adds
    yield module
    tasks.unregister("toy")
    sys.modules.pop("toy_eval", None)


def _project_state() -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in EVALS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_a_toy_task_runs_through_every_command_line(
    toy: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _project_state()
    cache = str(tmp_path / "cache")
    task = tasks.get("toy")
    assert "toy" in tasks.names() and task is toy.TASK

    # generate (stub backend), score, report: twice, so compare has two runs
    for _ in range(2):
        assert runner.main(task, ["--offline", "--cache-dir", cache, "--split", "all"]) == 0
    out = capsys.readouterr().out
    assert "toy eval, all split, stub" in out
    assert "always refuse (toy)" in out  # the task's own trivial strategy, beside the stub
    report = json.loads(next((Path(cache) / "runs").glob("*-toy-*/report.json")).read_text(encoding="utf-8"))
    assert report["n"] == 16 and report["uncertainty"]["score"]["method"] == "Wilson"

    # rescore finds the toy's latest run through the registry
    assert rescore.main(["--cache-dir", cache, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runs"]
    assert [r["task"] for r in rows] == ["toy"] and rows[0]["new"] == report["overall"]

    # compare pairs the toy's two runs
    code = compare.main(["--cache-dir", cache, "--json", "toy@previous", "toy@latest"])
    assert code in (0, 3, 4), capsys.readouterr()
    found = json.loads(capsys.readouterr().out)
    assert found["task"] == "toy" and found["candidate"]["n"] == 16

    # corpus-check runs the toy's rules on its corpus, named by the option the registry gave it
    bad = tmp_path / "bad_toy.json"
    broken = json.loads(task.corpus.read_text(encoding="utf-8"))
    broken[0]["refuse"] = not broken[0]["refuse"]
    bad.write_text(json.dumps(broken), encoding="utf-8")
    assert corpus_check.main(["--skip-targets", "--toy", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"toy  {bad}" in out
    assert f"{bad}: case toy-00: field 'refuse': a hit case must refuse exactly when it misses" in out

    assert _project_state() == before  # nothing outside tmp_path was touched


def test_an_unknown_task_names_the_known_ones(toy: Any) -> None:
    with pytest.raises(tasks.UnknownTaskError, match=r"unknown task 'nope': the known tasks are .*toy"):
        tasks.get("nope")
