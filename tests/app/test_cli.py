"""The `attest` command, in-process through `main([...])` and once through the installed console script."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from attest.backends.registry import KINDS, REGISTRY
from attest.cli import add_backend_options, main
from attest.features import TAGS, ItemTags, tag_item
from tests.fakes import seed_stub

REPO = Path(__file__).resolve().parents[2]
TITLE = "Pd-catalysed C-N coupling at room temperature"
SUMMARY = "A new ligand lets aryl chlorides couple with amines without heating."
ITEMS = [
    {"id": "item-01", "title": TITLE, "summary": SUMMARY},
    {
        "id": "item-02",
        "title": "Stable AdamW without learning-rate warmup via update-norm clipping",
        "summary": "Clipping the per-step update norm removes the need for warmup in 1B-parameter transformer runs.",
    },
    {
        "title": "Operando Raman spectroscopy of copper electrodes during CO2 reduction",
        "summary": "Surface-enhanced Raman spectra track adsorbed CO on Cu(100) from -0.4 to -1.1 V.",
    },
]


def _stub_tags(title: str, summary: str) -> list[str]:
    return list(tag_item(title, summary, chat_json=seed_stub().chat_json).tags)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- in-process -----------------------------------------------------------------------


def test_single_item_prints_its_tags_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "tag", "--backend", "stub", TITLE, SUMMARY)
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    printed = json.loads(out)
    assert printed == {"tags": _stub_tags(TITLE, SUMMARY)}
    assert ItemTags.model_validate(printed).tags
    assert set(printed["tags"]) <= set(TAGS)


def test_file_prints_one_line_per_item_keeping_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(
        tmp_path / "items.jsonl", [json.dumps(ITEMS[0]), "", json.dumps(ITEMS[1]), "   ", json.dumps(ITEMS[2])]
    )
    code, out, err = _run(capsys, "tag", "--backend", "stub", "--file", str(path))
    assert (code, err) == (0, "")
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == [
        {"id": "item-01", "tags": _stub_tags(ITEMS[0]["title"], ITEMS[0]["summary"])},
        {"id": "item-02", "tags": _stub_tags(ITEMS[1]["title"], ITEMS[1]["summary"])},
        {"tags": _stub_tags(ITEMS[2]["title"], ITEMS[2]["summary"])},
    ]


def test_numeric_ids_are_kept_as_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path / "items.jsonl", [json.dumps({"id": 17, "title": TITLE, "summary": SUMMARY})])
    code, out, _ = _run(capsys, "tag", "--backend", "stub", "--file", str(path))
    assert code == 0
    assert json.loads(out)["id"] == "17"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ('{"title": "Pd-catalysed coupling", "summary": ', "not JSON (Expecting value at column 47)"),
        ('["Pd-catalysed coupling", "A new ligand."]', 'each line must be a JSON object with "title" and "summary"'),
        ('{"title": "Pd-catalysed coupling"}', "field 'summary': Field required"),
        ('{"title": "Pd-catalysed coupling", "summary": 3}', "field 'summary': Input should be a valid string"),
        ('{"title": "", "summary": "A new ligand."}', "field 'title': must not be blank"),
        ('{"title": " \\t ", "summary": "A new ligand."}', "field 'title': must not be blank"),
        ('{"title": "Pd-catalysed coupling", "summary": "\\n"}', "field 'summary': must not be blank"),
        ("[" * 100_000, "not JSON (nested too deeply)"),
    ],
    ids=["truncated", "array", "no-summary", "summary-number", "empty-title", "blank-title", "newline-summary", "deep"],
)
def test_bad_jsonl_line_exits_1_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, reason: str
) -> None:
    path = _jsonl(tmp_path / "items.jsonl", [json.dumps(ITEMS[0]), json.dumps(ITEMS[1]), bad])
    code, out, err = _run(capsys, "tag", "--backend", "stub", "--file", str(path))
    assert code == 1
    assert out == ""
    assert err == f"attest: error: {path}:3: {reason}\n"


def test_unreadable_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing.jsonl"
    code, _, err = _run(capsys, "tag", "--backend", "stub", "--file", str(path))
    assert code == 1
    assert err.startswith(f"attest: error: {path}: cannot read it (")
    assert err.endswith("give a UTF-8 JSON-lines file, or - for stdin\n")


@pytest.mark.parametrize(
    "argv",
    [["tag", "--backend", "stub"], ["tag", "--backend", "stub", TITLE]],
    ids=["nothing", "title-only"],
)
def test_missing_arguments_exit_1_with_a_usage_hint(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (1, "")
    assert err == 'attest: error: give an item as `attest tag "TITLE" "SUMMARY"`, or `attest tag --file items.jsonl`\n'


@pytest.mark.parametrize(
    ("title", "summary", "field"),
    [(TITLE, "", "SUMMARY"), ("", SUMMARY, "TITLE"), ("   ", SUMMARY, "TITLE"), (TITLE, "\t\n ", "SUMMARY")],
    ids=["empty-summary", "empty-title", "blank-title", "blank-summary"],
)
def test_blank_arguments_exit_1_naming_the_argument(
    capsys: pytest.CaptureFixture[str], title: str, summary: str, field: str
) -> None:
    code, out, err = _run(capsys, "tag", "--backend", "stub", title, summary)
    assert (code, out) == (1, "")
    assert err == f"attest: error: argument {field}: must not be blank\n"


def test_title_and_file_together_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path / "items.jsonl", [json.dumps(ITEMS[0])])
    code, _, err = _run(capsys, "tag", "--backend", "stub", "--file", str(path), TITLE)
    assert code == 1
    assert err == "attest: error: give either TITLE SUMMARY or --file, not both\n"


def test_ollama_not_running_is_one_line_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], free_port: int
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{free_port}")
    code, out, err = _run(capsys, "tag", "--backend", "ollama", "--retries", "1", TITLE, SUMMARY)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith("attest: error: ")
    assert f"http://127.0.0.1:{free_port}/api/chat" in err
    assert "`ollama serve`" in err and "--backend local" in err
    assert "Traceback" not in err


def test_backend_choices_are_the_registrys_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert set(KINDS) == set(REGISTRY) == {"auto", "ollama", "openai", "local", "stub"}
    with pytest.raises(SystemExit) as info:
        main(["tag", "--backend", "vllm", TITLE, SUMMARY])
    assert info.value.code == 2
    assert f"invalid choice: 'vllm' (choose from {', '.join(map(repr, KINDS))})" in capsys.readouterr().err
    shared = argparse.ArgumentParser()
    add_backend_options(shared)
    backend = next(action for action in shared._actions if "--backend" in action.option_strings)
    assert backend.choices is KINDS, "--backend's choices must be read from the registry, not copied"


def test_version_matches_pyproject(capsys: pytest.CaptureFixture[str]) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"attest {version}\n"


# --- the installed console script -----------------------------------------------------


def _script(exe: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env}, check=False
    )


def test_console_script_tags_an_item(attest_exe: Path) -> None:
    done = _script(attest_exe, "tag", "--backend", "stub", TITLE, SUMMARY)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == {"tags": _stub_tags(TITLE, SUMMARY)}


def test_console_script_reports_ollama_down_without_a_traceback(attest_exe: Path, free_port: int) -> None:
    done = _script(attest_exe, "tag", "--retries", "1", TITLE, SUMMARY, OLLAMA_HOST=f"127.0.0.1:{free_port}")
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert f"http://127.0.0.1:{free_port}/api/chat" in lines[0]
    assert "`ollama serve`" in lines[0] and "--backend local" in lines[0]
    assert "Traceback" not in done.stderr


def test_console_script_shows_the_traceback_with_attest_debug(attest_exe: Path, free_port: int) -> None:
    done = _script(
        attest_exe, "tag", "--retries", "1", TITLE, SUMMARY, OLLAMA_HOST=f"127.0.0.1:{free_port}", ATTEST_DEBUG="1"
    )
    assert done.returncode == 1
    assert "Traceback (most recent call last):" in done.stderr
    assert "attest.backends.types.BackendError: cannot get an answer from Ollama" in done.stderr
    assert "`ollama serve`" in done.stderr
