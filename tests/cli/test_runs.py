"""`python -m evals.runs` and what a run records, end to end on the stub backend: provenance of a real run,
the prompt-edit and two-clone scenarios of issue 12, run ids that stay inside runs/, planted temp names,
list / show / prune / gc."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import attest
from attest.backends.types import Message
from attest.features import TagPrompt
from evals import reaction_eval, rescore, runs, tagging_eval, tasks
from evals.cli import rescoring, runner
from evals.corpus.cases import TaggingCase
from evals.engine import provenance
from evals.engine.pipeline import corpus_digests, load_cases
from evals.engine.task import Task
from evals.store import refs
from evals.store.local import run_index
from evals.store.local.cache import ResponseCache
from evals.store.models import Manifest, Prompts
from evals.store.records import DirStore
from tests.store.test_records import hold_in_another_process

REPO = Path(__file__).resolve().parents[2]
TASKS: dict[str, Task[Any]] = {t.name: t for t in tasks.all_tasks()}  # the registry's, not a copy
SHOW_LINE = re.compile(r"^  answers +python -m evals\.runs --cache-dir \S+ show (\S+)$")
PAGE_LINE = re.compile(r"^  page +(\S+/report\.html)$")


def eval_run(task: Task[Any], cache: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """One offline run through the run scripts' entry point; its id, read from the runs show line before the
    page's path (the report's last line)."""
    assert runner.main(task, ["--offline", "--cache-dir", str(cache), *argv]) == 0
    out = capsys.readouterr().out
    *_, show, page = out.rstrip("\n").splitlines()
    match = SHOW_LINE.match(show)
    assert match and PAGE_LINE.match(page), f"the report does not end with the runs show line and the page:\n{out}"
    assert Path(page.split()[-1]) == cache / "runs" / match.group(1) / "report.html"
    return match.group(1)


def cli(cache: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = runs.main(["--cache-dir", str(cache), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rescore_cli(cache: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = rescore.main(["--cache-dir", str(cache), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(err: str, prog: str) -> None:
    assert err.count("\n") == 1 and err.startswith(f"{prog}: error: "), err
    assert "Traceback" not in err


def store_of(cache: Path) -> DirStore:
    return DirStore(cache / "runs")


def snapshot(root: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every path under `root` with its content (or link target) and mtime, to see that nothing changed."""
    found: dict[str, tuple[bytes | str, int]] = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        if path.is_symlink():
            found[str(path)] = (os.readlink(path), stat.st_mtime_ns)
        elif path.is_file():
            found[str(path)] = (path.read_bytes(), stat.st_mtime_ns)
    return found


