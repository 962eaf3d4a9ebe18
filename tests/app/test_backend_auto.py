"""`auto`: Ollama when it answers, else the local backend, with a one-line notice either way."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from attest.backends.local import LocalBackend
from attest.backends.ollama import OllamaBackend
from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import BackendError

TAGS = {"models": [{"name": "gemma4:e2b", "model": "gemma4:e2b", "digest": "sha256:abc123"}]}


def _auto(handler: httpx.MockTransport) -> tuple[object, list[str]]:
    notices: list[str] = []
    settings = Settings.resolve(backend="auto", env={})
    backend = make_backend(settings, httpx.Client(transport=handler), notice=notices.append)
    return backend, notices


def test_auto_uses_ollama_when_it_answers() -> None:
    backend, notices = _auto(httpx.MockTransport(lambda request: httpx.Response(200, json=TAGS)))
    assert isinstance(backend, OllamaBackend)
    assert backend.digest() == "sha256:abc123"
    assert notices == ["attest: using Ollama at http://127.0.0.1:11434 with gemma4:e2b"]


def _refuse(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def test_auto_falls_back_to_local_when_ollama_is_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    backend, notices = _auto(httpx.MockTransport(_refuse))
    assert isinstance(backend, LocalBackend)
    assert backend.digest().startswith("sha256:")
    assert len(notices) == 1
    assert "Ollama is not usable at http://127.0.0.1:11434 (connection refused)" in notices[0]
    assert "using the local backend" in notices[0]


def test_auto_falls_back_when_the_model_is_not_pulled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    backend, notices = _auto(httpx.MockTransport(lambda request: httpx.Response(200, json={"models": []})))
    assert isinstance(backend, LocalBackend)
    assert "(model gemma4:e2b is not pulled)" in notices[0]


def test_plain_ollama_does_not_fall_back() -> None:
    settings = Settings.resolve(backend="ollama", env={})
    backend = make_backend(settings, httpx.Client(transport=httpx.MockTransport(_refuse)))
    with pytest.raises(BackendError, match="ollama serve"):
        backend.digest()
