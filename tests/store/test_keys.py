"""The cache key: everything that can change the answer is in it, nothing else is, and it is the same everywhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from attest.answers import schema_of
from attest.backends.openai import OpenAIBackend
from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.stub import StubBackend
from attest.explain import Explanation
from attest.features import ItemTags, tag_messages
from attest.simulate import Reaction
from evals import tagging_eval
from evals.corpus.cases import TaggingCase
from evals.engine.pipeline import plan
from evals.store.keys import Entry, Identity, request_key
from evals.store.local.cache import ResponseCache

REPO = Path(__file__).resolve().parents[2]
OPTIONS = {"temperature": 0.0, "seed": 42, "max_tokens": 400}
BASE = Identity("openai", "SmolLM2-135M-Instruct.Q4_1", "sha256:9c1f", OPTIONS)
TITLE = "Electron diffraction resolves hydrogen positions in a MOF"
SUMMARY = "3D ED on nanocrystals of a zinc framework locates the hydroxyl protons that X-ray data could not."
MESSAGES = tag_messages(TITLE, SUMMARY)
SCHEMA = schema_of(ItemTags)
HEX64 = re.compile(r"[0-9a-f]{64}")


def _key(
    identity: Identity = BASE,
    messages: list[dict[str, str]] = MESSAGES,
    schema: dict[str, object] = SCHEMA,
    sample: int = 0,
) -> str:
    return request_key(identity, messages, schema, sample)


def _other_message_content() -> list[dict[str, str]]:
    return [MESSAGES[0], {"role": "user", "content": MESSAGES[1]["content"].replace("MOF", "COF")}]


VARIANTS: dict[str, Callable[[], str]] = {
    "backend-kind": lambda: _key(replace(BASE, kind="local")),
    "model": lambda: _key(replace(BASE, model="gemma4:e2b")),
    "digest": lambda: _key(replace(BASE, digest="sha256:0000")),
    "empty-digest": lambda: _key(replace(BASE, digest="")),
    "temperature": lambda: _key(replace(BASE, options={**OPTIONS, "temperature": 0.7})),
    "seed": lambda: _key(replace(BASE, options={**OPTIONS, "seed": 7})),
    "max-tokens": lambda: _key(replace(BASE, options={**OPTIONS, "max_tokens": 64})),
    "extra-option": lambda: _key(replace(BASE, options={**OPTIONS, "top_p": 0.9})),
    "system-prompt": lambda: _key(
        messages=[{"role": "system", "content": MESSAGES[0]["content"] + " Be brief."}, MESSAGES[1]]
    ),
    "item-text": lambda: _key(messages=_other_message_content()),
    "role": lambda: _key(messages=[MESSAGES[0], {"role": "assistant", "content": MESSAGES[1]["content"]}]),
    "message-order": lambda: _key(messages=list(reversed(MESSAGES))),
    "demo-added": lambda: _key(
        messages=[MESSAGES[0], MESSAGES[1], {"role": "assistant", "content": "{}"}, MESSAGES[1]]
    ),
    "schema-reaction": lambda: _key(schema=schema_of(Reaction)),
    "schema-explanation": lambda: _key(schema=schema_of(Explanation)),
    "schema-tweak": lambda: _key(schema={**SCHEMA, "additionalProperties": True}),
    "sample-1": lambda: _key(sample=1),
    "sample-2": lambda: _key(sample=2),
}


def test_same_request_same_key() -> None:
    assert _key() == _key()
    reordered = Identity(BASE.kind, BASE.model, BASE.digest, dict(reversed(list(OPTIONS.items()))))
    assert _key(reordered) == _key()  # option order is not part of the request


@pytest.mark.parametrize("name", VARIANTS)
def test_changing_what_determines_the_answer_changes_the_key(name: str) -> None:
    assert VARIANTS[name]() != _key()


def test_every_variant_has_its_own_key() -> None:
    keys = [_key()] + [variant() for variant in VARIANTS.values()]
    assert len(set(keys)) == len(keys)


def test_key_is_64_hex() -> None:
    for key in [_key()] + [variant() for variant in VARIANTS.values()]:
        assert HEX64.fullmatch(key), key


def test_key_derivation_is_pinned() -> None:
    """A change here silently invalidates every cache in use: change this value only on purpose."""
    identity = Identity("stub", "stub-keyword-overlap-v1", "stub-v1", OPTIONS)
    messages = [
        {"role": "system", "content": "Tag it."},
        {"role": "user", "content": "Title: Café NMR\nSummary: ¹H spectra."},
    ]
    key = request_key(identity, messages, {"title": "ItemTags", "type": "object"}, 0)
    assert key == "ffae7686946d16c0935159139c5ec141296b3134fbe5a3fef1462ce448e17e43"


# --- through real backends -------------------------------------------------------------


def _openai(
    model: str = BASE.model,
    *,
    base_url: str = "http://127.0.0.1:8080",
    api_key: str | None = None,
    digest: str = BASE.digest,
    options: Mapping[str, object] = OPTIONS,
    kind: str = "openai",
) -> OpenAIBackend:
    return OpenAIBackend(model, base_url=base_url, api_key=api_key, digest=digest, options=options, kind=kind)


def _backend_key(backend: OpenAIBackend) -> str:
    try:
        return _key(Identity.of(backend))
    finally:
        backend.close()


def test_url_and_api_key_are_not_in_the_key() -> None:
    one = _backend_key(_openai(base_url="http://127.0.0.1:8080", api_key=None))
    two = _backend_key(_openai(base_url="http://gpu-box.lan:8000/", api_key="sk-team-key-1"))
    three = _backend_key(_openai(base_url="https://llm.example.internal/proxy", api_key="sk-other-key"))
    assert one == two == three == _key()


def test_url_and_api_key_from_the_environment_are_not_in_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = []
    for url, api_key in [("http://127.0.0.1:8080", ""), ("http://10.0.0.7:8000", "sk-secret")]:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", url)
        monkeypatch.setenv("ATTEST_OPENAI_API_KEY", api_key)
        backend = make_backend(Settings.resolve(backend="openai", model="qwen3:4b"))
        assert isinstance(backend, OpenAIBackend) and backend.base_url == url
        keys.append(_backend_key(backend))
    assert keys[0] == keys[1]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"model": "gemma4:e2b"}, id="model"),
        pytest.param({"digest": "sha256:0000"}, id="digest"),
        pytest.param({"options": {**OPTIONS, "temperature": 0.7}}, id="temperature"),
        pytest.param({"options": {**OPTIONS, "seed": 7}}, id="seed"),
        pytest.param({"kind": "local"}, id="kind"),
    ],
)
def test_backend_identity_carries_model_digest_options(change: dict[str, Any]) -> None:
    assert _backend_key(_openai(**change)) != _backend_key(_openai())


def test_case_id_split_and_note_are_not_in_the_key() -> None:
    """Two cases asking the same thing share one cached answer."""
    one = TaggingCase(
        id="mof-protons",
        split="train",
        family="anchor",
        note="one",
        title=TITLE,
        summary=SUMMARY,
        tags=["materials-science"],
    )
    two = TaggingCase(
        id="mof-protons-dev",
        split="dev",
        family="anchor",
        note="two",
        title=TITLE,
        summary=SUMMARY,
        tags=["spectroscopy"],
    )
    a, b = plan(tagging_eval.TASK, [one, two], Identity.of(StubBackend()), 1)
    assert a.key == b.key


# --- across processes ------------------------------------------------------------------

_CHILD = """
import json, sys
from attest.features import ItemTags, tag_messages
from attest.answers import schema_of
from attest.backends.stub import StubBackend
from evals.store.keys import Identity, request_key
title, summary = json.loads(sys.argv[1])
identity = Identity.of(StubBackend())
print(json.dumps([request_key(identity, tag_messages(title, summary), schema_of(ItemTags), i) for i in range(3)]))
"""


@pytest.mark.parametrize("hash_seed", ["1", "2"])
def test_keys_are_the_same_in_another_process(hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([TITLE, SUMMARY])],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    identity = Identity.of(StubBackend())
    here = [request_key(identity, tag_messages(TITLE, SUMMARY), schema_of(ItemTags), i) for i in range(3)]
    assert json.loads(out) == here
    assert len(set(here)) == 3


def test_get_many_answers_as_get_does(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    entries = {f"{i:064x}": Entry(f"answer {i}", 0.1 * i, i, None, "m", "d", 1.0 + i) for i in range(3)}
    for key, entry in entries.items():
        cache.put(key, entry)
    asked = [*entries, "f" * 64, next(iter(entries))]  # a miss, and a repeated key
    assert cache.get_many(asked) == {key: cache.get(key) for key in asked}
    assert cache.get_many(asked)["f" * 64] is None
    cache.close()
