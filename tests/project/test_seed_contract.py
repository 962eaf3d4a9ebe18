"""The design note's rules, pinned in the note's own words (issue 30).

The note (task corpora: a labelled set for every model-driven task) states its rules
in plain words; two of them broke while every test stayed green because nothing
checked them. Here each rule is one check, a function of a checkout's root that
returns the ways the tree breaks it, and one test runs it on this checkout and fails
quoting the rule. Beside each, a mutation test plants a violation in a copy of the
tree (or of a corpus) under tmp_path and asserts the same check fails: "a guard that
passes with the protected thing removed guards nothing".

Imports are read statically from the syntax tree of every file under evals/ and src/
(examples/ too where a rule names it): at module level, guarded (try/except, if,
`if TYPE_CHECKING:`), inside functions, and `importlib.import_module("x")` or
`__import__("x")` with a literal name. Nothing here imports dspy.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from evals import corpus_check

REPO = Path(__file__).resolve().parents[2]
OPTIMISER = "evals/optimize_tagging.py"
EVAL_MODULES = ("evals/tagging_eval.py", "evals/reaction_eval.py", "evals/explanation_eval.py")
CORPORA = {
    "tagging": "evals/tagging_cases.json",
    "reaction": "evals/reaction_cases.json",
    "explanation": "evals/explanation_cases.json",
}
Check = Callable[[Path], list[str]]


def holds(rule: str, problems: list[str]) -> None:
    """Fail, quoting the note's rule, when `problems` is not empty."""
    if problems:
        pytest.fail(f'the design note says: "{rule}"\nbroken here:\n  ' + "\n  ".join(problems), pytrace=False)


def breaks(rule: str, check: Check, root: Path, *named: str) -> None:
    """The contract test's check fails on `root`, quoting the rule and naming each of `named`."""
    with pytest.raises(pytest.fail.Exception) as failed:
        holds(rule, check(root))
    assert f'"{rule}"' in str(failed.value)
    for name in named:
        assert name in str(failed.value), str(failed.value)


# --- reading the tree ----------------------------------------------------------------------


