"""Tasks are plug-ins: found through the `attest.tasks` entry points, answered offline by their own stub
answerer, and no generic module imports a task module.

The slow test installs the checkout and `examples/task-plugin` (the genre task) into a fresh
virtual environment with uv, from uv's cache (no network), and runs every command on the
genre task from a directory outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from attest.backends.stub import StubBackend, reaction_answer
from attest.errors import AttestError
from evals import run, tagging_eval, tasks
from tests.project.test_import_graph import _evals_copy, import_graph

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "examples" / "task-plugin"

# --- no generic module imports a task module ------------------------------------------------------

# Commands of one task, which import that task's module: its run script and the tagging optimiser's parts.
_OF_ONE_TASK = {"evals.optimize_tagging", "evals.cli.tagging_search", "evals.cli.optimize_output"}


def _is_task_module(module: str) -> bool:
    name = module.split(".")[-1]
    return module.count(".") == 1 and name.endswith("_eval") and not name.startswith("run_")


def task_module_imports(root: Path) -> list[str]:
    """Each import of a task module (evals/*_eval.py) by a module that is not a task module, the registry,
    a task's run script or a command of one task."""
    graph = import_graph(root, "evals")
    found = []
    for module, targets in sorted(graph.items()):
        name = module.split(".")[-1]
        if _is_task_module(module) or module == "evals.tasks" or name.startswith("run_") or module in _OF_ONE_TASK:
            continue
        found += [f"{module} imports {t}" for t in sorted(targets) if _is_task_module(t)]
    return found


def test_no_generic_module_imports_a_task_module() -> None:
    assert task_module_imports(REPO) == []


def test_the_import_check_finds_a_planted_task_import(tmp_path: Path) -> None:
    root = _evals_copy(tmp_path)
    path = root / "evals" / "analysis" / "baselines.py"
    path.write_text(path.read_text(encoding="utf-8") + "\ndef later():\n    from evals import reaction_eval\n")
    assert task_module_imports(root) == ["evals.analysis.baselines imports evals.reaction_eval"]


# --- the stub answers through the answerer it is given ---------------------------------------------


def test_the_stub_answers_through_its_answerer_whatever_the_schema_title() -> None:
    messages = tagging_eval.render(tagging_eval.load_cases()[0])
    schema = tagging_eval.TASK.schema  # titled ItemTags: a title dispatch would answer with tags
    answered = json.loads(StubBackend(answer=reaction_answer).chat_json(messages, schema).text)
    assert set(answered) == {"verdict", "confidence", "reasoning"}


def test_a_stub_without_an_answerer_says_so_in_one_line() -> None:
    with pytest.raises(AttestError, match=r"no answerer for this request \(schema 'ItemTags'\).*Task.stub_answer"):
        StubBackend().chat_json([{"role": "user", "content": "Title: x"}], tagging_eval.TASK.schema)


def test_every_built_in_task_brings_its_stub_answerer() -> None:
    for task in tasks.all_tasks():
        case = task.case_model.model_validate(json.loads(task.corpus.read_text(encoding="utf-8"))[0])
        text = StubBackend(answer=task.stub_answer).chat_json(task.render(case), task.schema).text
        assert task.output_model.model_validate_json(text), task.name


# --- python -m evals.run TASK ------------------------------------------------------------------------


def test_the_generic_runner_runs_a_named_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["reaction", "--offline", "--limit", "3", "--cache-dir", str(tmp_path), "--json"]
    assert run.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["task"] == "reaction" and report["n"] == 3
    assert [p.name.split("-")[1] for p in (tmp_path / "runs").iterdir()] == ["reaction"]


def test_the_generic_runner_names_the_known_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run.main(["nope", "--offline"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "unknown task 'nope': the known tasks are tagging, reaction, explanation" in err and "\n" not in err
    assert run.main(["--help"]) == 0
    assert "the known tasks are tagging, reaction, explanation" in capsys.readouterr().out
    assert run.main([]) == 2


# --- discovery through entry points ------------------------------------------------------------------

_TOY = """
from evals import tagging_eval
import dataclasses

TASK = dataclasses.replace(tagging_eval.TASK, name="toytags")
RENAMED = dataclasses.replace(tagging_eval.TASK, name="other")
BUILT_IN = tagging_eval.TASK
NOT_A_TASK = 42
"""


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A registry that reads the entry points again, and a directory on sys.path for plug-in modules."""
    monkeypatch.setattr(tasks, "_TASKS", dict(tasks._TASKS))
    monkeypatch.setattr(tasks, "_discovered", False)
    (tmp_path / "toy_plugin.py").write_text(_TOY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("toy_plugin", None)


def _installed(site: Path, points: Mapping[str, str]) -> None:
    """A distribution `toy-plugin` in `site` whose entry points are `points` (what pip would write)."""
    info = site / "toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n", encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[attest.tasks]\n{lines}", encoding="utf-8")


def test_an_installed_distribution_adds_its_task(fresh_registry: Path) -> None:
    _installed(fresh_registry, {"toytags": "toy_plugin:TASK"})
    assert tasks.names()[:3] == ("tagging", "reaction", "explanation") and "toytags" in tasks.names()
    assert tasks.get("toytags").case_model is tagging_eval.TaggingCase


@pytest.mark.parametrize(
    ("value", "name", "expected"),
    [
        ("toy_plugin:NOT_A_TASK", "toytags", "is not an evals.engine.task.Task"),
        ("toy_plugin:RENAMED", "toytags", "builds a task named 'other'"),
        ("toy_plugin:BUILT_IN", "tagging", "is named 'tagging', a built-in task"),
        ("toy_plugin_missing:TASK", "toytags", "cannot be loaded (ModuleNotFoundError"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_it(fresh_registry: Path, value: str, name: str, expected: str) -> None:
    _installed(fresh_registry, {name: value})
    with pytest.raises(tasks.PluginError) as caught:
        tasks.names()
    message = str(caught.value)
    assert expected in message and value in message and "pip uninstall toy-plugin" in message
    assert "\n" not in message


def test_an_entry_point_is_read_only_when_a_task_is_looked_up(fresh_registry: Path) -> None:
    point = EntryPoint("toytags", "toy_plugin:TASK", tasks.GROUP)
    assert tasks._load(point).name == "toytags"
    assert "toy_plugin" in sys.modules


# --- the genre plug-in, installed in a fresh venv, from outside the checkout --------------------------


def _uv() -> str:
    found = os.environ.get("ATTEST_UV") or shutil.which("uv")
    bootstrap = REPO / ".venv" / "bin" / "uv"  # `make` puts uv in the bootstrap venv
    if found is None and bootstrap.exists():
        found = str(bootstrap)
    if found is None:
        message = "uv is not on PATH (pip install uv, or ATTEST_UV=PATH)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the plug-in install test; {message}", pytrace=False)
        pytest.skip(message)
    return found


def _venv(tmp_path: Path) -> Path:
    """A venv holding the checkout and the plug-in, installed (not editable), with the test venv's other
    packages visible after its own (a path line: the test venv's editable attest stays out)."""
    uv, venv = _uv(), tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    (Path(site) / "test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    install = [uv, "pip", "install", "--offline", "-q", "-p", str(python), "--no-deps", str(REPO), str(PLUGIN)]
    done = subprocess.run(install, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return python


def _in(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ATTEST_CACHE_DIR", "ATTEST_STORE", "PYTHONPATH")}
    return subprocess.run(
        [str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _ok(done: subprocess.CompletedProcess[str], codes: Sequence[int] = (0,)) -> str:
    assert done.returncode in codes, (done.returncode, done.stderr)
    return done.stdout


@pytest.mark.slow
def test_the_installed_plugin_runs_through_every_command_outside_the_checkout(tmp_path: Path) -> None:
    python, outside = _venv(tmp_path), tmp_path / "outside"
    outside.mkdir()
    cache = str(tmp_path / "cache")
    where = _ok(_in(python, outside, "-c", "import evals, attest_genre; print(evals.__file__)"))
    assert where.startswith(str(tmp_path / "venv")), where  # the installed harness, not the checkout

    for _ in range(2):
        out = _ok(_in(python, outside, "-m", "evals.run", "genre", "--offline", "--split", "all", "--cache-dir", cache))
        assert "genre eval, all split, stub" in out and "n=24" in out
    listed = json.loads(
        _ok(_in(python, outside, "-m", "evals.runs", "--cache-dir", cache, "list", "--task", "genre", "--json"))
    )
    assert [r["task"] for r in listed] == ["genre", "genre"] and all(r["status"] == "complete" for r in listed)

    rescored = json.loads(_ok(_in(python, outside, "-m", "evals.rescore", "--cache-dir", cache, "--json")))
    assert [r["task"] for r in rescored["runs"]] == ["genre"]

    compared = _in(
        python, outside, "-m", "evals.compare", "--cache-dir", cache, "--json", "genre@previous", "genre@latest"
    )
    found: dict[str, Any] = json.loads(_ok(compared, (0, 3, 4)))
    assert found["task"] == "genre" and found["candidate"]["n"] == 24

    corpus = json.loads((PLUGIN / "src" / "attest_genre" / "genre_cases.json").read_text(encoding="utf-8"))
    trap = next(c for c in corpus if c["family"] == "keyword-trap")
    trap["kind"] = "review"
    bad = tmp_path / "bad_genre.json"
    bad.write_text(json.dumps(corpus), encoding="utf-8")
    checked = _in(python, outside, "-m", "evals.corpus_check", "--skip-targets", "--genre", str(bad))
    assert checked.returncode == 1, checked.stderr
    assert f"{bad}: case {trap['id']}: field 'kind': a keyword-trap case is 'research'" in checked.stdout
    fixture = str(REPO / "examples" / "flows" / "corpus")  # the flows fixture is the checkout's, not installed
    clean = _ok(_in(python, outside, "-m", "evals.corpus_check", "--skip-targets", "--fixture", fixture))
    assert "genre" in clean and "corpus-check: clean" in clean
