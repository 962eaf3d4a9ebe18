"""The tagging prompt optimiser: its gate is the paired verdict, end to end.

Its whole path runs on fake backends whose answers depend on whether the prompt holds
demos, so a candidate is truly better, no better or worse, and the verdict must say so.

That it is the one module under evals/ that imports dspy is the design note's rule, pinned
(with a mutation test per form of import) in tests/project/test_seed_contract.py. These tests need
the `optimize` extra and skip, saying so, where it is not installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import importlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from attest.backends.stub import StubBackend, tags_answer
from attest.backends.types import Backend, Message
from attest.cli import main as attest_main
from attest.features import TAGS, TagDemo, TagPrompt, item_block, load_tag_prompt, tag_messages
from evals import compare as compare_cli
from evals import tagging_eval
from evals.cli import tagging_search
from evals.corpus.cases import TaggingCase
from evals.engine.chat import CachedChat, CacheOnlyChat, unsampled
from evals.store import refs
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from evals.store.models import Decision
from evals.store.records import DirStore
from tests.fakes import FakeBackend, RecordingChat

REPO = Path(__file__).resolve().parents[2]
TITLE = "Operando Raman spectroscopy of copper electrodes during CO2 reduction"
SUMMARY = "Surface-enhanced Raman spectra track adsorbed CO on Cu(100) from -0.4 to -1.1 V."
BUDGET = 4


# --- the optimiser, end to end on fake backends whose answers we control --------------------

CORPUS = tagging_eval.load_cases()
DEV = tagging_eval.load_cases(split="dev")
BY_ITEM = {item_block(c.title, c.summary): c for c in CORPUS}


def _bucket(case_id: str) -> int:
    """A fixed pseudo-random 0-9 per case, so which cases each prompt gets right is known and stable."""
    return int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % 10


def _answer(case: TaggingCase, right: bool) -> str:
    wrong = next(t for t in TAGS if t not in case.tags)
    return json.dumps({"tags": list(case.tags) if right else [wrong]})


def tagger(right_with_demos: Callable[[str], bool], right_without: Callable[[str], bool]) -> FakeBackend:
    """A model that tags a case right or wrong by case id, depending on whether the prompt holds demos."""

    def answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> str:
        case = BY_ITEM[messages[-1]["content"]]
        with_demos = len(messages) > 2
        return _answer(case, (right_with_demos if with_demos else right_without)(case.id))

    return FakeBackend(RecordingChat(answer))


def better() -> FakeBackend:
    """Demos help: right on 8 cases in 10 with them, on 2 in 10 (a subset) without. Never worse."""
    return tagger(lambda c: _bucket(c) < 8, lambda c: _bucket(c) < 2)


def worse() -> FakeBackend:
    """Demos hurt: right on 2 in 10 with them, 8 in 10 without."""
    return tagger(lambda c: _bucket(c) < 2, lambda c: _bucket(c) < 8)


def same() -> FakeBackend:
    """Demos change nothing: right on the same half of the cases either way."""
    return tagger(lambda c: _bucket(c) < 5, lambda c: _bucket(c) < 5)


@pytest.fixture(scope="module")
def optimiser() -> ModuleType:
    pytest.importorskip("dspy", reason="dspy is not installed: the optimiser needs the `optimize` extra")
    return importlib.import_module("evals.optimize_tagging")


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    cache: Path

    @property
    def calls(self) -> tuple[int, int]:
        """(searching, scoring dev) model calls, as the run printed them."""
        found = re.search(r"model calls (\d+) \((\d+) searching, (\d+) scoring dev\)", self.out)
        assert found, self.out
        assert int(found[1]) == int(found[2]) + int(found[3])
        return int(found[2]), int(found[3])

    @property
    def runs(self) -> tuple[str, str]:
        found = re.search(r"runs        baseline (\S+), candidate (\S+)\n", self.out)
        assert found, self.out
        return found[1], found[2]

    @property
    def verdict(self) -> str:
        found = re.search(r"verdict     (SHIP|INCONCLUSIVE|REGRESS) against a margin of ", self.out)
        assert found, self.out
        return found[1].lower()

    def decision(self) -> Decision:
        return DirStore(self.cache / "runs").load(self.runs[1], "decision", Decision)

    def overall(self) -> tuple[float, float]:
        store = DirStore(self.cache / "runs")
        base, cand = (store.report(run_id) for run_id in self.runs)
        assert base is not None and cand is not None
        return base.overall, cand.overall


def _optimise(optimiser: ModuleType, cache: Path, model: Callable[[], Backend], *args: str) -> Run:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = optimiser.main(
            ["--budget", str(BUDGET), "--cache-dir", str(cache), *args], backend_factory=lambda settings: model()
        )
    return Run(code, out.getvalue(), cache)


@dataclass(frozen=True)
class Accepted:
    cache: Path
    artifact: Path
    first: Run
    second: Run
    first_bytes: bytes


@pytest.fixture(scope="module")
def accepted(optimiser: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Accepted:
    """Two identical runs on a fresh cache of a model that demos truly help."""
    root = tmp_path_factory.mktemp("optimise")
    artifact = root / "prompts" / "tagging.json"
    first = _optimise(optimiser, root / "cache", better, "--output", str(artifact))
    first_bytes = artifact.read_bytes() if artifact.exists() else b""
    second = _optimise(optimiser, root / "cache", better, "--output", str(artifact))
    return Accepted(root / "cache", artifact, first, second, first_bytes)


def test_a_candidate_better_on_most_cases_ships_and_is_written(accepted: Accepted) -> None:
    run = accepted.first
    assert run.code == 0
    assert run.verdict == "ship"
    base, cand = run.overall()
    assert cand - base > 0.4
    assert f"artifact    written to {accepted.artifact}" in run.out
    prompt = load_tag_prompt(accepted.artifact)
    assert 1 <= len(prompt.demos) <= 3
    train = {c.title: c for c in tagging_eval.load_cases(split="train")}
    assert {d.title for d in prompt.demos} <= set(train)
    assert not {d.title for d in prompt.demos} & {c.title for c in DEV}
    assert all(set(d.tags) == set(train[d.title].tags) for d in prompt.demos), "a demo teaches a wrong tag"
    searching, scoring = run.calls
    assert 1 <= searching <= BUDGET  # the bootstrap stops once it holds --max-demos right answers
    assert scoring == 2 * len(DEV)


def test_the_decision_is_recorded_beside_the_candidate_run_and_compare_agrees(accepted: Accepted) -> None:
    run = accepted.first
    baseline, candidate = run.runs
    decision = run.decision()
    assert (decision.baseline_run, decision.candidate_run) == (baseline, candidate)
    assert (decision.verdict, decision.margin, decision.n) == ("ship", 0.0, len(DEV))
    assert 0.0 < decision.interval[0] < decision.mean_difference < decision.interval[1]
    assert decision.p_value < 1e-6
    command = f"python -m evals.compare --cache-dir {accepted.cache} {baseline} {candidate}"
    assert f"  compare     {command}\n" in run.out
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = compare_cli.main([*command.split()[3:], "--json"])
    assert code == 0
    shown = json.loads(out.getvalue())
    assert shown["verdict"] == "ship"
    assert (shown["difference"]["low"], shown["difference"]["high"]) == pytest.approx(decision.interval)
    assert shown["p_value"] == pytest.approx(decision.p_value)


def test_a_second_identical_run_makes_no_model_calls(accepted: Accepted) -> None:
    assert accepted.second.code == 0
    assert accepted.second.calls == (0, 0)
    assert accepted.second.verdict == "ship"
    assert accepted.second.overall() == accepted.first.overall()
    assert accepted.artifact.read_bytes() == accepted.first_bytes


def test_a_margin_beyond_the_gain_is_inconclusive_and_writes_nothing(
    optimiser: ModuleType, accepted: Accepted, tmp_path: Path
) -> None:
    output = tmp_path / "tagging.json"
    run = _optimise(optimiser, accepted.cache, better, "--margin", "0.9", "--output", str(output))
    assert (run.code, run.verdict, run.calls) == (0, "inconclusive", (0, 0))
    assert run.decision().margin == 0.9
    assert not output.exists()
    assert f"--margin 0.9 {run.runs[0]} {run.runs[1]}" in run.out


@pytest.mark.parametrize(
    ("model", "verdict"),
    [pytest.param(same, "inconclusive", id="no-better"), pytest.param(worse, "regress", id="worse")],
)
def test_a_candidate_that_is_not_better_writes_nothing(
    optimiser: ModuleType, tmp_path: Path, model: Callable[[], Backend], verdict: str
) -> None:
    output = tmp_path / "tagging.json"
    output.write_text('{"instructions": "the prompt in use"}', encoding="utf-8")
    run = _optimise(optimiser, tmp_path / "cache", model, "--output", str(output))
    assert (run.code, run.verdict, run.decision().verdict) == (0, verdict, verdict)
    assert f"not written: the verdict is {verdict}; {output} is unchanged" in run.out
    assert output.read_text(encoding="utf-8") == '{"instructions": "the prompt in use"}'
    base, cand = run.overall()
    assert (cand == base) if verdict == "inconclusive" else (cand < base)


def test_json_output_is_the_record(optimiser: ModuleType, accepted: Accepted, tmp_path: Path) -> None:
    run = _optimise(optimiser, accepted.cache, better, "--json", "--output", str(tmp_path / "t.json"))
    data = json.loads(run.out)
    assert data["decision"]["verdict"] == "ship"
    assert data["runs"] == {
        "baseline": data["decision"]["baseline_run"],
        "candidate": data["decision"]["candidate_run"],
    }
    assert data["written"] == str(tmp_path / "t.json")
    assert json.loads(Path(data["record"]).read_text(encoding="utf-8"))["decision"] == data["decision"]


def test_the_train_split_is_refused(optimiser: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        optimiser.main(
            ["--split", "train", "--cache-dir", str(tmp_path), "--output", str(tmp_path / "tagging.json")],
            backend_factory=lambda s: better(),
        )
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and "the optimiser chose its demos from the train cases" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "tagging.json").exists()


def test_the_candidate_was_scored_on_the_requests_its_artifact_makes(
    accepted: Accepted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-score dev from the cache alone, with the artifact installed the production way."""
    cache = ResponseCache(accepted.cache)
    chat = CacheOnlyChat(cache, Identity.of(better()))
    try:
        baseline = tagging_eval.evaluate(chat, DEV)
        monkeypatch.setenv("ATTEST_TAG_PROMPT", str(accepted.artifact))
        candidate = tagging_eval.evaluate(chat, DEV)
    finally:
        cache.close()
    assert (baseline.overall, candidate.overall) == accepted.first.overall()