def python_files(root: Path, *folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (root / folder).rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return _parse(path.read_text(encoding="utf-8"))


@functools.cache
def _parse(source: str) -> ast.Module:
    """Parsed once per distinct source: the copies share most files with the checkout (the trees are only read)."""
    return ast.parse(source)


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    parts = parts[1:] if parts[0] == "src" else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _from_module(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _dynamic(node: ast.Call) -> str | None:
    """The literal name given to importlib.import_module(...) or __import__(...), if any."""
    func = node.func
    named = (isinstance(func, ast.Name) and func.id in ("__import__", "import_module")) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )
    arg = node.args[0] if named and node.args else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def imports(root: Path, path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name imported from it or None) for every import in `path`, wherever it sits."""
    module = _module_name(root, path)
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _from_module(node, module, path.name == "__init__.py")
            yield from ((node.lineno, source, alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and (name := _dynamic(node)) is not None:
            yield node.lineno, name, None


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def definitions(path: Path, name: str) -> list[int]:
    """Lines where `path` defines `name`: a def or class anywhere, or an assignment to the bare name."""
    return [node.lineno for node in ast.walk(_tree(path)) if _defines(node, name)]


def _defines(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)


def _top_functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in _tree(path).body if isinstance(node, ast.FunctionDef)}


def _calls(node: ast.AST, name: str) -> bool:
    """Whether `node` calls `name` (a bare name or an attribute of that name)."""
    return any(
        isinstance(call, ast.Call)
        and ((isinstance(call.func, ast.Name) and call.func.id == name) or getattr(call.func, "attr", None) == name)
        for call in ast.walk(node)
    )


def _rel(root: Path, path: Path) -> str:
    return str(path.relative_to(root))


# --- 1. dspy ---------------------------------------------------------------------------------

DSPY = "Nothing under evals/ other than optimize_tagging.py imports dspy, and nothing under src/ may."


def check_dspy(root: Path) -> list[str]:
    """Every import of dspy outside the optimiser; and the optimiser, if it has none (it is the one that does)."""
    problems, optimiser_imports = [], False
    for path in python_files(root, "evals", "src"):
        for line, module, _ in imports(root, path):
            if _in_package(module, "dspy") and _rel(root, path) == OPTIMISER:
                optimiser_imports = True
            elif _in_package(module, "dspy"):
                problems.append(f"{_rel(root, path)}:{line} imports {module}")
    if not optimiser_imports:
        problems.append(f"{OPTIMISER} imports no dspy: the optimiser is the one module under evals/ that does")
    return problems


def test_dspy_is_imported_only_by_the_optimiser() -> None:
    holds(DSPY, check_dspy(REPO))


GUARDED = "\ntry:\n    import dspy  # planted\nexcept ImportError:\n    dspy = None\n"


def _plant_guarded_everywhere(root: Path) -> list[str]:
    """A guarded `import dspy` in every module under evals/ but the optimiser; returns their paths."""
    planted = [p for p in python_files(root, "evals") if _rel(root, p) != OPTIMISER]
    for path in planted:
        path.write_text(path.read_text(encoding="utf-8") + GUARDED, encoding="utf-8")
    return [f"{_rel(root, p)}:" for p in planted]


def test_the_dspy_rule_fails_on_a_guarded_import_in_any_evals_module(tree: Path) -> None:
    named = _plant_guarded_everywhere(tree)
    assert len(named) > 50 and "evals/engine/execute.py:" in named
    breaks(DSPY, check_dspy, tree, *named)
    assert len(check_dspy(tree)) == len(named)


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        pytest.param(
            "evals/cli/tagging_search.py",
            "def train_sample(",
            "def _late() -> object:\n    import dspy.teleprompt\n\n    return dspy\n\n\ndef train_sample(",
            id="in-function",
        ),
        pytest.param(
            "evals/engine/execute.py",
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\nif TYPE_CHECKING:\n    from dspy import Example\n",
            id="type-checking",
        ),
        pytest.param(
            "src/attest/features.py",
            "def tag_item(",
            "def _spy() -> object:\n    import importlib\n\n    return importlib.import_module('dspy')\n\n\n"
            "def tag_item(",
            id="src-dynamic",
        ),
        pytest.param(
            "src/attest/simulate.py",
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\n__import__('dspy.adapters')\n",
            id="src-dunder",
        ),
        pytest.param(OPTIMISER, "\nimport dspy\n", "\n", id="optimiser-without-dspy"),
    ],
)
def test_the_dspy_rule_fails_on_each_planted_import(tree: Path, where: str, old: str, new: str) -> None:
    replace(tree, where, old, new)
    breaks(DSPY, check_dspy, tree, where)


def test_the_dspy_rule_reads_words_not_imports_of_other_names(tree: Path) -> None:
    """Mentions of dspy that import nothing (a string, a docstring, dspy_fields, a `dspylike` module) pass."""
    text = '"""Talks about dspy."""\nimport dspylike\nfrom evals.tagging_eval import dspy_fields\nNAME = "dspy"\n'
    (tree / "evals" / "talk.py").write_text(text, encoding="utf-8")
    assert check_dspy(tree) == []


# --- 2. one gate -----------------------------------------------------------------------------

GATE = "the same gate() as tagging — imported, not copied."
GATE_HOME = "evals/tagging_eval.py"


def check_gate(root: Path) -> list[str]:
    """gate() is defined once, in evals/tagging_eval.py, and the other two eval modules import it from there."""
    return _one_definition(root, "gate", GATE_HOME, "evals.tagging_eval", EVAL_MODULES[1:])


def _one_definition(root: Path, name: str, home: str, module: str, importers: tuple[str, ...]) -> list[str]:
    found = [
        f"{_rel(root, p)}:{line}"
        for p in python_files(root, "evals", "src", "examples")
        for line in definitions(p, name)
    ]
    problems = (
        [] if len(found) == 1 and found[0].startswith(f"{home}:") else [f"{name} is defined at {found or 'none'}"]
    )
    for importer in importers:
        if not any((m, n) == (module, name) for _, m, n in imports(root, root / importer)):
            problems.append(f"{importer} does not import {name} from {module}")
    return problems


def test_gate_is_defined_once_and_imported() -> None:
    holds(GATE, check_gate(REPO))


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        pytest.param(
            "evals/reaction_eval.py",
            "from evals.tagging_eval import gate\n",
            "\n\ndef gate(*args: object, **kwargs: object) -> object:\n    return None\n",
            id="copied",
        ),
        pytest.param(
            "evals/explanation_eval.py",
            "from evals.tagging_eval import gate\n",
            "from evals.analysis.pairing import decide as gate\n",
            id="imported-from-elsewhere",
        ),
        pytest.param(
            "evals/engine/execute.py",
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\n\ndef _helper() -> None:\n    def gate() -> None:\n        pass\n",
            id="nested-copy",
        ),
    ],
)
def test_the_gate_rule_fails_on_a_second_gate(tree: Path, where: str, old: str, new: str) -> None:
    replace(tree, where, old, new)
    breaks(GATE, check_gate, tree, where)


# --- 3. one score_verdicts -----------------------------------------------------------------------

SCORE_VERDICTS = (
    "persona_eval.score_verdicts is moved to evals/reaction_eval.py and imported from there, so there is one definition"
)
PERSONA_EVAL = "examples/flows/persona_eval.py"


def check_score_verdicts(root: Path) -> list[str]:
    """score_verdicts is defined once, in evals/reaction_eval.py, and persona_eval imports it from there."""
    return _one_definition(root, "score_verdicts", "evals/reaction_eval.py", "evals.reaction_eval", (PERSONA_EVAL,))


def test_score_verdicts_is_defined_once_and_imported() -> None:
    holds(SCORE_VERDICTS, check_score_verdicts(REPO))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            "from evals.reaction_eval import score_verdicts\n",
            "\n\ndef score_verdicts(*args: object) -> dict[str, object]:\n    return {}\n",
            id="copied-back",
        ),
        pytest.param(
            "from evals.reaction_eval import score_verdicts\n",
            "from evals.reaction_eval import score_verdicts as _unused  # noqa: F401\n"
            "score_verdicts = lambda *args: {}  # noqa: E731\n",
            id="shadowed",
        ),
    ],
)
def test_the_score_verdicts_rule_fails_on_a_copy(tree: Path, old: str, new: str) -> None:
    replace(tree, PERSONA_EVAL, old, new)
    breaks(SCORE_VERDICTS, check_score_verdicts, tree, "score_verdicts")


# --- 4. the eval modules' shape ----------------------------------------------------------------

SHAPE = (
    "evals/reaction_eval.py and evals/explanation_eval.py mirror tagging_eval.py: load_cases(path, split), "
    "score_one(case, out) ..., evaluate(chat_json, cases, *, repeat, on_case) ... Each eval module exposes "
    "dspy_fields() → (input_names, output_names) and to_dspy_example(case) -> dict"
)
SIGNATURES = {  # name -> (positional parameters, keyword-only parameters)
    "load_cases": (("path", "split"), ()),
    "score_one": (("case", "out"), ()),
    "evaluate": (("chat_json", "cases"), ("repeat", "on_case")),
    "dspy_fields": ((), ()),
    "to_dspy_example": (("case",), ()),
}


def check_eval_modules(root: Path) -> list[str]:
    """Each eval module defines the five functions at module level, with the note's parameters, in __all__."""
    problems = []
    for module in EVAL_MODULES:
        functions, exported = _top_functions(root / module), _all(root / module)
        for name, wanted in SIGNATURES.items():
            if name not in functions:
                problems.append(f"{module} defines no {name}()")
            elif (found := _parameters(functions[name])) != wanted:
                problems.append(f"{module}: {name} takes {found}, not {wanted}")
            elif exported is not None and name not in exported:
                problems.append(f"{module}: {name} is not in __all__")
    return problems


def _parameters(node: ast.FunctionDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    args = node.args
    return tuple(a.arg for a in [*args.posonlyargs, *args.args]), tuple(a.arg for a in args.kwonlyargs)


def _all(path: Path) -> set[str] | None:
    for node in _tree(path).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return {e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)}
    return None


def test_each_eval_module_exposes_the_notes_functions() -> None:
    holds(SHAPE, check_eval_modules(REPO))


@pytest.mark.parametrize(
    ("where", "old", "new", "named"),
    [
        pytest.param(
            "evals/explanation_eval.py",
            "def to_dspy_example(",
            "def _to_dspy_example(",
            "no to_dspy_example",
            id="gone",
        ),
        pytest.param(
            "evals/reaction_eval.py",
            "    *,\n    repeat: int = 1,",
            "    repeat: int = 1,\n    *,",
            "evaluate takes",
            id="repeat-positional",
        ),
        pytest.param("evals/tagging_eval.py", '"score_one", ', "", "score_one is not in __all__", id="not-exported"),
    ],
)
def test_the_shape_rule_fails_on_a_missing_function(tree: Path, where: str, old: str, new: str, named: str) -> None:
    replace(tree, where, old, new)
    breaks(SHAPE, check_eval_modules, tree, where, named)


# --- 5. one renderer per task ------------------------------------------------------------------

RENDERERS = (
    "One renderer per task ... simulate.reaction_messages(persona, interests, title, summary) — the current _prompt, "
    "made public; react_to_item calls it. explain.explanation_messages(profile, title, summary) — lifted out of the "
    "closure; generate_explanation calls it."
)
RENDERED = [  # (app module, renderer, the production function that calls it, the eval module)
    ("features", "tag_messages", "tag_item", "evals/tagging_eval.py"),
    ("simulate", "reaction_messages", "react_to_item", "evals/reaction_eval.py"),
    ("explain", "explanation_messages", "generate_explanation", "evals/explanation_eval.py"),
]


def check_renderers(root: Path) -> list[str]:
    """Each renderer is public in its app module, the production function calls it, and so does the eval's render."""
    problems = []
    for app, renderer, caller, module in RENDERED:
        source = f"src/attest/{app}.py"
        functions = _top_functions(root / source)
        if renderer not in functions or renderer not in (_all(root / source) or {renderer}):
            problems.append(f"{source} has no public {renderer}()")
        if caller not in functions or not _calls(functions[caller], renderer):
            problems.append(f"{source}: {caller}() does not call {renderer}()")
        if not any((m, n) == (f"attest.{app}", renderer) for _, m, n in imports(root, root / module)):
            problems.append(f"{module} does not import {renderer} from attest.{app}")
        render = _top_functions(root / module).get("render")
        if render is None or not _calls(render, renderer):
            problems.append(f"{module}: render() does not call {renderer}()")
    return problems


def test_the_evals_render_through_the_public_renderers() -> None:
    holds(RENDERERS, check_renderers(REPO))


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        pytest.param(
            "evals/reaction_eval.py",
            "    return reaction_messages(case.persona, case.interests, case.title, case.summary)",
            '    return [{"role": "user", "content": case.title}]',
            id="eval-renders-its-own",
        ),
        pytest.param("src/attest/explain.py", "def explanation_messages(", "def _explanation_messages(", id="private"),
        pytest.param(
            "src/attest/simulate.py",
            "return ask(reaction_messages(persona, interests, title, summary), Reaction, chat_json, stub_answer=",
            'return ask([{"role": "user", "content": title}], Reaction, chat_json, stub_answer=',
            id="production-bypasses-it",
        ),
        pytest.param(
            "evals/tagging_eval.py",
            "from attest.features import ItemTags, tag_messages\n",
            "from attest.features import ItemTags\nfrom tests.fakes import tag_messages\n",
            id="another-tag-messages",
        ),
    ],
)
def test_the_renderer_rule_fails_when_a_renderer_is_bypassed(tree: Path, where: str, old: str, new: str) -> None:
    replace(tree, where, old, new)
    breaks(RENDERERS, check_renderers, tree, where)


