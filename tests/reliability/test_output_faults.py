"""Model-output faults: the server answers 200 with a broken message; each is scored 0 with a prose error.

One run over eight cases; the fake server gives each case's request one malformed
answer as `choices[0].message.content`. The run completes (exit 0) and report.json
holds, for every case, score 0 and an error sentence saying what is wrong.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.cli.runner import main
from evals.reaction_eval import TASK
from evals.store.local.cache import ResponseCache
from tests.reliability.fakeserver import FakeServer
from tests.reliability.helpers import corpus_cases

# evals.cli.runner.main does not close its backend's HTTP client (a process exit does); run
# in-process here, its sockets are closed by the garbage collector after each test.
pytestmark = pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning")

_REASON = "The item is a nickel photoredox coupling, squarely her bench chemistry."
# Large, but under the default 1 MB answer cap (answers over it are refused: test_backend_bounds.py).
_LARGE = 900_000

# fault -> (the message content the model "answers", words the prose error must hold)
OUTPUTS: dict[str, tuple[str, str]] = {
    "not-json": (
        "Yes, she would read this: it is about nickel catalysis.",
        "output is not valid JSON: Expecting value",
    ),
    "wrong-shape": (json.dumps([True, 4, _REASON]), "fails the Reaction schema: field '(top level)'"),
    "extra-field": (
        json.dumps({"verdict": True, "confidence": 4, "reasoning": _REASON, "mood": "curious"}),
        "field 'mood': Extra inputs are not permitted",
    ),
    "empty": ("", "output is not valid JSON: Expecting value at char 0"),
    "900kb": (json.dumps({"verdict": True, "confidence": 4, "reasoning": "x" * _LARGE}), "field 'reasoning'"),
    "nan-confidence": (f'{{"verdict": true, "confidence": NaN, "reasoning": "{_REASON}"}}', "NaN is not a JSON number"),
    "wrong-types": (
        json.dumps({"verdict": "probably", "confidence": "high", "reasoning": 7}),
        "field 'verdict': Input should be a valid boolean",
    ),
    "coercible-types": (
        json.dumps({"verdict": "yes", "confidence": "4", "reasoning": _REASON}),
        "field 'verdict': Input should be a valid boolean; field 'confidence': Input should be a valid integer",
    ),
}


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeServer, Path, Path]]:
    cases: list[dict[str, Any]] = corpus_cases(slice(len(OUTPUTS)))
    by_title = {case["title"]: OUTPUTS[name][0] for case, name in zip(cases, OUTPUTS, strict=True)}
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(cases), encoding="utf-8")

    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        return next(text for title, text in by_title.items() if f"Title: {title}\n" in user)

    with FakeServer(answer) as server:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", server.url)
        yield server, corpus, tmp_path / "cache"
    gc.collect()


def test_malformed_answers_score_zero_with_a_prose_error(
    run: tuple[FakeServer, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, corpus, cache_dir = run
    argv = ["--backend", "openai", "--cache-dir", str(cache_dir), "--corpus", str(corpus), "--split", "all", "--json"]
    code = main(TASK, argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    report = json.loads(out)
    assert report == json.loads(next((cache_dir / "runs").glob("*/report.json")).read_text(encoding="utf-8"))
    results = report["results"]
    scored_zero = 0
    for name, result in zip(OUTPUTS, results, strict=True):
        expected = OUTPUTS[name][1]
        assert result["score"] == 0.0, name
        assert len(result["errors"]) == 1 and expected in result["errors"][0], (name, result["errors"])
        assert len(result["errors"][0]) < 400, f"{name}: the error should be a sentence, not the answer"
        scored_zero += 1
    assert report["overall"] == 0.0 and report["summary"]["invalid"] == len(OUTPUTS)
    assert math.isfinite(report["median_latency"])
    assert server.count == len(OUTPUTS)
    _assert_answers_cached_verbatim(cache_dir, [r["id"] for r in results])
    print(
        f"\nreliability model output: faults tried {len(OUTPUTS)}, scored 0 with a prose error {scored_zero}, "
        f"run exit {code}"
    )


def _assert_answers_cached_verbatim(cache_dir: Path, ids: list[str]) -> None:
    """The malformed answers are data: cached as sent (the 900 kB one too), so a rescore needs no model."""
    (manifest,) = (cache_dir / "runs").glob("*/manifest.json")
    samples = json.loads(manifest.read_text(encoding="utf-8"))["samples"]
    cache = ResponseCache(cache_dir)
    try:
        texts = {s["case"]: cache.get(s["key"]) for s in samples}
        for name, cid in zip(OUTPUTS, ids, strict=True):
            entry = texts[cid]
            assert entry is not None and entry.text == OUTPUTS[name][0], name
        assert cache.warnings == []
    finally:
        cache.close()
