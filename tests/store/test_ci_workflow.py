"""examples/ci/github-actions.yml is checked, not just shipped (issue 34, item 2): its `run:` steps run
here in order, with bash and the workflow's env, against a real PostgreSQL (pgserver) as the team's
store and a fake OpenAI-compatible model server. A push to main records; a pull request on the same
model passes and appends each task's comparison to the step summary; one whose model answers worse
fails on regress.

Not run here: the `uses:` steps (checkout, setup-python) and the install step, whose extras this
test's environment already has (no package registry is reached from a test)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.reliability.fakeserver import FakeServer

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(secrets|vars)\.(\w+)\s*\}\}")
CONDITION = re.compile(r"github\.event_name == '(\w+)'")


def _gold() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((ROOT / "evals" / "reaction_cases.json").read_text(encoding="utf-8"))
    return cases


def _answer(cases: list[dict[str, Any]]) -> Any:
    """Reaction answers: right for `good-model`, every verdict flipped for `worse-model`; other tasks get the same
    JSON (which their scorers refuse, equally for both models)."""

    def answer(body: dict[str, Any]) -> str:
        user = str((body.get("messages") or [{}])[-1].get("content", ""))
        case = next((c for c in cases if c["title"] in user and c["interests"] in user), None)
        verdict = bool(case and case["verdict"])
        if body.get("model") == "worse-model":
            verdict = not verdict
        title = case["title"] if case else "the item"
        return json.dumps({"verdict": verdict, "confidence": 4, "reasoning": f"The item {title!r} fits or not."})

    return answer


def _steps(event: str) -> list[dict[str, Any]]:
    """The job's `run:` steps that run on `event`, in order (the install step aside)."""
    (job,) = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"].values()
    chosen = []
    for step in job["steps"]:
        if "run" not in step or step.get("id") == "install":
            continue
        condition = step.get("if")
        if condition is not None:
            match = CONDITION.fullmatch(condition.strip())
            assert match, f"this test reads only github.event_name == '...' conditions, not {condition!r}"
            if match.group(1) != event:
                continue
        chosen.append(step)
    return chosen


def _env(settings: dict[str, str], github: dict[str, str]) -> dict[str, str]:
    """The workflow's env, its ${{ secrets.X }} / ${{ vars.X }} filled from `settings`, over what a runner sets."""
    env = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["env"]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "OLLAMA_", "GITHUB_"))}
    venv_bin = str(Path(sys.executable).parent)
    filled = {k: EXPRESSION.sub(lambda m: settings.get(m.group(2), ""), str(v)) for k, v in env.items()}
    return {**base, "PATH": f"{venv_bin}{os.pathsep}{base['PATH']}", "GITHUB_ACTIONS": "true", **github, **filled}


def _run_job(event: str, env: dict[str, str]) -> tuple[int, str]:
    """Each step with `bash --noprofile --norc -eo pipefail` (the `shell: bash` runner), stopping at a failure."""
    log = ""
    for step in _steps(event):
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        log += f"--- {step.get('name')}\n{done.stdout}{done.stderr}"
        if done.returncode != 0:
            return done.returncode, log
    return 0, log


def test_the_workflow_records_on_main_and_fails_a_pull_request_that_regresses(pg_url: str, tmp_path: Path) -> None:
    assert yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))[True] == {  # `on:` reads as True in YAML 1.1
        "pull_request": None,
        "push": {"branches": ["main"]},
    }
    summary = tmp_path / "step-summary.md"
    settings = {"ATTEST_STORE": pg_url, "ATTEST_OPENAI_API_KEY": "sk-test", "ATTEST_MODEL": "good-model"}
    with FakeServer(_answer(_gold())) as server:
        server.models = ["good-model", "worse-model"]
        settings["ATTEST_OPENAI_BASE_URL"] = server.url
        push = {"GITHUB_EVENT_NAME": "push", "GITHUB_REF_NAME": "main", "ATTEST_CACHE_DIR": str(tmp_path / "c1")}
        code, log = _run_job("push", _env(settings, push))
        assert code == 0, log
        assert "Compare" not in log  # a push only runs and records
        asked = server.count
        assert asked > 0
        pr = {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_REF_NAME": "7/merge",
            "GITHUB_HEAD_REF": "same-model",
            "GITHUB_STEP_SUMMARY": str(summary),
            "ATTEST_CACHE_DIR": str(tmp_path / "c2"),  # a fresh runner: answers come from the team's store
        }
        code, log = _run_job("pull_request", _env(settings, pr))
        assert code == 0, log
        assert server.count == asked  # every answer was in the store
        first = summary.read_text(encoding="utf-8")
        for task in ("tagging", "reaction", "explanation"):
            assert f"### {task}: **inconclusive**" in first, first
        worse = {**pr, "GITHUB_HEAD_REF": "worse-model", "ATTEST_CACHE_DIR": str(tmp_path / "c3")}
        code, log = _run_job("pull_request", _env({**settings, "ATTEST_MODEL": "worse-model"}, worse))
    assert code == 1, log
    assert "::error::reaction regressed against main" in log, log
    text = summary.read_text(encoding="utf-8")
    assert text.startswith(first) and "### reaction: **regress**" in text[len(first) :]
    assert "<details><summary>Regressed (" in text
