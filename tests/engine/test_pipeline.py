"""The pipeline: evals send what production sends, generation is cached and resumable, runs are recorded."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import attest
from attest import explain, features, simulate
from attest.backends.stub import StubBackend
from attest.backends.types import BackendError, ChatResponse, Message
from attest.explain import explanation_messages
from attest.features import TagPrompt, tag_messages
from attest.simulate import reaction_messages
from evals import explanation_eval, reaction_eval, tagging_eval
from evals.cli import runner
from evals.corpus.read import split_sha256
from evals.engine.chat import CachedChat, unsampled
from evals.engine.pipeline import GenerateStats, Planned, generate, plan, score_planned
from evals.store.keys import Identity, canonical_json
from evals.store.local.cache import ResponseCache
from tests.fakes import RecordingChat, seed_stub

MODULES: dict[str, ModuleType] = {"tagging": tagging_eval, "reaction": reaction_eval, "explanation": explanation_eval}
MUTATED = "MUTATED SYSTEM PROMPT: answer in JSON, and nothing else."
TEXT = Callable[[Sequence[Message], Mapping[str, Any]], str]


def _stub_text(messages: Sequence[Message], schema: Mapping[str, Any]) -> str:
    return seed_stub().chat_json(messages, schema).text


class FakeBackend:
    """A Backend that answers like the stub (or with `answer`), records what it was sent and how many calls overlapped.

    With `fail_after=k` it answers k requests and then raises BackendError, as a server that went away.
    """

    kind = "fake"

    def __init__(
        self, answer: TEXT = _stub_text, *, fail_after: int | None = None, delay_s: float = 0.0, model: str = "fake-7b"
    ) -> None:
        self.model = model
        self.options = {"temperature": 0.0, "seed": 42, "max_tokens": 400}
        self.sent: list[list[Message]] = []
        self.seeds: list[int | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = False
        self._answer = answer
        self._fail_after = fail_after
        self._delay_s = delay_s
        self._lock = threading.Lock()

    def digest(self) -> str:
        return "sha256:fake7b"

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        with self._lock:
            if self._fail_after is not None and len(self.sent) >= self._fail_after:
                raise BackendError("cannot get an answer from the fake server (connection refused)", url="http://fake")
            self.sent.append(copy.deepcopy(list(messages)))
            self.seeds.append(seed)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self._delay_s)
            text = self._answer(messages, schema)
        finally:
            with self._lock:
                self.in_flight -= 1
        return ChatResponse(text, 0.125, 311, 17, self.model, self.digest())

    def close(self) -> None:
        self.closed = True


OpenCache = Callable[[Path], ResponseCache]


@pytest.fixture
def open_cache() -> Iterator[OpenCache]:
    """Open response caches that are closed after the test."""
    opened: list[ResponseCache] = []

    def open_(directory: Path) -> ResponseCache:
        opened.append(ResponseCache(directory))
        return opened[-1]

    yield open_
    for cache in opened:
        cache.close()


def _production_messages(task: str, case: Any) -> list[Message]:
    """What the feature itself sends for this case (the production renderers, called directly)."""
    if task == "tagging":
        return tag_messages(case.title, case.summary)
    if task == "reaction":
        return reaction_messages(case.persona, case.interests, case.title, case.summary)
    return explanation_messages(case.interests, case.title, case.summary)


def _mutate_prompt(task: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if task == "tagging":
        monkeypatch.setattr(features, "DEFAULT_TAG_PROMPT", TagPrompt(instructions=MUTATED))
    elif task == "reaction":
        monkeypatch.setattr(simulate, "REACTION_SYSTEM_PROMPT", MUTATED)
    else:
        monkeypatch.setattr(explain, "EXPLANATION_SYSTEM_PROMPT", MUTATED)


def _dev_cases(task: str, n: int) -> list[Any]:
    cases: list[Any] = MODULES[task].load_cases(split="dev")[:n]
    return cases


def _sent_by_evaluate(task: str, cases: Sequence[Any]) -> list[list[Message]]:
    chat = RecordingChat(_stub_text)
    result = MODULES[task].evaluate(unsampled(chat), cases)
    assert result.n == len(cases)
    return [sent.messages for sent in chat.history]


def _sent_by_generate(
    task: str, cases: Sequence[Any], cache: ResponseCache
) -> tuple[list[list[Message]], GenerateStats]:
    backend = FakeBackend()
    planned = plan(MODULES[task].TASK, cases, Identity.of(backend), 1)
    stats = generate(MODULES[task].TASK, planned, CachedChat.from_backend(backend, cache))
    return backend.sent, stats


# --- 1. the eval sends what production sends ---------------------------------------------


@pytest.mark.parametrize("task", MODULES)
def test_evaluate_sends_the_production_prompt(task: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = _dev_cases(task, 3)
    before = _sent_by_evaluate(task, cases)
    _mutate_prompt(task, monkeypatch)
    after = _sent_by_evaluate(task, cases)
    assert after != before
    assert all(MUTATED not in m[0]["content"] for m in before)
    assert all(m[0]["role"] == "system" and m[0]["content"].startswith(MUTATED) for m in after)
    assert after == [_production_messages(task, c) for c in cases]


@pytest.mark.parametrize("task", MODULES)
def test_generate_sends_the_production_prompt(
    task: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, open_cache: OpenCache
) -> None:
    cases = _dev_cases(task, 3)
    cache = open_cache(tmp_path)
    before, _ = _sent_by_generate(task, cases, cache)
    _mutate_prompt(task, monkeypatch)
    after, stats = _sent_by_generate(task, cases, cache)  # same cache: a new prompt must miss
    assert stats.misses == len(cases) and stats.hits == 0
    assert after != before
    assert all(m[0]["content"].startswith(MUTATED) for m in after)
    assert after == [_production_messages(task, c) for c in cases]


# --- 2. resume after a failure -----------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 3])
def test_rerun_after_a_failure_asks_only_for_the_missing_samples(
    concurrency: int, tmp_path: Path, open_cache: OpenCache
) -> None:
    task = tagging_eval.TASK
    cases = tagging_eval.load_cases()[:10]
    cache = open_cache(tmp_path)
    failing = FakeBackend(fail_after=4)
    planned = plan(task, cases, Identity.of(failing), 1)
    key_of = {canonical_json(p.messages): p.key for p in planned}
    assert len(key_of) == 10

    with pytest.raises(BackendError, match="connection refused"):
        generate(task, planned, CachedChat.from_backend(failing, cache), concurrency=concurrency)
    cached_before = {p.key for p in planned if p.key in cache}
    assert len(cached_before) == 4

    healthy = FakeBackend()
    stats = generate(task, planned, CachedChat.from_backend(healthy, cache), concurrency=concurrency)
    requested = [key_of[canonical_json(m)] for m in healthy.sent]
    assert len(requested) == len(set(requested))
    assert set(requested) == {p.key for p in planned} - cached_before
    assert (stats.hits, stats.misses) == (4, 6)
    assert all(p.key in cache for p in planned)


def test_rerun_resumes_repeated_samples(tmp_path: Path, open_cache: OpenCache) -> None:
    """With --repeat the samples of one case share messages: the cache tells them apart by sample index."""
    task = reaction_eval.TASK
    cases = reaction_eval.load_cases(split="dev")[:4]
    cache = open_cache(tmp_path)
    failing = FakeBackend(fail_after=5)
    planned = plan(task, cases, Identity.of(failing), 3)
    with pytest.raises(BackendError):
        generate(task, planned, CachedChat.from_backend(failing, cache))
    missing = [p for p in planned if p.key not in cache]
    assert len(missing) == 12 - 5
    healthy = FakeBackend()
    chat = CachedChat.from_backend(healthy, cache)
    stats = generate(task, planned, chat)
    assert chat.calls == len(healthy.sent) == stats.misses == len(missing)
    assert healthy.sent == [p.messages for p in missing]


# --- 6. generate-stage details -------------------------------------------------------------


def test_hits_and_misses_are_counted_and_a_second_run_calls_nothing(tmp_path: Path, open_cache: OpenCache) -> None:
    task = explanation_eval.TASK
    cases = explanation_eval.load_cases(split="dev")[:5]
    backend = FakeBackend()
    planned = plan(task, cases, Identity.of(backend), 2)
    seen: list[tuple[int, int]] = []
    chat = CachedChat.from_backend(backend, open_cache(tmp_path))
    first = generate(task, planned, chat, progress=lambda s: seen.append((s.hits, s.misses)))
    assert (first.samples, first.hits, first.misses, chat.calls, len(backend.sent)) == (10, 0, 10, 10, 10)
    assert seen[0] == (0, 0) and seen[-1] == (0, 10)

    again = FakeBackend()
    chat2 = CachedChat.from_backend(again, open_cache(tmp_path))
    second = generate(task, planned, chat2)
    assert (second.samples, second.hits, second.misses) == (10, 10, 0)
    assert chat2.calls == 0 and again.sent == []


def test_partly_cached_run_counts_both(tmp_path: Path, open_cache: OpenCache) -> None:
    task = tagging_eval.TASK
    cases = tagging_eval.load_cases(split="dev")[:6]
    cache = open_cache(tmp_path)
    planned = plan(task, cases, Identity.of(FakeBackend()), 1)
    generate(task, planned[:2], CachedChat.from_backend(FakeBackend(), cache))
    stats = generate(task, planned, CachedChat.from_backend(FakeBackend(), cache))
    assert (stats.hits, stats.misses) == (2, 4)


def _run_with(backend: FakeBackend, task: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    return runner.main(MODULES[task].TASK, argv, backend_factory=lambda settings: backend)


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [4, 1])
def test_concurrency_bounds_calls_in_flight(
    concurrency: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = FakeBackend(delay_s=0.05)
    argv = ["--cache-dir", str(tmp_path), "--split", "dev", "--concurrency", str(concurrency)]
    assert _run_with(backend, "tagging", argv, monkeypatch) == 0
    assert len(backend.sent) == len(tagging_eval.load_cases(split="dev"))
    assert backend.max_in_flight <= concurrency
    if concurrency > 1:
        assert backend.max_in_flight >= 2  # the calls did overlap


@pytest.mark.parametrize("fail_after", [None, 2], ids=["complete", "failed"])
def test_run_script_closes_its_backend(
    fail_after: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The backend holds an HTTP client (and its sockets): the run script that built it must close it, always."""
    backend = FakeBackend(fail_after=fail_after)
    code = _run_with(backend, "explanation", ["--cache-dir", str(tmp_path), "--split", "dev"], monkeypatch)
    assert code == (0 if fail_after is None else 1)
    assert backend.closed