def test_attest_tag_renders_the_accepted_artifact(
    accepted: Accepted, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], attest_exe: Path
) -> None:
    written = json.loads(accepted.artifact.read_text(encoding="utf-8"))
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(accepted.artifact))
    messages = tag_messages(TITLE, SUMMARY)
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith(written["instructions"] + "\n\nVocabulary:\n")
    assert len(messages) == 2 + 2 * len(written["demos"])
    assert [json.loads(m["content"])["tags"] for m in messages[2:-1:2]] == [d["tags"] for d in written["demos"]]
    assert attest_main(["tag", "--backend", "stub", TITLE, SUMMARY]) == 0
    assert json.loads(capsys.readouterr().out)["tags"]
    env = {**os.environ, "ATTEST_TAG_PROMPT": str(accepted.artifact)}
    done = subprocess.run(
        [str(attest_exe), "tag", "--backend", "stub", TITLE, SUMMARY],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["tags"]


def test_attest_tag_reads_the_artifact_it_is_given(accepted: Accepted, tmp_path: Path, attest_exe: Path) -> None:
    """The same command fails, naming the variable, once the artifact is spoiled: it really reads the file."""
    spoiled = json.loads(accepted.artifact.read_text(encoding="utf-8"))
    spoiled["demos"][0]["tags"] = ["alchemy"]
    path = tmp_path / "spoiled.json"
    path.write_text(json.dumps(spoiled), encoding="utf-8")
    env = {**os.environ, "ATTEST_TAG_PROMPT": str(path)}
    done = subprocess.run(
        [str(attest_exe), "tag", "--backend", "stub", TITLE, SUMMARY],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"attest: error: ATTEST_TAG_PROMPT={path}: field 'demos.0.tags.0'")


# --- the pieces: the adapter sends tag_messages, the budget holds ----------------------------


def test_the_optimiser_ships_only_on_tagging_evals_gate(
    optimiser: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate is tagging_eval.gate: overruling it (regress for a clearly better candidate) writes nothing."""
    assert optimiser.gate is tagging_eval.gate
    calls: list[Decision] = []

    def overruled(store: Any, base: Any, cand: Any, *, margin: float = 0.0) -> Decision:
        decision = tagging_eval.gate(store, base, cand, margin=margin)
        calls.append(decision)
        return decision.replace(verdict="regress")

    monkeypatch.setattr(optimiser, "gate", overruled)
    artifact = tmp_path / "tagging.json"
    run = _optimise(optimiser, tmp_path / "cache", better, "--output", str(artifact))
    assert run.code == 0 and [d.verdict for d in calls] == ["ship"]
    assert run.verdict == "regress" and not artifact.exists()


def test_the_adapter_sends_the_shipped_prompt_and_nothing_of_dspys(optimiser: ModuleType) -> None:
    import dspy

    demo = TagDemo(
        title="Shampoo at scale", summary="A preconditioned optimizer for transformers.", tags=["optimization"]
    )
    chat = RecordingChat(['{"tags": ["spectroscopy", "electrochemistry", "spectroscopy"]}', "no JSON here"])
    predictor = dspy.Predict(optimiser.tag_signature("Tag it."))
    predictor.demos = [dspy.Example(title=demo.title, summary=demo.summary, tags=demo.tags)]
    with dspy.context(lm=optimiser.AttestLM(unsampled(chat), "fake"), adapter=optimiser.TagPromptAdapter()):
        prediction = predictor(title=TITLE, summary=SUMMARY)
        with pytest.raises(dspy.AdapterParseError, match="output is not valid JSON"):
            predictor(title=TITLE, summary=SUMMARY)
    expected = tag_messages(TITLE, SUMMARY, prompt=TagPrompt(instructions="Tag it.", demos=(demo,)))
    assert chat.history[0].messages == expected
    assert chat.history[0].schema == tagging_eval.TASK.schema
    assert prediction.tags == ["spectroscopy", "electrochemistry"]


def test_the_budget_refuses_model_calls_beyond_it(optimiser: ModuleType, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    budgeted = tagging_search.BudgetedChat(CachedChat.from_backend(StubBackend(answer=tags_answer), cache), 2)
    schema = tagging_eval.TASK.schema
    requests = [tag_messages(f"Item {i}", "A catalysis paper.") for i in range(3)]
    try:
        first = budgeted(requests[0], schema, 0)
        budgeted(requests[1], schema, 0)
        with pytest.raises(tagging_search.BudgetExceeded, match="budget of 2 model calls is spent"):
            budgeted(requests[2], schema, 0)
        assert budgeted(requests[0], schema, 0) == first  # a cached answer costs nothing
    finally:
        cache.close()
    assert (budgeted.calls, budgeted.refused) == (2, 1)


class _FailingServer(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that answers every request with a 500 and counts them."""

    requests = 0

    def do_POST(self) -> None:
        type(self).requests += 1
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"error": {"message": "out of memory"}}'
        self.send_response(500)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_backend_failure_mid_search_ends_the_run_at_once(
    optimiser: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DSPy's bootstrap loop swallows exceptions per example; the first failure must still end the run."""
    _FailingServer.requests = 0
    server = http.server.HTTPServer(("127.0.0.1", 0), _FailingServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        code = optimiser.main(
            ["--backend", "openai", "--model", "m", "--retries", "1", "--cache-dir", str(tmp_path), "--budget", "3"]
        )
    finally:
        server.shutdown()
        server.server_close()
    out, err = capsys.readouterr()
    assert (code, out) == (1, ""), err
    assert _FailingServer.requests == 1, err
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    ours = [line for line in err.splitlines() if line.startswith("optimize-tagging: ")]
    assert len(ours) == 1, err
    assert ours[0].startswith("optimize-tagging: error: the server at http://127.0.0.1:")
    assert "failed (500: out of memory)" in ours[0]


def test_label_names_the_optimisers_two_runs(optimiser: ModuleType, accepted: Accepted, tmp_path: Path) -> None:
    store = DirStore(accepted.cache / "runs")
    assert [store.manifest(r).label for r in accepted.first.runs] == ["optimiser baseline", "optimiser candidate"]
    cache = tmp_path / "cache"
    shutil.copytree(accepted.cache, cache)
    run = _optimise(optimiser, cache, better, "--label", "demos-v2", "--output", str(tmp_path / "t.json"))
    assert run.code == 0
    labelled = DirStore(cache / "runs")
    assert [labelled.manifest(r).label for r in run.runs] == ["demos-v2 baseline", "demos-v2 candidate"]
    found = refs.resolve_ref(labelled, "tagging@latest,label=optimiser candidate")  # not the newer demos-v2 run
    assert labelled.manifest(found).label == "optimiser candidate" and found != run.runs[1]
    assert refs.resolve_ref(labelled, "tagging@latest,label=demos-v2 candidate") == run.runs[1]
