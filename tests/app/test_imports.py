"""What the application imports: no eval-only code, a cheap `import attest`, and `__all__` that holds."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "attest"
MODULES = sorted(
    ".".join(("attest", *p.relative_to(SRC).with_suffix("").parts)) for p in SRC.rglob("*.py") if p.stem != "__init__"
)

# Named outright so the guard's failure says why; the allowlist below catches the rest.
EVAL_ONLY = frozenset(
    {"evals", "dspy", "sklearn", "scikit_learn", "diskcache", "msgspec", "pytest", "numpy", "pandas", "scipy"}
)


def _requirement_name(spec: str) -> str:
    name = re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]
    return name.lower().replace("-", "_")


def allowed_modules() -> frozenset[str]:
    """Top-level modules src may import: the stdlib, attest, and pyproject's runtime and `local` dependencies,
    less those installed for the harness alone (diskcache and msgspec are runtime dependencies because evals/ ships
    in the wheel)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = [*project["dependencies"], *project["optional-dependencies"]["local"]]
    return (frozenset(sys.stdlib_module_names) | {"attest"} | {_requirement_name(s) for s in runtime}) - EVAL_ONLY


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level module) for every import statement and every importlib/__import__ call with a literal name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value.split(".")[0]))
    return found


def _is_dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id in ("__import__", "import_module")) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )


def forbidden_imports(paths: list[Path], allowed: frozenset[str] | None = None) -> list[str]:
    """`file:line: module` for every import in `paths` of an eval-only or undeclared module."""
    ok = (allowed or allowed_modules()) - EVAL_ONLY
    problems = []
    for path in paths:
        for line, module in sorted(_imported(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))):
            if module not in ok:
                problems.append(f"{path}:{line}: {module}")
    return problems


def test_src_imports_nothing_eval_only_or_undeclared() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) >= 10
    assert forbidden_imports(files) == []


def test_the_guard_catches_eval_only_imports(tmp_path: Path) -> None:
    bad = tmp_path / "leaky.py"
    bad.write_text(
        "from __future__ import annotations\n"
        "import json\n"
        "import dspy\n"
        "from sklearn.metrics import f1_score\n"
        "from evals.corpus.cases import TaggingCase\n"
        "from attest.chat import ask\n"
        "\n"
        "def _cache():\n"
        "    import diskcache\n"
        "    return diskcache.Cache('.')\n"
        "\n"
        "def _late():\n"
        "    import importlib\n"
        "    return importlib.import_module('evals.engine.scoring')\n"
        "\n"
        "def _undeclared():\n"
        "    import requests\n"
        "    return requests\n",
        encoding="utf-8",
    )
    assert forbidden_imports([bad]) == [
        f"{bad}:3: dspy",
        f"{bad}:4: sklearn",
        f"{bad}:5: evals",
        f"{bad}:9: diskcache",
        f"{bad}:14: evals",
        f"{bad}:17: requests",
    ]


def test_the_allowlist_is_the_declared_runtime() -> None:
    allowed = allowed_modules()
    assert {"pydantic", "httpx", "xllamacpp", "attest", "json", "argparse"} <= allowed
    assert not {"diskcache", "dspy", "evals"} & allowed


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(json.loads(done.stdout))


@pytest.mark.parametrize(
    "code", ["import attest", "import attest.cli", "import attest.errors", "import attest.backends.types"]
)
def test_import_attest_stays_cheap(code: str) -> None:
    loaded = _modules_after(code)
    assert "attest" in loaded
    assert not {"httpx", "pydantic", "xllamacpp", "evals", "diskcache"} & loaded


@pytest.mark.parametrize(
    "code",
    [
        "import attest.features",
        "import attest.feed",
        "import attest.backends.registry",
        "import attest.backends.stub",
        "import attest.backends.ollama",
        "import attest.backends.openai",
        "import attest.backends.local",
    ],
)
def test_offline_modules_do_not_import_httpx(code: str) -> None:
    loaded = _modules_after(code)
    assert not {"httpx", "xllamacpp", "evals", "diskcache"} & loaded


def test_the_probe_sees_what_is_imported() -> None:
    assert {"attest", "httpx", "pydantic"} <= _modules_after("import attest, httpx, pydantic")


@pytest.mark.parametrize("name", MODULES)
def test_every_name_in_all_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", [])
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not define"
    assert not [n for n in exported if n.startswith("_")]


def test_modules_with_public_functions_declare_all() -> None:
    lacking = [
        name for name in MODULES if name != "attest.errors" and not hasattr(importlib.import_module(name), "__all__")
    ]
    assert lacking == []


@pytest.mark.parametrize("code", ["import evals.compare", "import evals.runs"])
def test_read_only_command_lines_start_without_the_heavy_modules(code: str) -> None:
    """`compare`, `runs list` and `runs show` start within 2x `import numpy` (benchmarks/bench_cli.py) only while
    the app's pydantic models, scipy, the pages' renderers, the store's client and the tasks load when used."""
    loaded = _modules_after(code)
    assert "evals" in loaded
    assert not {"pydantic", "scipy", "jinja2", "matplotlib", "psycopg", "httpx"} & loaded