def test_manifest_records_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = reaction_eval.TASK
    start = time.time()
    assert runner.main(task, ["--offline", "--cache-dir", str(tmp_path), "--split", "dev", "--repeat", "2"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    corpus = reaction_eval.load_cases()
    stub = StubBackend()
    planned = plan(task, [c for c in corpus if c.split == "dev"], Identity.of(stub), 2)

    assert manifest["run_id"] == run_dir.name
    assert (manifest["task"], manifest["status"], manifest["split"], manifest["repeat"]) == (
        "reaction",
        "complete",
        "dev",
        2,
    )
    assert (manifest["backend"], manifest["model"], manifest["digest"]) == ("stub", stub.model, stub.digest())
    assert manifest["options"] == stub.options == {"temperature": 0.0, "seed": 42, "max_tokens": 400}
    provenance = manifest["provenance"]
    assert provenance["corpus_sha256"] == {
        s: split_sha256([c for c in corpus if c.split == s]) for s in ("train", "dev")
    }
    assert provenance["corpus"] == "evals/reaction_cases.json"
    assert manifest["samples"] == [{"case": p.case.id, "sample": p.sample, "key": p.key} for p in planned]
    assert provenance["attest_version"] == attest.__version__
    assert start <= manifest["created"] <= time.time()
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    assert report["generate"]["samples"] == len(planned) and report["n"] == len(planned)


def test_two_runs_in_one_second_keep_two_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run id is the second, the task and a random token: two runs in one second need two records."""
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20260101T000000")
    for split in ("dev", "train"):
        assert runner.main(tagging_eval.TASK, ["--offline", "--cache-dir", str(tmp_path), "--split", split]) == 0
    runs = sorted((tmp_path / "runs").iterdir())
    splits = sorted(json.loads((r / "manifest.json").read_text(encoding="utf-8"))["split"] for r in runs)
    assert splits == ["dev", "train"]


def test_answer_that_is_not_json_scores_zero_without_crashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = FakeBackend(lambda m, s: "I would tag this as catalysis and organic synthesis.")
    argv = ["--cache-dir", str(tmp_path), "--split", "dev", "--json"]
    assert _run_with(backend, "tagging", argv, monkeypatch) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"] == 0.0 and report["n"] == len(backend.sent) > 0
    assert all(r["score"] == 0.0 and r["errors"][0].startswith("output is not valid JSON") for r in report["results"])


def test_cache_entry_keeps_text_and_provenance(tmp_path: Path, open_cache: OpenCache) -> None:
    task = tagging_eval.TASK
    backend = FakeBackend(lambda m, s: '{"tags": ["spectroscopy"]}')
    (p,) = plan(task, tagging_eval.load_cases(split="dev")[:1], Identity.of(backend), 1)
    start = time.time()
    generate(task, [p], CachedChat.from_backend(backend, open_cache(tmp_path)))
    entry = open_cache(tmp_path).get(p.key)  # a fresh handle: the entry is on disk
    assert entry is not None
    assert (entry.text, entry.latency_s, entry.prompt_tokens, entry.completion_tokens) == (
        '{"tags": ["spectroscopy"]}',
        0.125,
        311,
        17,
    )
    assert (entry.model, entry.digest) == ("fake-7b", "sha256:fake7b")
    assert start <= entry.created <= time.time()


def test_score_stage_reads_the_cache(tmp_path: Path, open_cache: OpenCache) -> None:
    task = tagging_eval.TASK
    cases = tagging_eval.load_cases(split="dev")[:3]
    backend = FakeBackend(lambda m, s: json.dumps({"tags": ["catalysis"]}))
    planned: list[Planned] = plan(task, cases, Identity.of(backend), 1)
    cache = open_cache(tmp_path)
    generate(task, planned, CachedChat.from_backend(backend, cache))
    result = score_planned(task, ((p.case, p.sample, p.key) for p in planned), cache)
    expected = [tagging_eval.score_one(c, '{"tags": ["catalysis"]}')["score"] for c in cases]
    assert [r.score for r in result.results] == expected
    assert result.median_latency == 0.125


def test_repeats_are_sent_with_seed_plus_the_sample_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--repeat K sends sample i with seed + i (sample 0 with the options' own), so repeats can differ."""
    backend = FakeBackend()
    backend.options["seed"] = 7
    corpus = tmp_path / "cases.json"
    corpus.write_text(json.dumps(json.loads(tagging_eval.CORPUS.read_text(encoding="utf-8"))[:2]), encoding="utf-8")
    argv = ["--cache-dir", str(tmp_path), "--corpus", str(corpus), "--split", "all", "--repeat", "3"]
    assert _run_with(backend, "tagging", argv, monkeypatch) == 0
    assert sorted(backend.seeds, key=str) == sorted([None, 8, 9] * 2, key=str)


def test_sampling_requests_draw_each_case_from_its_own_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At a temperature above 0, one seed for every case of a run would tie all cases to one random stream
    (two runs then differ as wholes); each case's seed comes from its own request, repeats add i."""
    backend = FakeBackend()
    backend.options.update(temperature=0.8, seed=7)
    corpus = tmp_path / "cases.json"
    corpus.write_text(json.dumps(json.loads(tagging_eval.CORPUS.read_text(encoding="utf-8"))[:4]), encoding="utf-8")
    argv = ["--cache-dir", str(tmp_path), "--corpus", str(corpus), "--split", "all", "--repeat", "2"]
    assert _run_with(backend, "tagging", argv, monkeypatch) == 0
    sent = list(zip(backend.sent, backend.seeds, strict=True))
    by_case: dict[str, list[int]] = {}
    for messages, seed in sent:
        assert isinstance(seed, int)
        by_case.setdefault(json.dumps(messages), []).append(seed)
    assert len(by_case) == 4 and all(len(v) == 2 for v in by_case.values())
    assert all(max(v) - min(v) == 1 for v in by_case.values())  # sample 1 = sample 0 + 1
    assert len({min(v) for v in by_case.values()}) == 4  # no two cases share a stream
    again = FakeBackend()
    again.options.update(temperature=0.8, seed=7)
    assert _run_with(again, "tagging", [*argv[:1], str(tmp_path / "other"), *argv[2:]], monkeypatch) == 0
    assert sorted(again.seeds, key=str) == sorted(backend.seeds, key=str)  # fixed by the request: reproducible


def test_only_sampling_requests_carry_the_seeding_rule_in_their_key() -> None:
    from evals.store.keys import SEEDING, request_key

    messages = [{"role": "user", "content": "x"}]
    greedy = Identity("fake", "m", "d", {"temperature": 0.0, "seed": 1})
    sampling = Identity("fake", "m", "d", {"temperature": 0.8, "seed": 1})
    plain = {"backend": "fake", "model": "m", "digest": "d", "messages": messages, "schema": {}, "sample": 0}
    from evals.store.keys import canonical_json

    def sha(payload: dict[str, object]) -> str:
        import hashlib

        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()

    assert request_key(greedy, messages, {}, 0) == sha({**plain, "options": greedy.options})
    assert request_key(sampling, messages, {}, 0) == sha({**plain, "options": sampling.options, "seeding": SEEDING})
