"""Identity: with `--backend openai` and no `--model`, the cache key names the model that answers.

Two fake servers on 127.0.0.1 serve different models with different answers. The
reaction eval runs against the first, then against the second on the same cache,
both without `--model`: the second must ask its own server for every sample (its
model is another, so are its keys) and every cached entry must hold the answer its
own server gave. A server that cannot say which one model it serves (no /v1/models,
an empty list, several models) stops the run before any request, in one line that
says to pass --model.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from attest.backends.openai import OpenAIBackend
from attest.backends.retry import RetryPolicy
from attest.backends.types import BackendError
from evals.store.keys import Identity
from tests.reliability.fakeserver import ROOT, FakeServer, reaction_answer, reaction_command, script_env
from tests.reliability.helpers import write_corpus

CASES = 3
_TOTALS = {"tried": 0, "survived": 0, "wrong_hits": 0, "extra_calls": 0}


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    print(
        f"\nreliability backend identity: tried {_TOTALS['tried']}, survived {_TOTALS['survived']}, "
        f"answers served for the wrong model {_TOTALS['wrong_hits']}, extra model calls {_TOTALS['extra_calls']}"
    )


def _corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path, slice(CASES))


def _eval(tmp_path: Path, server: FakeServer, *extra: str) -> subprocess.CompletedProcess[str]:
    command = reaction_command(tmp_path / "cache", "--corpus", str(_corpus(tmp_path)), "--retries", "1", *extra)
    return subprocess.run(command, cwd=ROOT, env=script_env(server.url), capture_output=True, text=True, timeout=60)


def _other_answer(body: dict[str, Any]) -> str:
    answer = json.loads(reaction_answer(body))
    return json.dumps({**answer, "verdict": not answer["verdict"], "reasoning": "model B: " + answer["reasoning"]})


def _manifest(cache: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((cache / "runs").glob("*/manifest.json"))]


@pytest.mark.slow
def test_another_server_s_model_gets_its_own_keys_and_answers(tmp_path: Path) -> None:
    _TOTALS["tried"] += 1
    with FakeServer() as first, FakeServer(_other_answer) as second:
        first.models, second.models = ["model-a"], ["model-b"]
        one = _eval(tmp_path, first)
        two = _eval(tmp_path, second)
        again = _eval(tmp_path, second)
        asked = (first.count, second.count)
        sent_models = {r.body.get("model") for r in [*first.requests, *second.requests]}
    assert (one.returncode, two.returncode, again.returncode) == (0, 0, 0), (one.stderr, two.stderr)
    _TOTALS["wrong_hits"] += CASES - asked[1]
    _TOTALS["extra_calls"] += max(0, asked[1] - CASES)
    assert asked == (CASES, CASES), "the second server's model must be asked for every sample, once"
    assert sent_models == {"model-a", "model-b"}
    runs = _manifest(tmp_path / "cache")
    assert sorted(m["model"] for m in runs) == ["model-a", "model-b", "model-b"]
    _TOTALS["survived"] += 1


@pytest.mark.parametrize(
    ("models", "says"),
    [
        (None, "cannot say which model it serves (404"),
        ([], "lists no model"),
        (["model-a", "model-b"], "lists 2 models (model-a, model-b)"),
        ([""], "lists no model"),
    ],
    ids=["no-route", "empty", "two", "blank-id"],
)
def test_no_identity_stops_the_run_before_any_request(tmp_path: Path, models: list[str] | None, says: str) -> None:
    _TOTALS["tried"] += 1
    with FakeServer() as server:
        server.models = models
        done = _eval(tmp_path, server)
        posts = server.count
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.startswith("reaction eval: ")]
    assert len(lines) == 1, done.stderr
    assert says in lines[0] and "pass --model" in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert posts == 0
    _TOTALS["survived"] += 1


def test_an_explicit_model_needs_no_model_list(tmp_path: Path) -> None:
    _TOTALS["tried"] += 1
    with FakeServer() as server:
        server.models = None
        done = _eval(tmp_path, server, "--model", "model-c")
        posts, lists = server.count, len(server.model_lists)
    assert done.returncode == 0, done.stderr
    assert (posts, lists) == (CASES, 0)
    assert [m["model"] for m in _manifest(tmp_path / "cache")] == ["model-c"]
    _TOTALS["survived"] += 1


# --- in-process: when the question is asked -----------------------------------------------


def _lister(models: list[dict[str, Any]], seen: list[str]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        return httpx.Response(200, json={"object": "list", "data": models})

    return httpx.MockTransport(handler)


def test_no_request_is_made_until_the_identity_is_needed() -> None:
    seen: list[str] = []
    backend = OpenAIBackend("", client=httpx.Client(transport=_lister([{"id": "qwen3-4b"}], seen)))
    assert seen == []
    identity = Identity.of(backend)
    assert (identity.kind, identity.model) == ("openai", "qwen3-4b")
    assert backend.model == "qwen3-4b"
    assert seen == ["GET /v1/models"]


def test_the_model_entry_s_metadata_becomes_the_digest() -> None:
    meta = {"n_params": 134515008, "size": 100171776, "n_vocab": 49152}
    seen: list[str] = []
    backend = OpenAIBackend("", client=httpx.Client(transport=_lister([{"id": "smollm2", "meta": meta}], seen)))
    other = OpenAIBackend(
        "", client=httpx.Client(transport=_lister([{"id": "smollm2", "meta": {**meta, "size": 1}}], seen))
    )
    one, two = Identity.of(backend), Identity.of(other)
    assert one.digest.startswith("sha256:") and one.digest != two.digest
    assert one.model == two.model == "smollm2"


def test_a_failed_listing_is_one_line_saying_to_pass_model() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    backend = OpenAIBackend(
        "", client=httpx.Client(transport=httpx.MockTransport(refuse)), retry=RetryPolicy(attempts=2, backoff_s=0.0)
    )
    with pytest.raises(BackendError) as info:
        Identity.of(backend)
    text = str(info.value)
    assert "\n" not in text
    assert "http://127.0.0.1:8080/v1/models" in text and "connection refused" in text and "pass --model" in text
