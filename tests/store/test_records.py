"""Run records: strict typed files, run ids that stay inside runs/, atomic writes that follow no planted
symlink, the write lock prune respects, and the provenance helpers a manifest is built from."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from attest.features import TagPrompt
from evals import tagging_eval
from evals.corpus import paths
from evals.engine import provenance
from evals.store.models import Decision, Manifest, Provenance, RecordError, Report, SampleRef
from evals.store.records import DirStore, MemoryStore, RunError, write_atomic

REPO = Path(__file__).resolve().parents[2]
RUN = "20260101T000000-tagging-0a1b2c3d"


def manifest(run_id: str = RUN, *, task: str = "tagging", created: float = 1.7e9, status: str = "complete") -> Manifest:
    """A small valid manifest (two samples of one case)."""
    return Manifest.from_dict(
        {
            "run_id": run_id,
            "task": task,
            "created": created,
            "status": status,
            "backend": "stub",
            "model": "stub-model",
            "digest": "stub-v1",
            "options": {"temperature": 0.0, "seed": 42},
            "split": "dev",
            "repeat": 2,
            "provenance": {
                "prompt_fingerprint": "a" * 64,
                "system_prompts": ["b" * 64],
                "scorer_fingerprint": "c" * 64,
                "attest_version": "0.1.0",
                "corpus": "evals/tagging_cases.json",
                "corpus_sha256": {"dev": "d" * 64, "train": "e" * 64},
            },
            "samples": [{"case": "c1", "sample": 0, "key": "k0"}, {"case": "c1", "sample": 1, "key": "k1"}],
            "case_sha256": {"c1": "f" * 64},
        }
    )


def report(run_id: str = RUN) -> Report:
    return Report(
        run_id=run_id,
        task="tagging",
        backend="stub",
        model="stub-model",
        digest="stub-v1",
        split="dev",
        repeat=2,
        scored_at=1.7e9 + 5,
        scorer_fingerprint="c" * 64,
        corpus_sha256={"dev": "d" * 64},
        overall=0.5,
        n=2,
        median_latency=0.25,
        summary={"micro_f1": 0.5},
        generate={"samples": 2, "hits": 0, "misses": 2},
        results=[{"id": "c1", "sample": 0, "score": 1.0, "errors": []}],
    )


def decision() -> Decision:
    return Decision(
        baseline_run="20260101T000001-tagging-0a1b2c3e",
        candidate_run=RUN,  # recorded beside the candidate run
        margin=0.01,
        verdict="inconclusive",
        mean_difference=0.02,
        interval=(-0.01, 0.05),
        p_value=0.2,
        n=40,
        decided_at=1.7e9 + 9,
    )


RECORDS: list[tuple[str, Callable[[], BaseModel]]] = [
    ("manifest", manifest),
    ("report", report),
    ("decision", decision),
]


@pytest.fixture
def store(tmp_path: Path) -> DirStore:
    return DirStore(tmp_path / "cache" / "runs")


def _save(store: DirStore, name: str, record: BaseModel, run_id: str = RUN) -> Path:
    with store.writing(run_id):
        store.save(run_id, name, record)
    return store.root / run_id / f"{name}.json"


# --- round trip ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "make"), RECORDS, ids=[n for n, _ in RECORDS])
def test_records_round_trip_through_a_directory(store: DirStore, name: str, make: Callable[[], BaseModel]) -> None:
    record = make()
    path = _save(store, name, record)
    assert json.loads(path.read_text(encoding="utf-8"))["schema_version"] == 1
    assert store.load(RUN, name, type(record)) == record
    assert store.exists(RUN, name)
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()  # the umask decides, as for any file written


@pytest.mark.parametrize(("name", "make"), RECORDS, ids=[n for n, _ in RECORDS])
def test_records_round_trip_in_memory(name: str, make: Callable[[], BaseModel]) -> None:
    store, record = MemoryStore(), make()
    with store.writing(RUN):
        store.save(RUN, name, record)
    assert store.load(RUN, name, type(record)) == record
    assert store.run_ids() == [RUN]
    with pytest.raises(RunError, match="no report"):
        MemoryStore().load(RUN, "report", Report)


def test_manifest_and_report_shortcuts(store: DirStore) -> None:
    _save(store, "manifest", manifest())
    assert store.manifest(RUN) == manifest()
    assert store.report(RUN) is None
    _save(store, "report", report())
    assert store.report(RUN) == report()


# --- strictness ---------------------------------------------------------------------------


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.pop(key)


EDITS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("extra field", lambda d: d.update(reviewer="me"), "reviewer"),
    ("wrong type", lambda d: d.update(repeat="2"), "repeat"),
    ("missing field", _drop("task"), "task"),
    ("schema_version 2", lambda d: d.update(schema_version=2), "schema_version"),
    ("nested missing field", lambda d: d["provenance"].pop("prompt_fingerprint"), "provenance.prompt_fingerprint"),
    ("nested extra field", lambda d: d["provenance"].update(note="x"), "provenance.note"),
    ("bad status", lambda d: d.update(status="done"), "status"),
]


@pytest.mark.parametrize(("edit", "field"), [(e, f) for _, e, f in EDITS], ids=[i for i, _, _ in EDITS])
def test_a_hand_edited_manifest_is_refused_naming_file_and_field(
    store: DirStore, edit: Callable[[dict[str, Any]], None], field: str
) -> None:
    path = _save(store, "manifest", manifest())
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RunError) as caught:
        store.manifest(RUN)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    assert f"field {field}:" in message


@pytest.mark.parametrize(
    "content", [b"{not json", b"\xff\xfe\x00garbage", b"[1, 2]", b""], ids=["bad-json", "not-utf8", "list", "empty"]
)
def test_a_damaged_manifest_is_a_one_line_run_error(store: DirStore, content: bytes) -> None:
    path = _save(store, "manifest", manifest())
    path.write_bytes(content)
    with pytest.raises(RunError) as caught:
        store.manifest(RUN)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


# --- run ids stay inside runs/ --------------------------------------------------------------

BAD_IDS = ["../x", "/etc", "a/b", ".", "..", "", "..%2f", f"{RUN}\n", "-rf", " x", "x\x00y"]


@pytest.mark.parametrize("run_id", BAD_IDS, ids=repr)
def test_a_run_id_that_is_a_path_is_refused(store: DirStore, run_id: str) -> None:
    store.root.mkdir(parents=True)
    with pytest.raises(RunError, match="is not a run id"):
        store.run_dir(run_id)
    with pytest.raises(RunError):
        store.manifest(run_id)


def test_a_symlinked_run_directory_is_refused(store: DirStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "manifest.json").write_text(manifest().to_json(), encoding="utf-8")
    store.root.mkdir(parents=True)
    (store.root / RUN).symlink_to(outside, target_is_directory=True)
    with pytest.raises(RunError, match="outside"):
        store.manifest(RUN)
    with pytest.raises(RunError, match="outside"):
        store.save(RUN, "rescore", report())
    assert store.run_ids() == []  # a symlink is not listed as a run
    assert sorted(p.name for p in outside.iterdir()) == ["manifest.json"]


# --- atomic writes follow no planted symlink ----------------------------------------------------


def test_planted_temp_names_are_never_followed(store: DirStore, tmp_path: Path) -> None:
    """Symlinks named like the old pid-derived temporary files, pointing outside: the writes leave them alone."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n", encoding="utf-8")
    run_dir = store.root / RUN
    run_dir.mkdir(parents=True)
    planted = [run_dir / f".{name}.json.{os.getpid()}.tmp" for name in ("manifest", "report", "rescore", "prompts")]
    for link in planted:
        link.symlink_to(outside)
    for name, record in (("manifest", manifest()), ("report", report()), ("rescore", report())):
        _save(store, name, record)
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert all(link.is_symlink() and link.resolve() == outside for link in planted)
    assert store.manifest(RUN) == manifest()
    left = sorted(p.name for p in run_dir.iterdir() if p.name.endswith(".tmp") and not p.is_symlink())
    assert left == []  # no temporary file of ours is left behind


