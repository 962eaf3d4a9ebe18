"""Hostile records and paths: a run directory, a setting or an option naming a FIFO, a device or a huge
file, and records with wrong inner types, out-of-range values or another run's id. Each is refused in
one line (or skipped with one line) within a bounded time; nothing hangs and no run is confused with
another. Every command runs in this process, bounded by pytest-timeout."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from time import time_ns
from typing import Any

import pytest

from attest.cli import main as attest_main
from attest.files import FileReadError, read_bounded
from evals import compare, reaction_eval, rescore, runs, tagging_eval
from tests.cli.test_runs import cli, eval_run, one_line_error, rescore_cli

pytestmark = pytest.mark.timeout(120)


# --- the bounded reader ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "over-cap"])
def test_the_bounded_reader_refuses_what_is_not_a_small_regular_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "f"
    if kind == "fifo":
        os.mkfifo(path)  # an open for reading without O_NONBLOCK waits here for a writer, forever
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"x" * 101)
    with pytest.raises(FileReadError) as caught:
        read_bounded(path, 100, todo="do something")
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and message.endswith("; do something") and "\n" not in message
    assert "FIFO" in message if kind == "fifo" else True
    assert "over the 100-byte cap" in message if kind == "over-cap" else True


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_tag_file_and_tag_prompt_setting_refuse_a_fifo_or_device(
    tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(_fifo(tmp_path / "p")) if target == "fifo" else target
    assert attest_main(["tag", "--backend", "stub", "--file", path]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"attest: error: {path}: is a ") and err.count("\n") == 1, err
    monkeypatch.setenv("ATTEST_TAG_PROMPT", path)
    assert attest_main(["tag", "--backend", "stub", "A title", "A summary"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"attest: error: ATTEST_TAG_PROMPT={path}: is a ") and err.count("\n") == 1, err


def test_tag_file_dash_still_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO('{"title": "Rust 2.0 released", "summary": "A compiler."}\n'))
    assert attest_main(["tag", "--backend", "stub", "--file", "-"]) == 0
    assert capsys.readouterr().out.startswith('{"tags": [')


def _manifest_path(cache: Path, run_id: str) -> Path:
    return cache / "runs" / run_id / "manifest.json"


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_a_recorded_corpus_path_naming_a_fifo_or_device_is_not_read(
    tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    first = eval_run(reaction_eval.TASK, cache, capsys)
    second = eval_run(reaction_eval.TASK, cache, capsys)
    corpus = str(_fifo(tmp_path / "corpus")) if target == "fifo" else target
    for run_id in (first, second):
        _edit(_manifest_path(cache, run_id), lambda d: d["provenance"].update(corpus=corpus))
    assert compare.main(["--cache-dir", str(cache), first, second]) in (0, 3)  # families are display only
    capsys.readouterr()
    code, _, err = rescore_cli(cache, capsys, "--run", second)
    assert code == 1
    one_line_error(err, "rescore")
    assert f"{corpus}: is a " in err


def test_a_fifo_lock_does_not_hang_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    run_id = eval_run(reaction_eval.TASK, cache, capsys)
    lock = cache / "runs" / run_id / ".lock"
    lock.unlink(missing_ok=True)
    _fifo(lock)
    _edit(_manifest_path(cache, run_id), lambda d: d.update(status="failed"))
    code, out, err = cli(cache, capsys, "prune", "--incomplete")
    assert code == 1 and out.startswith(f"would remove {run_id}") is False
    one_line_error(err, "runs")
    assert str(lock) in err and "FIFO" in err


# --- records validated in full on read ------------------------------------------------------------


def _report_path(cache: Path, run_id: str) -> Path:
    return cache / "runs" / run_id / "report.json"


HOSTILE = {
    "created-huge": ("manifest", lambda d: d.update(created=1e308), "created"),
    "created-nan": ("manifest", lambda d: d.update(created=float("nan")), "created"),
    "negative-sample": ("manifest", lambda d: d["samples"][0].update(sample=-1), "samples[0].sample"),
    "result-score-string": ("report", lambda d: d["results"][0].update(score="1"), "results"),
    "result-id-list": ("report", lambda d: d["results"][0].update(id=["x"]), "results"),
    "result-errors-int": ("report", lambda d: d["results"][0].update(errors=3), "results"),
    "overall-inf": ("report", lambda d: d.update(overall=float("inf")), "overall"),
    "negative-n": ("report", lambda d: d.update(n=-4), "n"),
    "huge-label": ("manifest", lambda d: d.update(label="x" * 5000), "label"),
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_record_is_one_line_naming_the_run_and_field(
    tmp_path: Path, attack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name, change, field = HOSTILE[attack]
    cache = tmp_path / "cache"
    run_id = eval_run(reaction_eval.TASK, cache, capsys)
    _edit(cache / "runs" / run_id / f"{name}.json", change)
    code, _, err = cli(cache, capsys, "show", run_id)
    assert code == 1
    one_line_error(err, "runs")
    assert run_id in err and f"field {field}" in err
    code, out, _ = cli(cache, capsys, "list", "--json")
    assert code == 0 and json.loads(out)[0]["status"] == "unreadable"
    code, out, _ = cli(cache, capsys, "prune", "--incomplete")
    assert f"would remove {run_id}" in out


def test_a_nan_margin_in_a_decision_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    base, cand = eval_run(reaction_eval.TASK, cache, capsys), eval_run(reaction_eval.TASK, cache, capsys)
    decision = {
        "schema_version": 1, "baseline_run": base, "candidate_run": cand, "margin": float("nan"),
        "verdict": "ship", "mean_difference": 0.1, "interval": [0.0, 0.2], "p_value": 0.01, "n": 3,
        "decided_at": 1.7e9,
    }  # fmt: skip
    (cache / "runs" / cand / "decision.json").write_text(json.dumps(decision), encoding="utf-8")
    code, out, err = rescore_cli(cache, capsys, "--run", cand)
    assert "internal error" not in err
    assert code == 1 or "margin" in out
    assert "margin" in err + out and cand in err + out


def test_a_huge_record_is_refused_by_its_size_before_it_is_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    run_id = eval_run(reaction_eval.TASK, cache, capsys)
    path = _manifest_path(cache, run_id)
    with path.open("r+b") as handle:
        handle.truncate(33 << 20)  # sparse: a 33 MiB manifest (a 400 MiB label) costs no disk here
    code, out, _ = cli(cache, capsys, "list")
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith(run_id)]
    assert "unreadable" in row and "over the" in row and "cap" in row


# --- a copied run directory (id mismatch) ----------------------------------------------------------


def test_a_copied_run_never_stands_for_the_run_whose_id_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    original = eval_run(tagging_eval.TASK, cache, capsys)
    copy = original[:-8] + "ffffffff"
    shutil.copytree(cache / "runs" / original, cache / "runs" / copy)
    code, out, err = cli(cache, capsys, "show", copy)
    assert code == 1 and original not in out
    one_line_error(err, "runs")
    assert "copied" in err
    assert compare.main(["--cache-dir", str(cache), original, copy]) == 1
    assert "copied" in capsys.readouterr().err
    before = (cache / "runs" / original / "rescore.json").exists()
    code, out, err = rescore_cli(cache, capsys, "--all")
    assert code == 0 and not before
    assert (cache / "runs" / original / "rescore.json").exists()
    assert not (cache / "runs" / copy / "rescore.json").exists()
    rescored = json.loads((cache / "runs" / original / "rescore.json").read_text(encoding="utf-8"))
    assert rescored["run_id"] == original
    code, out, _ = cli(cache, capsys, "list", "--json")
    assert {r["run_id"]: r["status"] for r in json.loads(out)} == {original: "complete", copy: "unreadable"}


def test_rescore_all_skips_an_unreadable_run_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    good = eval_run(reaction_eval.TASK, cache, capsys)
    bad = eval_run(tagging_eval.TASK, cache, capsys)
    _edit(_report_path(cache, bad), lambda d: d["results"][0].update(score="high"))
    _edit(_manifest_path(cache, bad), lambda d: d["samples"][0].update(case="no-such-case"))
    code, out, err = rescore_cli(cache, capsys, "--all")
    assert code == 1, err  # not every run was re-scored
    assert good in out and "re-scored 1 run(s)" in out
    (line,) = [line for line in err.splitlines() if bad in line]
    assert line.startswith("rescore: skipped ")
    assert rescore.main(["--cache-dir", str(cache), "--run", bad]) == 1
    capsys.readouterr()
    code, out, _ = cli(cache, capsys, "prune", "--incomplete")
    assert f"would remove {bad}" in out and good not in out
    assert runs.main(["--cache-dir", str(cache), "prune", "--incomplete", "--yes"]) == 0
    assert not (cache / "runs" / bad).exists() and (cache / "runs" / good).exists()


def test_show_json_escapes_what_text_output_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    run_id = eval_run(reaction_eval.TASK, cache, capsys)
    hostile = "m1\u009b31m\u202eevil\x7f\u2028\U000e0041"
    _edit(_manifest_path(cache, run_id), lambda d: d.update(model=hostile, label=hostile))
    code, out, _ = cli(cache, capsys, "show", run_id, "--json")
    assert code == 0
    assert not any(ch in out for ch in "\u009b\u202e\x7f\u2028\U000e0041")
    assert "\\u009b" in out and "\\u202e" in out
    assert json.loads(out)["manifest"]["model"] == hostile  # the same value, escaped


def test_a_planted_run_index_is_neither_waited_on_nor_believed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.store import refs
    from evals.store.local import run_index
    from evals.store.records import DirStore

    cache = tmp_path / "cache"
    first, second = eval_run(reaction_eval.TASK, cache, capsys), eval_run(tagging_eval.TASK, cache, capsys)
    store = DirStore(cache / "runs")
    later = lambda: time_ns() + 10 * run_index.SETTLE_NS  # noqa: E731 -- every file settled
    refs.list_runs(store, clock=later)
    index = cache / "runs" / ".index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    data["entries"][first]["summary"] = data["entries"][second]["summary"]  # first's row claims to be second
    index.write_text(json.dumps(data), encoding="utf-8")
    rows = {r.run_id: r.summary for r in refs.list_runs(store, clock=later)}
    assert rows[first] is not None and rows[first].run_id == first and rows[first].task == "reaction"
    index.unlink()
    _fifo(index)  # opening it for reading without O_NONBLOCK waits for a writer forever
    code, out, _ = cli(cache, capsys, "list")
    assert code == 0 and first in out and second in out
