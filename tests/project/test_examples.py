"""The flows example runs the production flow and scores it with the one score_verdicts."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERSONA_EVAL = ROOT / "examples" / "flows" / "persona_eval.py"


def test_persona_eval_prints_metrics_for_both_personas() -> None:
    proc = subprocess.run(
        [sys.executable, str(PERSONA_EVAL), "--backend", "stub"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["persona", "precision", "recall", "auc", "auc(conf)"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert set(rows) == {"chemist", "ml-engineer"}
    for values in rows.values():
        assert all(0.0 <= float(v) <= 1.0 for v in values)


def test_persona_eval_imports_score_verdicts_instead_of_defining_it() -> None:
    tree = ast.parse(PERSONA_EVAL.read_text(encoding="utf-8"))
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    imported = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "score_verdicts" not in defined
    assert ("evals.reaction_eval", "score_verdicts") in imported
    assert ("attest.feed", "simulate_ratings") in imported