def test_a_planted_symlink_in_place_of_the_record_is_replaced_not_followed(store: DirStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("precious\n", encoding="utf-8")
    run_dir = store.root / RUN
    run_dir.mkdir(parents=True)
    (run_dir / "report.json").symlink_to(outside)
    _save(store, "report", report())
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert not (run_dir / "report.json").is_symlink()
    assert store.report(RUN) == report()


def test_write_atomic_leaves_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    write_atomic(path, "old")

    with pytest.raises(TypeError):
        write_atomic(path, 42)  # type: ignore[arg-type]
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_save_into_a_removed_run_does_not_bring_it_back(store: DirStore) -> None:
    """A rescore finishing after `runs prune` removed its run leaves no directory holding only rescore.json."""
    with pytest.raises(RunError, match="no longer exists"):
        store.save(RUN, "rescore", report())
    assert not (store.root / RUN).exists()


# --- the lock a writer holds ---------------------------------------------------------------------


def test_a_run_being_written_is_busy_and_cannot_be_claimed(store: DirStore) -> None:
    with store.writing(RUN):
        assert store.busy(RUN)
        with store.claim(RUN) as mine:
            assert not mine
    assert not store.busy(RUN)
    with store.claim(RUN) as mine:
        assert mine
        assert store.busy(RUN)


def test_a_run_being_written_by_another_process_is_busy(store: DirStore) -> None:
    with hold_in_another_process(store, RUN):
        assert store.busy(RUN)
        with store.claim(RUN) as mine:
            assert not mine
    assert not store.busy(RUN)


@contextlib.contextmanager
def hold_in_another_process(store: DirStore, run_id: str) -> Iterator[None]:
    """Hold `store.writing(run_id)` in a child process until the block ends."""
    code = (
        "import sys; from pathlib import Path; from evals.store.records import DirStore\n"
        f"with DirStore(Path({str(store.root)!r})).writing({run_id!r}):\n"
        "    print('held', flush=True); sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "held\n"
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)
    assert holder.returncode == 0


def _waiting_on_a_flock(inode: int) -> bool:
    """Whether /proc/locks shows a process blocked on an flock of this inode."""
    lines = Path("/proc/locks").read_text(encoding="utf-8").splitlines()
    return any("->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{inode}") for line in lines)


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="needs Linux /proc/locks")
def test_a_writer_that_waited_on_a_removed_lock_takes_a_live_one(store: DirStore) -> None:
    """Prune removes a run while a writer waits on its lock: the writer must not end up holding a lock on a
    file that no longer exists (prune would then see the recreated run as free)."""
    entered = threading.Event()
    release = threading.Event()

    def writer() -> None:
        with store.writing(RUN):
            entered.set()
            release.wait(10)

    (store.root / RUN).mkdir(parents=True)
    with store.claim(RUN) as mine:
        assert mine
        inode = (store.root / RUN / ".lock").stat().st_ino
        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 10
        while not _waiting_on_a_flock(inode) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _waiting_on_a_flock(inode)
        for child in (store.root / RUN).iterdir():
            child.unlink()
        (store.root / RUN).rmdir()
    try:
        assert entered.wait(10)
        assert store.busy(RUN)  # the writer holds the lock file that is there now
    finally:
        release.set()
        thread.join(10)


