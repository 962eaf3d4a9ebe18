"""The whole pipeline with the real local model (SmolLM2-135M in llama.cpp): generate, rescore, rerun from the cache.

Three cases per task keep it short: the model takes a few seconds per answer on a small machine.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from evals import rescore, tasks
from evals.cli import runner
from evals.engine.task import Task

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.usefixtures("local_servers")]

TASKS: dict[str, Task[Any]] = {t.name: t for t in tasks.all_tasks()}  # the registry's, not a copy


def _three_cases(task: Task[Any]) -> list[dict[str, Any]]:
    """Three dev cases copied from the real corpus (for explanation: two matches and one refusal)."""
    cases = [c for c in json.loads(task.corpus.read_text(encoding="utf-8")) if c["split"] == "dev"]
    if task.name != "explanation":
        return cases[:3]
    return [c for c in cases if not c["refuse"]][:2] + [c for c in cases if c["refuse"]][:1]


def _run(
    task: Task[Any], cache_dir: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], float]:
    argv = ["--backend", "local", "--cache-dir", str(cache_dir), "--corpus", str(corpus), "--split", "all", "--json"]
    start = time.perf_counter()
    code = runner.main(task, argv)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    return report, seconds


@pytest.mark.parametrize("name", TASKS)
def test_generate_rescore_and_rerun_with_the_local_model(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the gguf digest memo stays out of the user's cache
    task = TASKS[name]
    corpus = tmp_path / f"{name}_cases.json"
    corpus.write_text(json.dumps(_three_cases(task)), encoding="utf-8")
    cache_dir = tmp_path / "cache"

    cold, cold_s = _run(task, cache_dir, corpus, capsys)
    assert (cold["task"], cold["backend"], cold["model"]) == (name, "local", "SmolLM2-135M-Instruct.Q4_1")
    assert cold["digest"].startswith("sha256:")
    assert cold["n"] == 3 and cold["generate"] == {**cold["generate"], "samples": 3, "hits": 0, "misses": 3}
    assert all(0.0 <= r["score"] <= 1.0 and r["latency_s"] > 0.0 for r in cold["results"])
    run_dir = cache_dir / "runs" / cold["run_id"]
    assert json.loads((run_dir / "report.json").read_text(encoding="utf-8"))["overall"] == cold["overall"]

    assert rescore.main(["--cache-dir", str(cache_dir)]) == 0
    capsys.readouterr()
    rescored = json.loads((run_dir / "rescore.json").read_text(encoding="utf-8"))
    assert rescored["overall"] == cold["overall"]
    assert [r["score"] for r in rescored["results"]] == [r["score"] for r in cold["results"]]

    warm, warm_s = _run(task, cache_dir, corpus, capsys)
    assert warm["run_id"] != cold["run_id"]
    assert (warm["generate"]["hits"], warm["generate"]["misses"]) == (3, 0)
    assert warm["overall"] == cold["overall"]
    with capsys.disabled():
        print(f"\n{name}: cold {cold_s:.2f} s, warm {warm_s:.3f} s, warm/cold = {warm_s / cold_s:.3f}")