# --- 6. the reaction families and the notes ---------------------------------------------------------

ADJACENT = (
    "adjacent-* (a real field next door — chemical engineering for the bench chemist, statistics for the ML "
    "engineer — labelled false)"
)
BAIT = "bait-* (generic AI-for-science prose, false)"
TERSE = "terse-* (a one-line summary that is nonetheless clearly on topic, true)"
FAMILY_VERDICTS = {"adjacent-": (ADJACENT, False), "bait-": (BAIT, False), "terse-": (TERSE, True)}
DEV_FAMILIES = "The dev split holds every bait-* and adjacent-* case"
NOTES = "note (the failure the case targets, in prose)"


def cases(root: Path, task: str) -> list[dict[str, Any]]:
    data = json.loads((root / CORPORA[task]).read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def check_family_verdict(prefix: str) -> Check:
    """Every reaction case whose id starts with `prefix` carries the note's label, whatever its family field."""
    wanted = FAMILY_VERDICTS[prefix][1]

    def check(root: Path) -> list[str]:
        found = [c for c in cases(root, "reaction") if c["id"].startswith(prefix)]
        wrong = [
            f"{CORPORA['reaction']}: case {c['id']} is labelled {json.dumps(c['verdict'])}"
            for c in found
            if c["verdict"] is not wanted
        ]
        return wrong if found else [f"{CORPORA['reaction']}: no {prefix}* case"]

    return check


def check_dev_families(root: Path) -> list[str]:
    return [
        f"{CORPORA['reaction']}: case {c['id']} is in {c['split']}"
        for c in cases(root, "reaction")
        if c["id"].startswith(("bait-", "adjacent-")) and c["split"] != "dev"
    ]


def check_notes(root: Path) -> list[str]:
    return [
        f"{CORPORA[task]}: case {c.get('id')} has no note"
        for task in CORPORA
        for c in cases(root, task)
        if not isinstance(c.get("note"), str) or not c["note"].strip()
    ]


@pytest.mark.parametrize("prefix", FAMILY_VERDICTS)
def test_each_family_of_the_note_carries_its_label(prefix: str) -> None:
    holds(FAMILY_VERDICTS[prefix][0], check_family_verdict(prefix)(REPO))


def test_the_dev_split_holds_every_bait_and_adjacent_case() -> None:
    holds(DEV_FAMILIES, check_dev_families(REPO))


def test_every_case_has_a_note() -> None:
    holds(NOTES, check_notes(REPO))


def plant_case(root: Path, task: str, like: str, **changes: Any) -> str:
    """A copy of the first case whose id starts with `like`, changed; returns its id."""
    data = cases(root, task)
    planted = {**next(c for c in data if c["id"].startswith(like)), **changes}
    (root / CORPORA[task]).write_text(json.dumps([*data, planted], indent=2), encoding="utf-8")
    return str(planted["id"])


@pytest.mark.parametrize(
    ("prefix", "changes"),
    [
        pytest.param("terse-", {"id": "terse-x", "verdict": False}, id="terse-false"),
        pytest.param("terse-", {"id": "terse-off-x", "family": "brief-off", "verdict": False}, id="terse-off-again"),
        pytest.param("adjacent-", {"id": "adjacent-x", "verdict": True}, id="adjacent-true"),
        pytest.param("bait-", {"id": "bait-x", "family": "crossover", "verdict": True}, id="bait-true"),
    ],
)
def test_the_family_rules_fail_on_a_case_with_the_other_label(
    corpus: Path, prefix: str, changes: dict[str, Any]
) -> None:
    planted = plant_case(corpus, "reaction", prefix, **changes)
    breaks(FAMILY_VERDICTS[prefix][0], check_family_verdict(prefix), corpus, f"case {planted} ")


@pytest.mark.parametrize("family", ["bait-", "adjacent-"])
def test_the_dev_rule_fails_on_a_case_in_train(corpus: Path, family: str) -> None:
    planted = plant_case(corpus, "reaction", family, id=f"{family}x", split="train")
    breaks(DEV_FAMILIES, check_dev_families, corpus, f"case {planted} ")


@pytest.mark.parametrize("note", ["", "   ", None])
def test_the_note_rule_fails_on_a_case_without_one(corpus: Path, note: str | None) -> None:
    planted = plant_case(corpus, "explanation", "", id="no-note", note=note)
    breaks(NOTES, check_notes, corpus, f"case {planted} ")


def test_corpus_check_refuses_a_planted_false_terse_case_in_one_line(corpus: Path) -> None:
    """The note's rules by id prefix are corpus-check's too: one line naming the file, the case and the field."""
    item = {"title": "Planted: a one-line item", "summary": "Planted."}
    plant_case(corpus, "reaction", "terse-", id="terse-planted", verdict=False, **item)
    out = io.StringIO()
    with redirect_stdout(out):
        code = corpus_check.main(["--reaction", str(corpus / CORPORA["reaction"]), "--skip-targets"])
    lines = [line for line in out.getvalue().splitlines() if line.startswith(str(corpus))]
    assert code == 1
    assert lines == [
        f"{corpus / CORPORA['reaction']}: case terse-planted: field 'verdict': is false, but terse-* cases are a "
        "one-line summary that is nonetheless clearly on the reader's topic, labelled true; relabel it or rename it "
        "out of terse-* and change its family (a one-line item labelled false belongs in 'brief-off')"
    ]


# --- 7. the corpora's size, ids, splits and classes -------------------------------------------------

SHAPE_OF_CORPORA = "Three corpora in evals/, each ≥ 40 cases, unique ids, both splits, both classes per split"


def _classes(task: str, case: dict[str, Any]) -> set[str]:
    if task == "tagging":
        return set(case["tags"])  # a tagging class is a tag: each split holds at least two
    return {f"{task}={case['verdict' if task == 'reaction' else 'refuse']}"}


def check_corpora(root: Path) -> list[str]:
    problems = []
    for task, where in CORPORA.items():
        found = cases(root, task)
        ids = [c["id"] for c in found]
        if len(found) < 40:
            problems.append(f"{where}: {len(found)} cases")
        problems += [f"{where}: id {i} is used {ids.count(i)} times" for i in sorted(set(ids)) if ids.count(i) > 1]
        for split in ("train", "dev"):
            classes = set().union(*(_classes(task, c) for c in found if c["split"] == split))
            if len(classes) < 2:
                problems.append(f"{where}: split {split} holds {sorted(classes) or 'no case'}")
    return problems


def test_each_corpus_is_large_unique_and_has_both_splits_and_classes() -> None:
    holds(SHAPE_OF_CORPORA, check_corpora(REPO))


def _keep(task: str, keep: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Callable[[Path], None]:
    def plant(root: Path) -> None:
        (root / CORPORA[task]).write_text(json.dumps(keep(cases(root, task))), encoding="utf-8")

    return plant


def _all_true_in_dev(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**c, "verdict": True} if c["split"] == "dev" else c for c in data]


@pytest.mark.parametrize(
    ("plant", "named"),
    [
        pytest.param(_keep("explanation", lambda d: d[:39]), "explanation_cases.json: 39 cases", id="39-cases"),
        pytest.param(_keep("tagging", lambda d: [*d, d[0]]), "tagging_cases.json: id", id="duplicate-id"),
        pytest.param(
            _keep("explanation", lambda d: [{**c, "split": "train"} for c in d]), "split dev holds", id="one-split"
        ),
        pytest.param(_keep("reaction", _all_true_in_dev), "split dev holds ['reaction=True']", id="one-class"),
    ],
)
def test_the_corpus_rule_fails_on_a_small_or_one_sided_corpus(
    corpus: Path, plant: Callable[[Path], None], named: str
) -> None:
    plant(corpus)
    breaks(SHAPE_OF_CORPORA, check_corpora, corpus, named)


# --- 8. src/ imports nothing from evals/ ---------------------------------------------------------

SRC_IMPORTS = "src/ imports nothing new"


def check_src_imports(root: Path) -> list[str]:
    """src/ imports nothing from evals/ (the note's 'nothing new' is DESIGN.md's rule: never evals)."""
    return [
        f"{_rel(root, path)}:{line} imports {module} (DESIGN.md: nothing under src/ imports evals/)"
        for path in python_files(root, "src")
        for line, module, _ in imports(root, path)
        if _in_package(module, "evals")
    ]


def test_src_imports_nothing_from_evals() -> None:
    holds(SRC_IMPORTS, check_src_imports(REPO))


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        pytest.param(
            "src/attest/cli.py",
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\ntry:\n    from evals.tagging_eval import gate\nexcept ImportError:\n"
            "    gate = None\n",
            id="guarded",
        ),
        pytest.param(
            "src/attest/explain.py",
            "def generate_explanation(",
            "def _late() -> object:\n    import evals.store\n\n    return evals.store\n\n\ndef generate_explanation(",
            id="in-function",
        ),
    ],
)
def test_the_src_rule_fails_on_an_import_of_evals(tree: Path, where: str, old: str, new: str) -> None:
    replace(tree, where, old, new)
    breaks(SRC_IMPORTS, check_src_imports, tree, where)


# --- the copies the violations are planted in ------------------------------------------------------

_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of evals/, src/ and examples/, where the checks find nothing until a violation is planted."""
    for folder in ("evals", "src", "examples"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=_SKIP)
    return tmp_path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A copy of the three corpora under tmp_path/evals/."""
    (tmp_path / "evals").mkdir()
    for where in CORPORA.values():
        shutil.copy(REPO / where, tmp_path / where)
    return tmp_path


def replace(root: Path, where: str, old: str, new: str) -> None:
    """Plant a violation: replace the first `old` in `where` (which must hold it) with `new`."""
    path = root / where
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{where} no longer holds {old!r}: update the planted violation"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(
    "check",
    [
        check_dspy,
        check_gate,
        check_score_verdicts,
        check_eval_modules,
        check_renderers,
        check_dev_families,
        check_notes,
        check_corpora,
        check_src_imports,
        *map(check_family_verdict, FAMILY_VERDICTS),
    ],
)
def test_each_check_passes_on_an_unchanged_copy(tree: Path, check: Check) -> None:
    """The copies are faithful: what a mutation test sees failing is the planted violation, not the copying."""
    assert check(tree) == []