# --- provenance helpers ---------------------------------------------------------------------------


def test_prompt_fingerprint_changes_with_one_word() -> None:
    case = tagging_eval.load_cases()[0]
    messages = tagging_eval.render(case)
    edited = [dict(m, content=m["content"].replace("You tag", "You label", 1)) for m in messages]
    assert edited != messages
    schema = tagging_eval.TASK.schema
    base = provenance.prompt_fingerprint([(messages, schema)])
    assert provenance.prompt_fingerprint([(messages, schema)]) == base
    assert provenance.prompt_fingerprint([(edited, schema)]) != base
    assert provenance.prompt_fingerprint([(messages, {**schema, "title": "x"})]) != base
    assert provenance.prompt_fingerprint([(messages, schema), (messages, schema)]) != base  # plan order and count
    prompts = provenance.system_prompts([messages, messages, edited])
    assert list(prompts.values()) == [messages[0]["content"], edited[0]["content"]]
    assert all(provenance.sha256_text(text) == sha for sha, text in prompts.items())


def test_scorer_fingerprint_is_the_scorer_source_the_shared_helpers_and_the_answer_parser() -> None:
    digest = hashlib.sha256()
    for path in ("evals/tagging_eval.py", "evals/engine/scoring.py", "evals/corpus/words.py", "src/attest/answers.py"):
        digest.update((REPO / path).read_bytes())
    assert provenance.scorer_fingerprint(tagging_eval.score_one) == digest.hexdigest()


