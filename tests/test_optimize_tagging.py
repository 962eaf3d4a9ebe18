"""The tagging prompt optimiser: it alone imports dspy, and its whole path runs on the stub backend.

The import guard needs no dspy. The rest needs the `optimize` extra and skips, saying
so, where it is not installed.
"""

from __future__ import annotations

import ast
import contextlib
import http.server
import importlib
import io
import json
import logging
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from attest.backends.stub import StubBackend
from attest.cli import main as attest_main
from attest.features import TagDemo, TagPrompt, load_tag_prompt, tag_messages
from evals import tagging_eval
from evals.cache import Identity, ResponseCache
from evals.pipeline import CachedChat, CacheOnlyChat, unsampled
from tests.fakes import RecordingChat

REPO = Path(__file__).resolve().parents[1]
OPTIMISER = REPO / "evals" / "optimize_tagging.py"
TITLE = "Operando Raman spectroscopy of copper electrodes during CO2 reduction"
SUMMARY = "Surface-enhanced Raman spectra track adsorbed CO on Cu(100) from -0.4 to -1.1 V."
BUDGET = 4


# --- only evals/optimize_tagging.py imports dspy ------------------------------------------


def _dspy_import_lines(path: Path) -> list[int]:
    """Lines of `path` that import dspy: import statements and importlib/__import__ calls with a literal name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt | ast.expr) and any(n.split(".")[0] == "dspy" for n in _imported_names(node))
    )


def _imported_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    if isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
        arg = node.args[0]
        return [arg.value] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else []
    return []


def _is_dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id in ("__import__", "import_module")) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )


def dspy_importers(paths: list[Path]) -> list[Path]:
    return [p for p in paths if _dspy_import_lines(p)]


def test_only_the_optimiser_imports_dspy() -> None:
    src = sorted((REPO / "src").rglob("*.py"))
    evals = sorted((REPO / "evals").rglob("*.py"))
    assert len(src) >= 10
    assert OPTIMISER in evals
    assert dspy_importers(src) == []
    assert dspy_importers(evals) == [OPTIMISER]


def test_the_dspy_guard_catches_every_form_of_import(tmp_path: Path) -> None:
    sources = {
        "plain.py": "import json\nimport dspy\n",
        "submodule.py": "import dspy.teleprompt as tp\n",
        "from_import.py": "from dspy import Example\n",
        "late.py": "def _late():\n    import importlib\n    return importlib.import_module('dspy')\n",
        "dunder.py": "adapters = __import__('dspy.adapters')\n",
        "clean.py": (
            '"""Talks about dspy."""\nimport dspylike\nfrom evals.tagging_eval import dspy_fields\nNAME = "dspy"\n'
        ),
    }
    paths = []
    for name, text in sources.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        paths.append(tmp_path / name)
    assert _dspy_import_lines(tmp_path / "plain.py") == [2]
    assert _dspy_import_lines(tmp_path / "late.py") == [3]
    assert dspy_importers(paths) == [p for p in paths if p.name != "clean.py"]


# --- the optimiser, end to end on the stub backend ------------------------------------------


@pytest.fixture(scope="module")
def optimiser() -> ModuleType:
    pytest.importorskip("dspy", reason="dspy is not installed: the optimiser needs the `optimize` extra")
    return importlib.import_module("evals.optimize_tagging")


@dataclass(frozen=True)
class Run:
    code: int
    out: str

    @property
    def calls(self) -> tuple[int, int]:
        """(searching, scoring dev) model calls, as the run printed them."""
        found = re.search(r"model calls (\d+) \((\d+) searching, (\d+) scoring dev\)", self.out)
        assert found, self.out
        assert int(found[1]) == int(found[2]) + int(found[3])
        return int(found[2]), int(found[3])

    def scores(self) -> tuple[str, str]:
        found = re.search(r"baseline (\d\.\d{3})  candidate (\d\.\d{3})", self.out)
        assert found, self.out
        return found[1], found[2]


def _optimise(optimiser: ModuleType, cache: Path, *args: str) -> Run:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = optimiser.main(["--backend", "stub", "--budget", str(BUDGET), "--cache-dir", str(cache), *args])
    return Run(code, out.getvalue())


@dataclass(frozen=True)
class Accepted:
    cache: Path
    artifact: Path
    first: Run
    second: Run
    first_bytes: bytes


@pytest.fixture(scope="module")
def accepted(optimiser: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Accepted:
    """Two identical runs on a fresh cache with a gate that passes anything (--min-gain -1)."""
    root = tmp_path_factory.mktemp("optimise")
    artifact = root / "prompts" / "tagging.json"
    args = ("--min-gain", "-1", "--output", str(artifact))
    first = _optimise(optimiser, root / "cache", *args)
    first_bytes = artifact.read_bytes() if artifact.exists() else b""
    second = _optimise(optimiser, root / "cache", *args)
    return Accepted(root / "cache", artifact, first, second, first_bytes)


def test_an_accepted_candidate_is_written_as_a_tag_prompt_artifact(accepted: Accepted) -> None:
    run = accepted.first
    assert run.code == 0
    assert "  gate        pass: candidate " in run.out
    assert f"artifact    written to {accepted.artifact}" in run.out
    prompt = load_tag_prompt(accepted.artifact)
    assert 1 <= len(prompt.demos) <= 3
    train = {c.title: c for c in tagging_eval.load_cases(split="train")}
    dev_titles = {c.title for c in tagging_eval.load_cases(split="dev")}
    assert {d.title for d in prompt.demos} <= set(train)
    assert not {d.title for d in prompt.demos} & dev_titles
    assert all(set(d.tags) == set(train[d.title].tags) for d in prompt.demos), "a demo teaches a wrong tag"
    dev_cases = len(dev_titles)
    assert run.calls == (BUDGET, 2 * dev_cases)


def test_a_second_identical_run_makes_no_model_calls(accepted: Accepted) -> None:
    assert accepted.second.code == 0
    assert accepted.second.calls == (0, 0)
    assert accepted.second.scores() == accepted.first.scores()
    assert accepted.artifact.read_bytes() == accepted.first_bytes


def test_a_refused_candidate_is_not_written(optimiser: ModuleType, accepted: Accepted, tmp_path: Path) -> None:
    output = tmp_path / "tagging.json"
    output.write_text('{"instructions": "the prompt in use"}', encoding="utf-8")
    run = _optimise(optimiser, accepted.cache, "--min-gain", "5", "--output", str(output))
    assert run.code == 0
    assert "  gate        fail: candidate " in run.out
    assert "; +5.000 required)" in run.out
    assert f"not written: the gate refused the candidate; {output} is unchanged" in run.out
    assert output.read_text(encoding="utf-8") == '{"instructions": "the prompt in use"}'
    assert run.scores() == accepted.first.scores()
    assert run.calls == (0, 0)


def test_the_candidate_was_scored_on_the_requests_its_artifact_makes(
    accepted: Accepted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-score dev from the cache alone, with the artifact installed the production way."""
    dev = tagging_eval.load_cases(split="dev")
    cache = ResponseCache(accepted.cache)
    chat = CacheOnlyChat(cache, Identity.of(StubBackend()))
    try:
        baseline = tagging_eval.evaluate(chat, dev)
        monkeypatch.setenv("ATTEST_TAG_PROMPT", str(accepted.artifact))
        candidate = tagging_eval.evaluate(chat, dev)
    finally:
        cache.close()
    assert (f"{baseline.overall:.3f}", f"{candidate.overall:.3f}") == accepted.first.scores()


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
    budgeted = optimiser.BudgetedChat(CachedChat.from_backend(StubBackend(), cache), 2)
    schema = tagging_eval.TASK.schema
    requests = [tag_messages(f"Item {i}", "A catalysis paper.") for i in range(3)]
    try:
        first = budgeted(requests[0], schema, 0)
        budgeted(requests[1], schema, 0)
        with pytest.raises(optimiser.BudgetExceeded, match="budget of 2 model calls is spent"):
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