def clone_project(into: Path) -> Path:
    """A copy of the project's code and corpora without .git: a second clone, or a tarball unpacked."""
    for part in ("src", "evals"):
        shutil.copytree(REPO / part, into / part, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def run_in(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    return subprocess.run(
        [sys.executable, *argv], cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False
    )


# --- the report points at `runs show` ------------------------------------------------------------


@pytest.mark.parametrize("name", list(TASKS))
def test_every_eval_report_ends_with_the_runs_show_line_and_the_page(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = eval_run(TASKS[name], tmp_path, capsys)  # asserts the last line
    code, out, _ = cli(tmp_path, capsys, "show", run_id)
    assert code == 0 and out.startswith(f"run {run_id}: {name}, dev split, complete")


# --- provenance of a real run ----------------------------------------------------------------------


def _head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_provenance_of_an_offline_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = tagging_eval.TASK
    before = _head()
    run_id = eval_run(task, tmp_path, capsys)
    after = _head()
    m = store_of(tmp_path).manifest(run_id)
    p = m.provenance
    dev = load_cases(task, split="dev")
    rendered = [task.render(c) for c in dev]
    assert p.prompt_fingerprint == provenance.prompt_fingerprint([(r, task.schema) for r in rendered])
    system = rendered[0][0]["content"]
    prompts = store_of(tmp_path).load(run_id, "prompts", Prompts).system
    assert prompts == {provenance.sha256_text(system): system}
    assert p.system_prompts == list(prompts)
    assert p.scorer_fingerprint == provenance.scorer_fingerprint(task.score_one)
    assert p.git_commit in {before, after} and len(p.git_commit or "") == 40
    assert isinstance(p.git_dirty, bool)
    assert p.tag_prompt_path is None and p.tag_prompt_sha256 is None
    assert p.attest_version == attest.__version__
    assert p.corpus == "evals/tagging_cases.json"
    assert p.corpus_sha256 == corpus_digests(tagging_eval.load_cases())
    code, out, _ = cli(tmp_path, capsys, "show", run_id)
    assert code == 0
    for line in system.splitlines():
        assert f"    | {line}" in out.splitlines()
    for value in (p.prompt_fingerprint, p.scorer_fingerprint, f"commit {p.git_commit}", "evals/tagging_cases.json"):
        assert value in out
    assert f"attest {attest.__version__}" in out


def test_the_tag_prompt_artifact_is_recorded_for_tagging_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact = tmp_path / "tag_prompt.json"
    instructions = "Give the research item one to four tags from the vocabulary. Answer with JSON only."
    artifact.write_text(TagPrompt(instructions=instructions).model_dump_json(), encoding="utf-8")
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(artifact))
    cache = tmp_path / "cache"
    tagging = store_of(cache).manifest(eval_run(tagging_eval.TASK, cache, capsys))
    assert tagging.provenance.tag_prompt_path == str(artifact)
    assert tagging.provenance.tag_prompt_sha256 == provenance.sha256_text(artifact.read_text(encoding="utf-8"))
    prompts = store_of(cache).load(tagging.run_id, "prompts", Prompts).system
    assert any(instructions in text for text in prompts.values())
    code, out, _ = cli(cache, capsys, "show", tagging.run_id)
    assert code == 0
    assert f"tag prompt  {artifact} sha256 {tagging.provenance.tag_prompt_sha256}" in out
    reaction = store_of(cache).manifest(eval_run(reaction_eval.TASK, cache, capsys))
    assert reaction.provenance.tag_prompt_path is None and reaction.provenance.tag_prompt_sha256 is None


@pytest.mark.slow
def test_outside_a_git_checkout_the_commit_is_absent_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone = clone_project(tmp_path / "unpacked")
    assert provenance.git_state(clone) == (None, None)  # tmp is not inside a checkout
    cache = tmp_path / "cache"
    done = run_in(clone, "evals/run_tagging_eval.py", "--offline", "--cache-dir", str(cache))
    assert done.returncode == 0, done.stderr
    match = SHOW_LINE.match(done.stdout.rstrip("\n").splitlines()[-2])
    assert match and PAGE_LINE.match(done.stdout.rstrip("\n").splitlines()[-1])
    m = store_of(cache).manifest(match.group(1))
    assert m.provenance.git_commit is None and m.provenance.git_dirty is None
    assert m.provenance.corpus == "evals/tagging_cases.json"
    assert m.provenance.scorer_fingerprint == provenance.scorer_fingerprint(tagging_eval.score_one)  # same bytes
    code, out, _ = cli(cache, capsys, "show", m.run_id)
    assert code == 0 and "commit n/a" in out and "uncommitted" not in out


# --- the prompt-edit scenario ----------------------------------------------------------------------


def _one_word_changed(case: TaggingCase) -> list[Message]:
    messages = tagging_eval.render(case)
    system = messages[0]["content"]
    assert messages[0]["role"] == "system" and "You tag items" in system
    return [{"role": "system", "content": system.replace("You tag items", "You label items", 1)}, *messages[1:]]


KEY_FIELDS = ("task", "backend", "model", "digest", "digest_note", "options", "split", "repeat", "case_sha256")


def test_a_prompt_edit_changes_the_fingerprint_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_of(tmp_path)
    old = store.manifest(eval_run(tagging_eval.TASK, tmp_path, capsys))
    edited_task = dataclasses.replace(tagging_eval.TASK, render=_one_word_changed)
    new = store.manifest(eval_run(edited_task, tmp_path, capsys))
    assert new.provenance.prompt_fingerprint != old.provenance.prompt_fingerprint
    assert new.provenance.system_prompts != old.provenance.system_prompts
    for name in KEY_FIELDS:
        assert getattr(new, name) == getattr(old, name), name
    same = ("scorer_fingerprint", "corpus", "corpus_sha256", "attest_version", "tag_prompt_path")
    for name in same:
        assert getattr(new.provenance, name) == getattr(old.provenance, name), name
    new_report = store.report(new.run_id)
    assert new_report is not None and new_report.generate["misses"] == len(new.samples)

    reverted = store.manifest(eval_run(tagging_eval.TASK, tmp_path, capsys))
    assert reverted.provenance.prompt_fingerprint == old.provenance.prompt_fingerprint
    assert [s.key for s in reverted.samples] == [s.key for s in old.samples]
    report = store.report(reverted.run_id)
    assert report is not None and report.generate["hits"] == len(old.samples) and report.generate["misses"] == 0

    code, shown_old, _ = cli(tmp_path, capsys, "show", old.run_id)
    assert code == 0 and "    | You tag items" in shown_old and "You label items" not in shown_old
    code, shown_new, _ = cli(tmp_path, capsys, "show", new.run_id)
    assert code == 0 and "    | You label items" in shown_new and "You tag items" not in shown_new


# --- the two-clone scenario ------------------------------------------------------------------------


def _relabel_dev(corpus: Path, change: Any) -> None:
    cases = json.loads(corpus.read_text(encoding="utf-8"))
    for case in cases:
        if case["split"] == "dev":
            change(case)
    corpus.write_text(json.dumps(cases, indent=1), encoding="utf-8")


def _other_tag(case: dict[str, Any]) -> None:
    case["tags"] = ["polymer-chemistry"] if "polymer-chemistry" not in case["tags"] else ["statistics"]


def _flip(case: dict[str, Any]) -> None:
    case["verdict"] = not case["verdict"]


def test_rescore_in_a_second_clone_reports_the_label_change_and_the_true_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "shared-cache"
    ids = {name: eval_run(task, cache, capsys) for name, task in TASKS.items()}
    code, out, _ = rescore_cli(cache, capsys)  # the first clone: its own labels, nothing to note
    assert code == 0 and "note:" not in out

    clone = clone_project(tmp_path / "second-clone")
    _relabel_dev(clone / "evals" / "tagging_cases.json", _other_tag)
    _relabel_dev(clone / "evals" / "reaction_cases.json", _flip)
    done = run_in(clone, "-m", "evals.rescore", "--cache-dir", str(cache))
    assert done.returncode == 0, done.stderr

    store, responses = store_of(cache), ResponseCache(cache)
    try:
        for name in ("tagging", "reaction"):
            m = store.manifest(ids[name])
            corpus = clone / "evals" / f"{name}_cases.json"
            true = rescoring.rescore_run(m, responses, corpus).result.overall
            old = store.report(ids[name])
            assert old is not None and f"{true:.3f}" != f"{old.overall:.3f}"
            (row,) = [line for line in done.stdout.splitlines() if line.startswith(ids[name])]
            assert row.split()[-2:] == [f"{old.overall:.3f}", f"{true:.3f}"]
            notes = [line for line in done.stdout.splitlines() if line.startswith(f"  note: {ids[name]}:")]
            assert len(notes) == 1 and "labels differ" in notes[0] and str(corpus.resolve()) in notes[0]
            rescored = store.load(ids[name], "rescore", type(old))
            assert rescored.overall == true
    finally:
        responses.close()
    assert f"note: {ids['explanation']}" not in done.stdout


def test_corpus_without_run_is_a_one_line_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--corpus", "x.json"], ["--corpus", "x.json", "--all"]):
        with pytest.raises(SystemExit) as stopped:
            rescore.main(["--cache-dir", str(tmp_path), *argv])
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        one_line_error(err, "rescore")
        assert "--run" in err
    assert "2 on a usage error" in rescore._parser().format_help()


# --- hand-edited records -------------------------------------------------------------------------------


def test_a_hand_edited_manifest_is_listed_as_unreadable_and_skipped_by_rescore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = eval_run(reaction_eval.TASK, tmp_path, capsys)
    bad = eval_run(tagging_eval.TASK, tmp_path, capsys)
    path = tmp_path / "runs" / bad / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "schema_version": 2}), encoding="utf-8")

    code, out, _ = cli(tmp_path, capsys, "list")
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith(bad)]
    assert "unreadable" in row and str(path) in row and "schema_version" in row
    code, out, _ = cli(tmp_path, capsys, "list", "--json")
    assert {r["run_id"]: r["status"] for r in json.loads(out)} == {good: "complete", bad: "unreadable"}
    code, _, err = cli(tmp_path, capsys, "show", bad)
    assert code == 1
    one_line_error(err, "runs")
    assert str(path) in err and "schema_version" in err

    code, out, _ = rescore_cli(tmp_path, capsys, "--all")
    assert code == 0 and "re-scored 1 run(s)" in out and good in out and bad not in out
    assert not (tmp_path / "runs" / bad / "rescore.json").exists()
    code, _, err = rescore_cli(tmp_path, capsys, "--run", bad)
    assert code == 1
    one_line_error(err, "rescore")