def test_tag_prompt_ref(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert provenance.tag_prompt_ref({}) == (None, None)
    artifact = tmp_path / "prompt.json"
    artifact.write_text(TagPrompt(instructions="Tag it.").model_dump_json(), encoding="utf-8")
    sha = hashlib.sha256(artifact.read_bytes()).hexdigest()
    assert provenance.tag_prompt_ref({"ATTEST_TAG_PROMPT": str(artifact)}) == (str(artifact), sha)
    missing = str(tmp_path / "missing.json")
    assert provenance.tag_prompt_ref({"ATTEST_TAG_PROMPT": missing}) == (missing, None)
    monkeypatch.chdir(tmp_path)
    recorded, recorded_sha = provenance.tag_prompt_ref({"ATTEST_TAG_PROMPT": "prompt.json"})
    assert recorded is not None and Path(recorded).is_absolute() and Path(recorded).samefile(artifact)
    assert recorded_sha == sha


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


def test_git_state_commit_dirty_and_outside_a_checkout(tmp_path: Path) -> None:
    assert provenance.git_state(tmp_path) == (None, None)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n", encoding="utf-8")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD")
    assert provenance.git_state(repo) == (head, False)
    (repo / "new.txt").write_text("untracked\n", encoding="utf-8")
    assert provenance.git_state(repo) == (head, False)  # untracked files do not make it dirty
    (repo / "a.txt").write_text("two\n", encoding="utf-8")
    assert provenance.git_state(repo) == (head, True)


def test_corpus_path_is_recorded_relative_and_read_back_against_a_root(tmp_path: Path) -> None:
    assert paths.corpus_ref(REPO / "evals" / "tagging_cases.json", REPO) == "evals/tagging_cases.json"
    elsewhere = tmp_path / "cases.json"
    assert paths.corpus_ref(elsewhere, REPO) == str(elsewhere.resolve())
    clone = tmp_path / "clone"
    assert paths.resolve_corpus("evals/tagging_cases.json", clone) == clone / "evals" / "tagging_cases.json"
    assert paths.resolve_corpus(str(elsewhere), clone) == elsewhere


def test_provenance_is_strict() -> None:
    data = manifest().provenance.to_dict()
    with pytest.raises(RecordError, match="git_dirty"):
        Provenance.from_dict({**data, "git_dirty": "yes"})
    with pytest.raises(RecordError, match="key"):
        SampleRef.from_dict({"case": "c", "sample": 0})


def test_written_records_have_the_umask_s_mode_not_mkstemp_s_0600(tmp_path: Path) -> None:
    """A run's report.html is served by a web server or read by a teammate: the temporary file's 0600 must not stay."""
    mask = _umask()
    page = tmp_path / "runs" / "r" / "report.html"
    write_atomic(page, "<p>hi</p>")
    write_atomic(page, "<p>again</p>")  # replaced, still readable
    assert page.stat().st_mode & 0o777 == 0o666 & ~mask


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
