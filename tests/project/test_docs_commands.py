"""Every shell command the docs show runs as written, on a fresh copy of the repository.

The commands come from the fenced ```sh blocks of README.md, CONTRIBUTING.md, the
reference pages docs/*.md (in name order) and the examples' READMEs, in that order, in
one fresh copy of the working tree (so a run made by one command is there for the
next, as for a user following along). They run under bash with this test's
environment standing in for the README's set-up (`make dev`, `source
.venv/bin/activate`): `python` and `attest` are this environment's.

What is not run as written, and why, is the table `ADAPTED` below:
- `make test` is the command running this test;
- `make dev`, `make clean` and `source .venv/bin/activate` are set-up, which this
  environment already is;
- `nox` builds a virtualenv per session (minutes, and network): a `nox -s NAME -- ARGS`
  command runs the command that session runs (read from noxfile.py) with ARGS, and a
  `make TARGET` whose recipe is a nox session does the same (read from the Makefile);
- a real model is not used: `--backend local/auto/ollama` become `--backend stub` (and
  `--judge-backend` likewise), and
  `make eval` runs with `ATTEST_BACKEND=stub` (the local model's end-to-end runs are
  tests/engine/test_pipeline_local.py's; Ollama is not on the test machine);
- `make bench` is minutes of model time (and rewrites RESULTS.md): skipped; the
  optimiser likewise: checked with `--help`.
A command whose exit status is a verdict (`compare`: 0 ship, 3 inconclusive, 4
regress; `judge_check`: 0 validated, 3 not) passes with any of the three.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = ("examples/prompt-evals/README.md", "examples/flows/README.md")
SKIPPED = {
    "make test": "this test runs inside `make test`",
    "make dev": "set-up: this test's environment has attest and every extra installed",
    "make clean": "would remove the environment this test runs in",
    "source .venv/bin/activate": "set-up: this test's environment stands for the activated venv",
    "nox -l": "lists nox's sessions; nox itself is not in the test environment",
}
VERDICT_EXITS = {0, 3, 4}


@dataclass(frozen=True)
class DocCommand:
    doc: str
    line: int
    text: str


def _strip_comment(line: str) -> str:
    """The line without a trailing `# comment` (a # outside quotes, after whitespace)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def docs(root: Path = REPO) -> list[str]:
    """The documents whose commands run, in the order they run: README, CONTRIBUTING, docs/*.md, examples."""
    pages = sorted(p.relative_to(root).as_posix() for p in (root / "docs").glob("*.md"))
    return ["README.md", "CONTRIBUTING.md", *pages, *EXAMPLES]


def doc_commands(root: Path = REPO) -> list[DocCommand]:
    """Every command in the docs' ```sh blocks, continuation lines joined, comments dropped."""
    found = []
    for doc in docs(root):
        in_block, pending, start = False, "", 0
        for number, raw in enumerate((root / doc).read_text(encoding="utf-8").splitlines(), 1):
            if raw.startswith("```"):
                in_block = raw.strip() == "```sh"
                continue
            if not in_block:
                continue
            line = _strip_comment(raw) if not pending else raw.rstrip()
            if not pending:
                start = number
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            text = (pending + _strip_comment(line)).strip()
            pending = ""
            if text:
                found.append(DocCommand(doc, start, text))
    return found


def _session_command(noxfile: Path, name: str, args: list[str]) -> list[str]:
    """The command nox session `name` runs (its session.run("python", ...)), with `args` as posargs."""
    tree = ast.parse(noxfile.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _session_name(node) == name:
            return _python_run(node, args, noxfile)
    raise AssertionError(f"no nox session {name!r} in {noxfile}")


def _session_name(node: ast.FunctionDef) -> str:
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    return str(kw.value.value)
    return node.name


def _python_run(node: ast.FunctionDef, args: list[str], noxfile: Path) -> list[str]:
    for call in ast.walk(node):
        if _is_python_run(call):
            assert isinstance(call, ast.Call)
            return _argv(call, args, {})
    helpers = {f.name: f for f in ast.parse(noxfile.read_text(encoding="utf-8")).body if isinstance(f, ast.FunctionDef)}
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in helpers:
            found = _python_run_with(helpers[call.func.id], call, args)
            if found:
                return found
    raise AssertionError(f"session {node.name} runs no python command")


def _python_run_with(helper: ast.FunctionDef, call: ast.Call, args: list[str]) -> list[str]:
    bound = {p.arg: v for p, v in zip(helper.args.args[1:], call.args[1:], strict=False)}
    for inner in ast.walk(helper):
        if _is_python_run(inner):
            assert isinstance(inner, ast.Call)
            return _argv(inner, args, bound)
    return []


def _is_python_run(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "python"
    )


def _argv(call: ast.Call, args: list[str], bound: dict[str, ast.expr]) -> list[str]:
    argv = ["python"]
    for arg in call.args[1:]:
        if isinstance(arg, ast.Starred):
            argv += args or _default_posargs(arg)
        elif isinstance(arg, ast.Constant):
            argv.append(str(arg.value))
        elif isinstance(arg, ast.JoinedStr):
            argv.append(_fstring(arg, bound))
        else:
            raise AssertionError(f"cannot read session argument {ast.unparse(arg)}")
    return argv


def _default_posargs(arg: ast.Starred) -> list[str]:
    value = arg.value
    if isinstance(value, ast.BoolOp) and isinstance(value.values[-1], ast.List):
        return [str(e.value) for e in value.values[-1].elts if isinstance(e, ast.Constant)]
    return []


def _fstring(node: ast.JoinedStr, bound: dict[str, ast.expr]) -> str:
    out = ""
    for part in node.values:
        if isinstance(part, ast.Constant):
            out += str(part.value)
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
            value = bound[part.value.id]
            assert isinstance(value, ast.Constant), ast.unparse(value)
            out += str(value.value)
    return out


def _make_recipe(makefile: Path, target: str) -> str:
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile.read_text(encoding="utf-8"), re.M)
    assert match, f"no target {target!r} in {makefile}"
    return match.group(1).strip()


def adapt(command: str, root: Path) -> str | None:
    """The command as this test runs it (None: skipped, see SKIPPED)."""
    if command in SKIPPED:
        return None
    command = re.sub(r"--(judge-)?backend (local|auto|ollama)\b", r"--\1backend stub", command)
    if command.startswith(("make bench", "nox -s bench")):
        return None  # minutes of model time, and it rewrites benchmarks/RESULTS.md
    if "optimize-tagging" in command or "optimize_tagging.py" in command:
        return "python evals/optimize_tagging.py --help"
    if command.startswith("make ") and command != "make help":
        target = command.split()[1]
        recipe = _make_recipe(root / "Makefile", target)
        nox = re.fullmatch(r"\$\(NOX\) (-s [\w-]+(?: -- .*)?)", recipe)
        assert nox, f"make {target}: recipe {recipe!r} is not a nox session"
        env = "ATTEST_BACKEND=stub " if target == "eval" else ""
        return env + (adapt("nox " + nox.group(1), root) or "")
    env, rest = re.fullmatch(r"((?:[A-Z_]+=\S+ +)*)(.*)", command).groups()  # type: ignore[union-attr]
    return env + re.sub(r"(?:^|(?<=[|;&] ))nox -s ([\w-]+)(?: -- ([^|;&]*))?", lambda m: _nox(m, root), rest)


def _nox(match: re.Match[str], root: Path) -> str:
    args = shlex.split(match.group(2) or "")
    return shlex.join(_session_command(root / "noxfile.py", match.group(1), args))


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree's tracked and unignored files, nothing else (no cache, no venv)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    root = tmp_path_factory.mktemp("fresh")
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTEST_") and k != "OLLAMA_HOST"}
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = f"{root / 'src'}{os.pathsep}{root}"
    return env


def test_the_docs_have_commands() -> None:
    commands = doc_commands()
    assert len(commands) >= 20, [c.text for c in commands]
    assert {c.doc for c in commands} >= {"README.md", "docs/commands.md", "examples/prompt-evals/README.md"}


def test_every_reference_page_is_read(tmp_path: Path) -> None:
    """A command on a new page under docs/ is run with the others, after README's and before the examples'."""
    for doc in ("README.md", "CONTRIBUTING.md", *EXAMPLES):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / doc).write_text(f"```sh\necho {doc}\n```\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    page = "# New\n\n```sh\npython -m evals.runs lisst\n```\n"
    (tmp_path / "docs" / "new-page.md").write_text(page, encoding="utf-8")
    found = [(c.doc, c.text) for c in doc_commands(tmp_path)]
    assert found[2] == ("docs/new-page.md", "python -m evals.runs lisst")
    assert [doc for doc, _ in found] == ["README.md", "CONTRIBUTING.md", "docs/new-page.md", *EXAMPLES]


@pytest.mark.slow
def test_every_documented_command_runs(fresh_copy: Path) -> None:
    failures = []
    for command in doc_commands(fresh_copy):
        adapted = adapt(command.text, fresh_copy)
        if adapted is None:
            continue
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", adapted],
            cwd=fresh_copy,
            env=_env(fresh_copy),
            capture_output=True,
            text=True,
            timeout=300,
        )
        allowed = VERDICT_EXITS if "compare" in adapted or "judge_check" in adapted else {0}
        if done.returncode not in allowed:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            failures.append(f"{command.doc}:{command.line}: `{command.text}` -> exit {done.returncode}: {tail}")
    assert not failures, "\n".join(failures)


def test_a_broken_command_is_caught(fresh_copy: Path, tmp_path: Path) -> None:
    """The guard: a documented command with a wrong option fails the run above."""
    adapted = adapt("python evals/run_tagging_eval.py --offline --no-such-option", fresh_copy)
    assert adapted is not None
    done = subprocess.run(["bash", "-c", adapted], cwd=fresh_copy, env=_env(fresh_copy), capture_output=True)
    assert done.returncode == 2


def test_nox_sessions_and_make_targets_are_translated(fresh_copy: Path) -> None:
    assert adapt("nox -s rescore", fresh_copy) == "python -m evals.rescore"
    assert adapt("nox -s eval-tagging -- --backend local", fresh_copy) == (
        "python evals/run_tagging_eval.py --backend stub"
    )
    assert adapt("make eval", fresh_copy) == "ATTEST_BACKEND=stub python evals/run_reaction_eval.py"
    assert adapt("make corpus-check", fresh_copy) == "python -m evals.corpus_check"
    assert adapt("make test", fresh_copy) is None
    assert adapt("ATTEST_TAG_PROMPT=p.json nox -s eval-tagging", fresh_copy) == (
        "ATTEST_TAG_PROMPT=p.json python evals/run_tagging_eval.py"
    )
