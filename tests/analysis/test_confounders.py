"""Every input of a score is a confounder or is made equal (issue 31, item 1), on real run records.

Runs are made by the one loop (`tests/recorded_runs.record`, a fake model through the
real cache and run store) the way a code change makes them: a scorer edited between two
runs, a user-message template changed together with the corpus and the model, the
`local` backend's server settings beside a stub run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from attest.backends.types import DEFAULT_OPTIONS, Message
from evals import tagging_eval
from evals.analysis.pairing import decide, load_run
from evals.corpus.cases import TaggingCase
from evals.render.comparison_markdown import to_markdown
from evals.store.records import DirStore
from tests.cli.test_compare import _offline, run_compare
from tests.recorded_runs import corpus_ids, record, write_corpus


def _lenient(case: TaggingCase, out: str) -> dict[str, Any]:
    """tagging's scorer made 0.25 more lenient: an edit to the scorer's source between two runs."""
    found = tagging_eval.score_one(case, out)
    return {**found, "score": min(1.0, found["score"] + 0.25)}


def _user_template_changed(case: TaggingCase) -> list[Message]:
    """The user-message template changed in code (the system prompt is untouched)."""
    messages = tagging_eval.render(case)
    return [*messages[:-1], {"role": "user", "content": messages[-1]["content"] + "\n\nTag this item."}]


def _scorer_pair(tmp_path: Path) -> tuple[Path, str, str]:
    """Two runs of one model on one corpus, answers byte for byte the same; the candidate scored leniently."""
    corpus = write_corpus(tmp_path / "tagging_cases.json", 40)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, ids[:8], model="same")
    cand = record(cache, corpus, ids[:8], model="same", score_one=_lenient)
    return cache, base, cand


def test_a_scorer_only_change_is_re_scored_with_one_scorer_and_never_ships(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, base, cand = _scorer_pair(tmp_path)
    store = DirStore(cache / "runs")
    before = [store.report(r) for r in (base, cand)]
    assert before[0] is not None and before[1] is not None and before[1].overall > before[0].overall + 0.15
    out = run_compare(capsys, cache, base, cand)
    assert out.code == 3, out
    assert "made equal  scorer: the runs were scored by different scorers" in out.out
    assert "re-scored from their cached answers with today's" in out.out
    data = run_compare(capsys, cache, base, cand, "--json").json()
    assert data["difference"]["mean"] == 0.0 and data["made_equal"] and data["exit_code"] == 3
    assert data["withheld"] is None  # decided, on one scorer: nothing differs any more
    assert "**Made equal:** scorer:" in run_compare(capsys, cache, base, cand, "--markdown").out
    # the same records with the scorer difference unrecorded: the lenient scores alone ship, as the audit found
    forged = store.manifest(cand).provenance.replace(
        scorer_fingerprint=store.manifest(base).provenance.scorer_fingerprint
    )
    store.save(cand, "manifest", store.manifest(cand).replace(provenance=forged))
    assert run_compare(capsys, cache, base, cand).code == 0


def test_a_scorer_change_whose_answers_are_gone_is_inconclusive_naming_how_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, base, cand = _scorer_pair(tmp_path)
    shutil.rmtree(cache / "responses")  # pruned
    out = run_compare(capsys, cache, base, cand, "--json")
    data = out.json()
    assert out.code == 3 and data["verdict"] == "inconclusive" and data["measured_verdict"] == "ship"
    assert "scored by different scorers" in data["withheld"]
    assert f"40 of 40 samples of run {base} and 40 of 40 samples of run {cand} are not in the cache" in data["withheld"]


def test_the_gate_withholds_a_scorer_change_too(tmp_path: Path) -> None:
    cache, base, cand = _scorer_pair(tmp_path)
    store = DirStore(cache / "runs")
    x, decision = decide(load_run(store, base), load_run(store, cand), margin=0.0)
    assert decision.verdict == x.verdict == "inconclusive" and "different scorers" in x.withheld


def _template_corpus_model_pair(tmp_path: Path, **base_kw: Any) -> tuple[Path, str, str]:
    """A baseline; then the template changed, one dev case added and the model changed, as in the audit."""
    corpus = write_corpus(tmp_path / "tagging_cases.json", 20)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, ids[:6], model="base", **base_kw)
    bigger = write_corpus(tmp_path / "tagging_cases.json", 21)
    cand = record(cache, bigger, corpus_ids(bigger), model="cand", render=_user_template_changed)
    return cache, base, cand


@pytest.mark.parametrize("extra", [(), ("--allow-split-mismatch",)], ids=["plain", "allow-split-mismatch"])
def test_a_template_change_hidden_by_a_corpus_and_model_change_is_confounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...]
) -> None:
    cache, base, cand = _template_corpus_model_pair(tmp_path)
    out = run_compare(capsys, cache, base, cand, *extra)
    assert out.code == 3, out
    assert "differs     confounded: prompt, model differ" in out.out
    assert "rendered requests: 20 shared case(s) -> 20 differ" in out.out
    assert "INCONCLUSIVE: confounded: prompt and model both differ" in out.out


def test_a_corpus_change_alone_is_not_a_prompt_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "tagging_cases.json", 20)
    cache = tmp_path / "cache"
    base = record(cache, corpus, [], model="base")
    bigger = write_corpus(tmp_path / "tagging_cases.json", 21)
    cand = record(cache, bigger, corpus_ids(bigger), model="cand")
    out = run_compare(capsys, cache, base, cand)
    assert out.code == 0 and "differs     the model only" in out.out, out


def test_an_older_run_without_per_case_requests_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache, base, cand = _template_corpus_model_pair(tmp_path)
    path = cache / "runs" / base / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["request_sha256"]  # as a run recorded before per-case requests were
    path.write_text(json.dumps(data), encoding="utf-8")
    out = run_compare(capsys, cache, base, cand, "--accept-mixed", "--json")
    assert out.code == 3
    assert "the baseline recorded no per-case requests" in out.json()["withheld"]


def test_a_prompt_file_whose_rendered_requests_are_identical_is_no_prompt_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "tagging_cases.json", 20)
    ids = corpus_ids(corpus)
    cache = tmp_path / "cache"
    base = record(cache, corpus, [], model="base")
    cand = record(cache, corpus, ids[:14], model="cand")
    path = cache / "runs" / cand / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["provenance"]["tag_prompt_sha256"] = "a" * 64  # another file, rendering the same requests
    data["provenance"]["prompt_fingerprint"] = "b" * 64
    path.write_text(json.dumps(data), encoding="utf-8")
    out = run_compare(capsys, cache, base, cand)
    assert out.code == 0 and "differs     the model only" in out.out, out


def test_stub_against_local_is_a_change_of_model_alone_and_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    stub = _offline(tagging_eval.TASK, cache, "--split", "dev")
    ids = corpus_ids(tagging_eval.CORPUS)
    server = {"servers": 2, "slots": 1, "threads": 1}
    local = record(
        cache, tagging_eval.CORPUS, ids, model="SmolLM2", backend="local", options={**DEFAULT_OPTIONS, "server": server}
    )
    out = run_compare(capsys, cache, stub, local)
    assert out.code == 0, out
    assert "differs     the model only" in out.out
    assert 'server: (none) -> {"servers": 2, "slots": 1, "threads": 1}' in out.out
    again = record(
        cache,
        tagging_eval.CORPUS,
        ids,
        model="SmolLM2",
        backend="local",
        options={**DEFAULT_OPTIONS, "temperature": 0.7, "server": {**server, "slots": 4}},
    )
    mixed = run_compare(capsys, cache, local, again)
    assert mixed.code == 3 and "confounded: model, options differ" in mixed.out  # server settings are the model's


def test_under_all_the_difference_line_prints_the_holm_p_beside_its_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, base, cand = _scorer_pair(tmp_path)
    out = run_compare(capsys, cache, base, cand)
    assert "Holm" not in out.out
    from evals.analysis.comparison import compare_all
    from evals.analysis.pairing import pair

    store = DirStore(cache / "runs")
    runs = pair(load_run(store, base), load_run(store, cand))
    (x,) = compare_all([runs], notes=[("made equal by hand",)])
    from evals.render.comparison_text import to_text

    line = next(line for line in to_text(x).splitlines() if line.startswith("difference"))
    assert "(97.5% interval); Holm-adjusted p = " in line and "over 1" in line
    assert "made equal by hand" in to_markdown([x])


def test_runs_with_no_shared_case_are_refused_in_one_line_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "tagging_cases.json", 8, train=8)
    cache = tmp_path / "cache"
    base = record(cache, corpus, [], model="base", split="dev")
    cand = record(cache, corpus, [], model="cand", split="train", score_one=_lenient)  # a re-score is never tried
    out = run_compare(capsys, cache, base, cand, "--allow-split-mismatch")
    assert out.code == 1 and out.out == "" and out.err.count("\n") == 1
    assert f"runs {base} and {cand} share no case id" in out.err