# --- run ids stay inside runs/ ----------------------------------------------------------------------

BAD_IDS = ["../x", "/etc", "a/b", ".", "..", "../../outside"]


@pytest.fixture
def guarded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, str]:
    """A cache with one real run, and beside it (outside the cache) a copy of that run reached by a symlink."""
    cache = tmp_path / "cache"
    run_id = eval_run(reaction_eval.TASK, cache, capsys)
    outside = tmp_path / "outside"
    shutil.copytree(cache / "runs" / run_id, outside / "run")
    (outside / "passwd").write_text("root:x:0:0\n", encoding="utf-8")
    link = "20200101T000000-reaction-deadbeef"
    (cache / "runs" / link).symlink_to(outside / "run", target_is_directory=True)
    return cache, outside, link


@pytest.mark.parametrize("run_id", [*BAD_IDS, "LINK"])
def test_runs_show_and_rescore_refuse_ids_outside_runs(
    guarded: tuple[Path, Path, str], run_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, outside, link = guarded
    run_id = link if run_id == "LINK" else run_id
    before = snapshot(outside)
    for prog, (code, out, err) in (
        ("runs", cli(cache, capsys, "show", run_id)),
        ("runs", cli(cache, capsys, "show", run_id, "--case", "x")),
        ("rescore", rescore_cli(cache, capsys, "--run", run_id)),
    ):
        assert code == 1 and out == ""
        one_line_error(err, prog)
        assert ("resolves outside" if run_id == link else "is not a run id") in err
    assert snapshot(outside) == before


def test_prune_and_list_leave_a_symlinked_run_alone(
    guarded: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cache, outside, link = guarded
    (real,) = [p for p in (cache / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    (real / "inside").symlink_to(outside, target_is_directory=True)  # removing the run must not follow it
    before = snapshot(outside)
    code, out, _ = cli(cache, capsys, "list")
    assert code == 0 and link not in out
    for argv in (["--incomplete"], ["--older-than", "0"], ["--keep-last", "1"]):
        code, out, _ = cli(cache, capsys, "prune", *argv, "--yes")
        assert code == 0 and link not in out
    assert snapshot(outside) == before and not real.exists()
    assert (cache / "runs" / link).is_symlink()
    code, out, _ = cli(cache, capsys, "gc", "--yes")
    assert code == 0 and snapshot(outside) == before


# --- planted temp names --------------------------------------------------------------------------------


def test_planted_temp_names_are_not_followed_by_an_eval_or_rescore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Symlinks named like the old pid-derived temp files (`.NAME.json.<pid>.tmp`), pointing outside."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n", encoding="utf-8")
    cache = tmp_path / "cache"
    names = [f".{n}.json.{os.getpid()}.tmp" for n in ("manifest", "prompts", "report", "rescore")]
    (cache / "runs").mkdir(parents=True)
    planted = [cache / "runs" / n for n in names] + [cache / n for n in names]
    for link in planted:
        link.symlink_to(outside)
    run_id = eval_run(tagging_eval.TASK, cache, capsys)
    in_run = [cache / "runs" / run_id / n for n in names]
    for link in in_run:
        link.symlink_to(outside)
    code, _, err = rescore_cli(cache, capsys, "--run", run_id)
    assert code == 0, err
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert all(link.is_symlink() and link.resolve() == outside for link in planted + in_run)
    assert (cache / "runs" / run_id / "rescore.json").is_file()


# --- list, show ------------------------------------------------------------------------------------------


def test_list_is_newest_first_with_task_filter_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made = [eval_run(task, tmp_path, capsys) for task in (*TASKS.values(), tagging_eval.TASK)]
    code, out, _ = cli(tmp_path, capsys, "list", "--json")
    rows = json.loads(out)
    assert [r["run_id"] for r in rows] == made[::-1]
    assert [r["created"] for r in rows] == sorted((r["created"] for r in rows), reverse=True)
    first = rows[0]
    assert first["task"] == "tagging" and first["status"] == "complete" and first["backend"] == "stub"
    assert first["split"] == "dev" and first["n"] == len(load_cases(tagging_eval.TASK, split="dev"))
    assert len(first["prompt"]) == 64 and isinstance(first["score"], float)
    code, out, _ = cli(tmp_path, capsys, "list", "--task", "tagging", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [made[3], made[0]]
    code, out, _ = cli(tmp_path, capsys, "list", "--task", "reaction")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["run", "task", "status", "backend", "model", "split", "n", "prompt", "score", "age"]
    assert len(lines) == 2 and lines[1].startswith(made[1]) and first["prompt"][:12] not in lines[1]


def _copy_run(store: DirStore, base: Manifest, run_id: str, **update: Any) -> str:
    with store.writing(run_id):
        store.save(run_id, "manifest", base.replace(run_id=run_id, **update))
    return run_id


def test_newest_first_follows_creation_time_not_the_random_part_of_the_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs in one second: their ids differ only in the random token, which says nothing of order."""
    store = store_of(tmp_path)
    base = store.manifest(eval_run(tagging_eval.TASK, tmp_path, capsys))
    older = _copy_run(store, base, "20300101T000000-tagging-ffffffff", created=base.created + 10)
    newer = _copy_run(store, base, "20300101T000000-tagging-00000000", created=base.created + 11)
    assert [r.run_id for r in refs.list_runs(store)][:2] == [newer, older]
    assert refs.resolve_ref(store, "tagging@latest") == newer
    assert refs.resolve_ref(store, "tagging@previous") == older
    (latest,) = rescore.find_runs(store)
    assert latest.run_id == newer


def test_show_case_latest_previous_and_reaction_reasoning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = eval_run(reaction_eval.TASK, tmp_path, capsys)
    code, _, err = cli(tmp_path, capsys, "show", "reaction@previous")
    assert code == 1 and "1 complete whole-split run(s)" in err
    one_line_error(err, "runs")
    second = eval_run(reaction_eval.TASK, tmp_path, capsys)
    code, latest, _ = cli(tmp_path, capsys, "show", "reaction@latest")
    assert code == 0 and latest.startswith(f"run {second}:")
    code, previous, _ = cli(tmp_path, capsys, "show", "reaction@previous")
    assert code == 0 and previous.startswith(f"run {first}:")
    code, _, err = cli(tmp_path, capsys, "show", "reaction@oldest")
    assert code == 1 and "TASK@latest" in err

    answers = [line for line in latest.splitlines() if line.startswith("      answer  ")]
    assert len(answers) == len(load_cases(reaction_eval.TASK, split="dev"))
    assert all('"reasoning": "' in line for line in answers)  # the model's reasoning, as it answered

    case = load_cases(reaction_eval.TASK, split="dev")[3].id
    code, out, _ = cli(tmp_path, capsys, "show", first, "--case", case)
    cases = [line for line in out.splitlines() if re.match(r"^\S+ +\S+#\d+$", line)]
    assert code == 0 and [line.split()[1] for line in cases] == [f"{case}#0"]
    code, out, _ = cli(tmp_path, capsys, "show", first, "--case", case, "--json")
    data = json.loads(out)
    assert [c["case"] for c in data["cases"]] == [case] and "reasoning" in data["cases"][0]["answer"]
    assert data["manifest"]["run_id"] == first and len(data["prompts"]) == 1
    code, _, err = cli(tmp_path, capsys, "show", first, "--case", "no-such-case")
    assert code == 1 and "no-such-case" in err
    one_line_error(err, "runs")


# --- prune ------------------------------------------------------------------------------------------------

DAY = 86400.0


@pytest.fixture
def pile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Runs of several ages and states, made from one real run's manifest."""
    store = store_of(tmp_path)
    real = eval_run(tagging_eval.TASK, tmp_path, capsys)
    base = store.manifest(real)
    now = time.time()
    made = {
        "tag-3d": _copy_run(store, base, "20200101T000000-tagging-00000001", created=now - 3 * DAY),
        "tag-2h": _copy_run(store, base, "20200101T000000-tagging-00000002", created=now - 2 * 3600),
        "tag-gen": _copy_run(store, base, "20200101T000000-tagging-00000003", created=now - 3600, status="generating"),
        "tag-failed": _copy_run(store, base, "20200101T000000-tagging-00000004", created=now - 60, status="failed"),
        "react-5d": _copy_run(store, base, "20200101T000000-reaction-00000005", created=now - 5 * DAY, task="reaction"),
        "tag-now": real,
    }
    unreadable = tmp_path / "runs" / "20200101T000000-tagging-00000006"
    unreadable.mkdir()
    (unreadable / "manifest.json").write_text("{}", encoding="utf-8")
    made["unreadable"] = unreadable.name
    return made


def _named(out: str, verb: str, pile: dict[str, str]) -> set[str]:
    by_id = {v: k for k, v in pile.items()}
    return {by_id[line.split()[-1]] for line in out.splitlines() if line.startswith(f"{verb} ")}


@pytest.mark.parametrize(
    ("argv", "doomed"),
    [
        (["--incomplete"], {"tag-gen", "tag-failed", "unreadable"}),
        (["--older-than", "1"], {"tag-3d", "react-5d"}),
        (["--older-than", "0.05"], {"tag-3d", "react-5d", "tag-2h"}),
        (["--keep-last", "1"], {"tag-2h", "tag-3d"}),
        (["--keep-last", "2"], {"tag-3d"}),
        (["--keep-last", "2", "--incomplete"], {"tag-3d", "tag-gen", "tag-failed", "unreadable"}),
    ],
    ids=["incomplete", "older-1d", "older-0.05d", "keep-1", "keep-2", "keep-2+incomplete"],
)
def test_prune_selects_dry_runs_by_default_and_removes_with_yes(
    tmp_path: Path, pile: dict[str, str], argv: list[str], doomed: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(tmp_path / "runs")
    code, out, _ = cli(tmp_path, capsys, "prune", *argv)
    assert code == 0
    assert _named(out, "would remove", pile) == doomed
    assert out.splitlines()[-1].startswith("dry run: nothing removed")
    assert snapshot(tmp_path / "runs") == before

    code, out, _ = cli(tmp_path, capsys, "prune", *argv, "--yes")
    assert code == 0 and _named(out, "remove", pile) == doomed
    assert out.splitlines()[-1] == f"removed {len(doomed)} run(s)"
    left = {p.name for p in (tmp_path / "runs").iterdir()}
    assert left == {pile[k] for k in pile if k not in doomed}


def test_prune_never_removes_a_run_being_written(
    tmp_path: Path, pile: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_of(tmp_path)
    with store.writing(pile["tag-gen"]), hold_in_another_process(store, pile["tag-failed"]):
        for argv in (["--incomplete"], ["--incomplete", "--yes"]):
            code, out, _ = cli(tmp_path, capsys, "prune", *argv)
            assert code == 0
            assert f"keep   {pile['tag-gen']} (another process is writing it)" in out.splitlines()
            assert f"keep   {pile['tag-failed']} (another process is writing it)" in out.splitlines()
        assert out.splitlines()[-1] == "removed 1 run(s)"
    assert (tmp_path / "runs" / pile["tag-gen"] / "manifest.json").is_file()
    assert (tmp_path / "runs" / pile["tag-failed"] / "manifest.json").is_file()
    assert not (tmp_path / "runs" / pile["unreadable"]).exists()


def test_prune_without_a_selector_is_a_one_line_error(
    tmp_path: Path, pile: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(tmp_path / "runs")
    code, out, err = cli(tmp_path, capsys, "prune", "--yes")
    assert code == 1 and out == "" and "--incomplete" in err
    one_line_error(err, "runs")
    assert snapshot(tmp_path / "runs") == before


@pytest.mark.parametrize("argv", [["--keep-last", "0"], ["--older-than", "-1"], ["--older-than", "x"]], ids=str)
def test_prune_usage_errors_are_one_line(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        runs.main(["--cache-dir", str(tmp_path), "prune", *argv])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("runs prune: error: ") and argv[0] in err


# --- gc ------------------------------------------------------------------------------------------------------


def test_gc_counts_dry_removes_only_unreferenced_entries_and_kept_runs_still_rescore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_of(tmp_path)
    kept = eval_run(tagging_eval.TASK, tmp_path, capsys)
    gone = eval_run(reaction_eval.TASK, tmp_path, capsys)
    kept_keys = [s.key for s in store.manifest(kept).samples]
    gone_keys = [s.key for s in store.manifest(gone).samples]
    code, out, _ = cli(tmp_path, capsys, "gc")
    assert code == 0 and out.startswith("would remove 0 cache entries")
    _copy_run(store, store.manifest(gone), gone, status="failed")
    assert cli(tmp_path, capsys, "gc")[1].startswith("would remove 0 cache entries")  # a failed run keeps its own
    code, out, _ = cli(tmp_path, capsys, "prune", "--incomplete", "--yes")
    assert code == 0 and not (tmp_path / "runs" / gone).exists()

    code, out, _ = cli(tmp_path, capsys, "gc")
    match = re.match(r"would remove (\d+) cache entries no run references \((\d+) bytes of answers\)", out)
    assert code == 0 and match and int(match.group(1)) == len(set(gone_keys)) and int(match.group(2)) > 0
    cache = ResponseCache(tmp_path)
    try:
        assert all(v is not None for v in cache.get_many(gone_keys).values())  # the dry run removed nothing
    finally:
        cache.close()

    code, out, _ = cli(tmp_path, capsys, "gc", "--yes")
    assert code == 0 and out.startswith(f"removed {len(set(gone_keys))} cache entries")
    cache = ResponseCache(tmp_path)
    try:
        assert all(v is None for v in cache.get_many(gone_keys).values())
        assert all(v is not None for v in cache.get_many(kept_keys).values())
    finally:
        cache.close()
    code, out, err = rescore_cli(tmp_path, capsys, "--run", kept)
    assert code == 0, err
    assert cli(tmp_path, capsys, "gc")[1].startswith("would remove 0 cache entries")


def test_gc_refuses_while_a_run_is_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = eval_run(tagging_eval.TASK, tmp_path, capsys)
    other = eval_run(reaction_eval.TASK, tmp_path, capsys)
    (tmp_path / "runs" / other / "manifest.json").write_text("{}", encoding="utf-8")
    code, _, err = cli(tmp_path, capsys, "gc", "--yes")
    assert code == 1 and other in err and "prune" in err
    one_line_error(err, "runs")
    assert rescore_cli(tmp_path, capsys, "--run", run_id)[0] == 0
    cache = ResponseCache(tmp_path)
    try:
        assert cache.collect(set(), before=time.time(), dry_run=True)[0] > len(
            store_of(tmp_path).manifest(run_id).samples
        )
    finally:
        cache.close()


# --- the list index ----------------------------------------------------------------------------------------


def _later() -> int:
    """A clock ten seconds ahead: every file looks settled, so the index may hold it."""
    return time.time_ns() + 10 * run_index.SETTLE_NS // 2


def test_list_takes_unchanged_runs_from_the_index_and_rereads_changed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_of(tmp_path)
    first = eval_run(tagging_eval.TASK, tmp_path, capsys)
    second = eval_run(reaction_eval.TASK, tmp_path, capsys)
    rows = [r.to_json() for r in refs.list_runs(store, clock=_later)]
    entries = run_index.load(store.root)
    assert sorted(entries) == sorted([first, second])
    (tmp_path / "runs" / ".index.json").unlink()
    assert [r.to_json() for r in refs.list_runs(store, clock=_later)] == rows  # the same rows either way

    entries = run_index.load(store.root)
    marked = entries[first].summary.replace(model="from-the-index")
    run_index.save(store.root, {**entries, first: entries[first].replace(summary=marked)})
    by_id = {r.run_id: r.to_json() for r in refs.list_runs(store, clock=_later)}
    assert by_id[first]["model"] == "from-the-index"  # an unchanged run is read from the index

    path = tmp_path / "runs" / first / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), "extra": 1}), encoding="utf-8")
    by_id = {r.run_id: r.to_json() for r in refs.list_runs(store, clock=_later)}
    assert by_id[first]["status"] == "unreadable" and "extra" in by_id[first]["problem"]
    assert first not in run_index.load(store.root)

    shutil.rmtree(tmp_path / "runs" / second)
    refs.list_runs(store, clock=_later)
    assert run_index.load(store.root) == {}


def test_a_run_written_just_now_is_not_indexed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two writes inside one timestamp tick could look like one file: fresh files are always read in full."""
    store = store_of(tmp_path)
    run_id = eval_run(tagging_eval.TASK, tmp_path, capsys)
    assert [r.run_id for r in refs.list_runs(store)] == [run_id]
    assert run_id not in run_index.load(store.root)
    assert run_index.stamp(store.root / run_id) is None
    assert run_index.stamp(store.root / run_id, _later) is not None


@pytest.mark.parametrize("planted", ["garbage", "foreign", "symlink"])
def test_a_bad_or_planted_index_is_ignored(tmp_path: Path, planted: str, capsys: pytest.CaptureFixture[str]) -> None:
    store = store_of(tmp_path)
    run_id = eval_run(tagging_eval.TASK, tmp_path, capsys)
    index, outside = tmp_path / "runs" / ".index.json", tmp_path / "outside.json"
    outside.write_text("precious\n", encoding="utf-8")
    if planted == "garbage":
        index.write_bytes(b"\xff{")
    elif planted == "foreign":
        fake = {"summary": {**store_of(tmp_path).manifest(run_id).to_dict(), "model": "forged"}, "stamp": []}
        index.write_text(json.dumps({"schema_version": 2, "entries": {run_id: fake}}), encoding="utf-8")
    else:
        index.symlink_to(outside)
    (row,) = refs.list_runs(store, clock=_later)
    assert row.summary is not None and row.summary.model == "stub-keyword-overlap-v1"
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert not index.is_symlink() and run_id in run_index.load(store.root)


def test_list_and_show_escape_what_a_hand_edited_run_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = store_of(tmp_path)
    base = store.manifest(eval_run(tagging_eval.TASK, tmp_path, capsys))
    hostile = "\x1b]0;owned\x07\x1b[2J"
    prov = base.provenance.replace(corpus=f"evals/{hostile}.json", tag_prompt_path=hostile)
    run_id = _copy_run(
        store,
        base,
        "20300101T000000-tagging-0e0e0e0e",
        task=f"t{hostile}",
        backend=hostile,
        split=hostile,
        options={"k": hostile},
        provenance=prov,
    )
    code, out, _ = cli(tmp_path, capsys, "list")
    assert code == 0 and run_id in out and "\x1b" not in out and "\x07" not in out and "\\x1b" in out
    code, out, _ = cli(tmp_path, capsys, "show", run_id)
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert f"evals/{hostile}.json".encode("unicode_escape").decode() in out


def test_gc_keeps_answers_stored_after_it_started(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that starts while gc reads the manifests has answers no manifest gc read lists yet: they stay."""
    eval_run(tagging_eval.TASK, tmp_path, capsys)
    cache = ResponseCache(tmp_path)
    try:
        assert cache.collect(set(), before=0.0, dry_run=False) == (0, 0)
        assert cache.collect(set(), before=time.time(), dry_run=True)[0] > 0
    finally:
        cache.close()
