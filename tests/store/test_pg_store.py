"""The PostgreSQL store against a real server: answers, records, schema, roles and one-line failures."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
import pytest

from evals.store.keys import Entry, Identity, request_key
from evals.store.models import Manifest, Report
from evals.store.open import Opened, open_store
from evals.store.postgres.connection import SCHEMA_VERSION, StoreError, StoreReadOnly
from evals.store.records import MemoryStore
from tests.store.conftest import Pg

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
KEY = request_key(Identity("fake", "m", "d", {}), [{"role": "user", "content": "hi"}], {}, 0)


def _entry(text: str = "yes") -> Entry:
    return Entry(text, 0.2, 3, 4, "m", "d", created=1.0, worker="u@h pid 1", server="http://127.0.0.1:1")


def test_answers_round_trip_as_json_with_provenance(pg: Pg, pg_url: str, tmp_path: Path) -> None:
    store = open_store(pg_url, tmp_path)
    try:
        assert store.shared and store.answers.get(KEY) is None
        store.answers.put(KEY, _entry())
        store.answers.put(KEY, _entry("another"))  # an answer once stored is kept as it is
        assert store.answers.get(KEY) == _entry()
        assert store.answers.get_many([KEY, "0" * 64]) == {KEY: _entry(), "0" * 64: None}
        assert list(store.answers.keys()) == [KEY]
    finally:
        store.close()
    with psycopg.connect(pg_url) as conn:
        value, kind, host = conn.execute(
            "SELECT value::text, jsonb_typeof(value), host FROM attest.answers WHERE key = %s", (KEY,)
        ).fetchone()  # type: ignore[misc]
    assert kind == "object" and json.loads(value)["worker"] == "u@h pid 1" and host
    assert not (tmp_path / "responses").exists()  # the local cache is not touched


def test_run_records_round_trip_and_say_who(pg_url: str, tmp_path: Path) -> None:
    from evals.engine.chat import unsampled
    from evals.engine.execute import evaluate
    from evals.reaction_eval import TASK, load_cases
    from tests.fakes import RecordingChat

    memory = MemoryStore()
    answer = {"verdict": True, "confidence": 3, "reasoning": "fits"}
    evaluate(TASK, unsampled(RecordingChat(lambda m, s: answer)), load_cases()[:3], store=memory)
    [run_id] = memory.run_ids()
    store = open_store(pg_url, tmp_path)
    try:
        for (rid, name), record in memory.records.items():
            store.runs.save(rid, name, record)
        assert store.runs.run_ids() == [run_id]
        assert store.runs.manifest(run_id) == memory.manifest(run_id)
        assert store.runs.report(run_id) == memory.report(run_id)
        authors = store.runs.authors()
        assert authors is not None
        author = authors[run_id]
        assert author.host and author.user
    finally:
        store.close()


def test_first_use_by_many_processes_at_once_creates_the_schema_once(pg_url: str, tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from evals.store.open import open_store; "
        "open_store(sys.argv[1], Path(sys.argv[2])).close()"
    )
    env = {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, pg_url, str(tmp_path)], env=env, stderr=subprocess.PIPE)
        for _ in range(6)
    ]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT name, value FROM attest.meta").fetchall()
    assert rows == [("schema_version", str(SCHEMA_VERSION))]


def test_a_newer_schema_is_refused_in_one_line(pg_url: str, tmp_path: Path) -> None:
    open_store(pg_url, tmp_path).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE attest.meta SET value = '99' WHERE name = 'schema_version'")
    newer = f"schema version 99, newer than this attest's {SCHEMA_VERSION}: upgrade attest"
    with pytest.raises(StoreError, match=newer):
        open_store(pg_url, tmp_path)
    out = _cli(["-m", "evals.runs", "--store", pg_url, "list"])
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "version 99" in out.stderr, out.stderr


def _cli(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/bin:/bin", **env}
    return subprocess.run([sys.executable, *args], env=full_env, capture_output=True, text=True, timeout=60, cwd=ROOT)


def _role(pg: Pg, db: str, role: str, password: str, *, write: bool) -> str:
    """A login role for `db` (roles are cluster-wide: its name carries the database's); its name."""
    name = f"{role}_{db}"
    with pg.admin(db) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        conn.execute(f"GRANT USAGE ON SCHEMA attest TO {name}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA attest TO {name}")
        if write:
            conn.execute(f"GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA attest TO {name}")
    return name


def test_a_read_only_role_reads_and_is_refused_writes_in_one_line(pg: Pg, pg_db: str, tmp_path: Path) -> None:
    admin = open_store(pg.url(pg_db), tmp_path)
    admin.answers.put(KEY, _entry())
    admin.close()
    url = pg.url(pg_db, _role(pg, pg_db, "reader", "s3cret-pw", write=False), "s3cret-pw")
    store = open_store(url, tmp_path)
    try:
        assert store.answers.get(KEY) == _entry()  # reads work
        with pytest.raises(StoreReadOnly, match=f'may only read database "{pg_db}"') as info:
            store.answers.put("1" * 64, _entry())
        assert "s3cret-pw" not in str(info.value) and "\n" not in str(info.value)
    finally:
        store.close()
    run = ["evals/run_reaction_eval.py", "--offline", "--split", "dev", "--cache-dir", str(tmp_path)]
    out = _cli([*run, "--store", url])
    assert out.returncode == 1 and "may only read" in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert "s3cret-pw" not in out.stderr + out.stdout
    assert _cli([*run, "--store", pg.url(pg_db)]).returncode == 0  # a run made by a role that may write
    listed = _cli(["-m", "evals.runs", "list"], ATTEST_STORE=url)
    assert listed.returncode == 0 and "reaction" in listed.stdout, listed.stderr
    rescored = _cli(["-m", "evals.rescore", "--store", url])  # prints the scores; says its record was not saved
    assert rescored.returncode == 0 and "re-scored 1 run(s)" in rescored.stdout, rescored.stderr
    assert "were not saved" in rescored.stderr and "may only read" in rescored.stderr
    assert rescored.stderr.count("\n") == 1 and "s3cret-pw" not in rescored.stderr


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("password", "wrong or missing password for database"),
        ("database", "does not exist: create it"),
        ("unreachable", "cannot reach database"),
    ],
)
def test_each_connection_fault_is_one_line_naming_host_and_database(
    pg: Pg, pg_db: str, tmp_path: Path, fault: str, said: str
) -> None:
    open_store(pg.url(pg_db), tmp_path).close()
    writer = _role(pg, pg_db, "writer", "right-pw", write=True)
    url = {
        "password": pg.url(pg_db, writer, "wrong-pw"),
        "database": pg.url("no_such_db", writer, "right-pw"),
        "unreachable": f"postgresql://{writer}:right-pw@/{pg_db}?host={tmp_path}",
    }[fault]
    out = _cli(["-m", "evals.runs", "list"], ATTEST_STORE=url)
    assert out.returncode == 1, out
    assert said in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert ("no_such_db" if fault == "database" else pg_db) in out.stderr and "host " in out.stderr
    assert "wrong-pw" not in out.stderr and "right-pw" not in out.stderr


def test_runs_compare_rescore_and_show_read_the_store(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals import compare, rescore, runs
    from evals.cli.runner import main as run_main
    from evals.reaction_eval import TASK

    for clone in ("a", "b"):  # two teammates, each from an empty clone
        assert run_main(TASK, ["--offline", "--store", pg_url, "--cache-dir", str(tmp_path / clone)]) == 0
    assert not (tmp_path / "a" / "runs").exists() and not (tmp_path / "b" / "runs").exists()
    capsys.readouterr()
    assert runs.main(["--store", pg_url, "show", "reaction@latest"]) == 0
    assert compare.main(["--store", pg_url, "reaction@previous", "reaction@latest"]) in (0, 3, 4)
    assert rescore.main(["--store", pg_url]) == 0  # no backend at all: a model call is impossible
    out = capsys.readouterr().out
    assert "reaction" in out and "see a case" in out


def test_the_password_is_never_printed_nor_recorded(
    pg: Pg, pg_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.cli.runner import main as run_main
    from evals.reaction_eval import TASK

    open_store(pg.url(pg_db), tmp_path).close()
    url = pg.url(pg_db, _role(pg, pg_db, "writer", "pw-never-shown", write=True), "pw-never-shown")
    assert run_main(TASK, ["--offline", "--store", url, "--cache-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr()
    assert "pw-never-shown" not in printed.out + printed.err and f'database "{pg_db}"' not in printed.err
    with pg.admin(pg_db) as conn:
        bodies = [r[0] for r in conn.execute("SELECT body::text FROM attest.records")]
        report = conn.execute("SELECT body FROM attest.records WHERE name = 'report'").fetchone()
    assert bodies and not any("pw-never-shown" in b for b in bodies)
    assert report is not None and report[0]["generate"]["store"].startswith(f'database "{pg_db}" on host ')


def test_a_read_only_role_can_neither_hold_nor_block_a_claim(pg: Pg, pg_db: str, tmp_path: Path) -> None:
    from evals.store.postgres.answers import lock_id

    open_store(pg.url(pg_db), tmp_path).close()
    url = pg.url(pg_db, _role(pg, pg_db, "reader", "pw", write=False), "pw")
    reader = open_store(url, tmp_path)
    writer = open_store(pg.url(pg_db, _role(pg, pg_db, "writer", "pw", write=True), "pw"), tmp_path)
    try:
        with pytest.raises(StoreReadOnly, match="may only read"), reader.answers.lease(KEY):
            pass
        with psycopg.connect(url, autocommit=True) as raw:  # the reader goes around attest: both are refused
            raw.execute("SELECT pg_advisory_lock(%s)", (lock_id(KEY),))  # what claims were: now harmless
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                raw.execute("INSERT INTO attest.claims (key, holder, role) VALUES (%s, 'x', current_user)", (KEY,))
            with writer.answers.lease(KEY, wait=False) as mine:
                assert mine is True  # not blocked
                writer.answers.put(KEY, _entry())
    finally:
        reader.close()
        writer.close()


def test_a_claim_lives_while_its_holder_is_connected_and_frees_when_it_goes(pg_url: str, tmp_path: Path) -> None:
    first, second = open_store(pg_url, tmp_path), open_store(pg_url, tmp_path)
    try:
        with first.answers.lease(KEY) as mine:
            assert mine is True
            with second.answers.lease(KEY, wait=False) as theirs:
                assert theirs is None  # held by a live holder
            first.answers.put(KEY, _entry())
        with second.answers.lease(KEY, wait=False) as theirs:
            assert theirs is False  # stored meanwhile: read it
        other = "1" * 64
        with first.answers.lease(other):
            first.close()  # its connection ends: the claim is free once the server has ended its session
            started = time.monotonic()
            with second.answers.lease(other) as theirs:
                assert theirs is True and time.monotonic() - started < 5
    finally:
        second.close()


def test_the_store_is_named_by_a_service_or_a_file_never_by_a_password_in_argv(
    pg: Pg, pg_db: str, tmp_path: Path
) -> None:
    open_store(pg.url(pg_db), tmp_path).close()
    role = _role(pg, pg_db, "writer", "svc-secret", write=True)
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[teamstore]\nhost={pg.socket_dir}\ndbname={pg_db}\nuser={role}\npassword=svc-secret\n", encoding="utf-8"
    )
    listed = _cli(["-m", "evals.runs", "--store", "teamstore", "list"], PGSERVICEFILE=str(services))
    assert listed.returncode == 0, listed.stderr
    assert _cli(["-m", "evals.runs", "list"], ATTEST_STORE="teamstore", PGSERVICEFILE=str(services)).returncode == 0
    missing = _cli(["-m", "evals.runs", "--store", "nosuch", "list"], PGSERVICEFILE=str(services))
    assert missing.returncode == 1 and 'libpq service "nosuch" is not defined' in missing.stderr, missing.stderr
    url_file = tmp_path / "store-url"
    url_file.write_text(f"# the team's store\n{pg.url(pg_db, role, 'svc-secret')}\n", encoding="utf-8")
    assert _cli(["-m", "evals.runs", "--store-file", str(url_file), "list"]).returncode == 0
    assert _cli(["-m", "evals.runs", "list"], ATTEST_STORE_FILE=str(url_file)).returncode == 0
    both = _cli(["-m", "evals.runs", "--store", "teamstore", "--store-file", str(url_file), "list"])
    assert both.returncode == 1 and "not both" in both.stderr and both.stderr.count("\n") == 1
    url_file.write_text("", encoding="utf-8")
    empty = _cli(["-m", "evals.runs", "list", "--store-file", str(url_file)])
    assert empty.returncode == 1 and f"{url_file}: holds 0 lines" in empty.stderr, empty.stderr


def test_listing_is_one_statement_with_limit_offset_and_a_silent_writer_lists_as_interrupted(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.store.models import RunProgress
    from evals.store.postgres import connection
    from evals.store.postgres import runs as pg_runs
    from evals.store.refs import list_runs

    manifest, report = _recorded_run()
    store = open_store(pg_url, tmp_path)
    try:
        _save_five(store, manifest, report, scores=[i / 10 for i in range(5)])
        sent: list[str] = []
        real_run = connection.Link.run
        monkeypatch.setattr(
            connection.Link, "run", lambda self, doing, fn: sent.append(doing) or real_run(self, doing, fn)
        )
        rows = list_runs(store.runs)
        assert len(sent) == 1  # one statement, however many runs
        assert [r.run_id for r in rows] == ["r4", "r3", "r2", "r1", "r0"]
        assert [r.summary.score for r in rows if r.summary] == [0.4, 0.3, 0.2, 0.1, 0.0]
        assert [r.run_id for r in list_runs(store.runs, limit=2, offset=1)] == ["r3", "r2"]
        live = manifest.replace(run_id="g1", created=manifest.created + 9, status="generating")
        monkeypatch.setattr(pg_runs, "HEARTBEAT_S", 0.1)
        with store.runs.writing("g1"):
            store.runs.save("g1", "manifest", live)
            store.runs.save("g1", "progress", RunProgress(run_id="g1", done=2, total=3, updated=1.0))
            with psycopg.connect(pg_url, autocommit=True) as conn:  # as if its writer went quiet
                conn.execute("UPDATE attest.runs SET heartbeat = now() - interval '1 hour' WHERE run_id = 'g1'")
            time.sleep(0.6)  # its heartbeat thread beats again
            [row] = list_runs(store.runs, limit=1)
            assert row.summary is not None and row.summary.status == "generating 2/3"
        with psycopg.connect(pg_url, autocommit=True) as conn:  # the writer is gone: no more beats
            conn.execute("UPDATE attest.runs SET heartbeat = now() - interval '1 hour' WHERE run_id = 'g1'")
        [row] = list_runs(store.runs, limit=1)
        assert row.summary is not None and row.summary.status == "interrupted"
    finally:
        store.close()


def _recorded_run() -> tuple[Manifest, Report]:
    """The manifest and report of a real 3-case reaction run, made in memory."""
    from evals.engine.chat import unsampled
    from evals.engine.execute import evaluate
    from evals.reaction_eval import TASK, load_cases
    from tests.fakes import RecordingChat

    memory = MemoryStore()
    answer = {"verdict": True, "confidence": 3, "reasoning": "fits"}
    evaluate(TASK, unsampled(RecordingChat(lambda m, s: answer)), load_cases()[:3], store=memory)
    [first] = memory.run_ids()
    manifest, report = memory.manifest(first), memory.report(first)
    assert report is not None
    return manifest, report


def _save_five(store: Opened, manifest: Manifest, report: Report, scores: Sequence[float] | None = None) -> None:
    """The run saved five times as r0..r4, each a second newer than the one before (r4 newest); with `scores`,
    run ri's report says scores[i]."""
    for i in range(5):
        run_id = f"r{i}"
        store.runs.save(run_id, "manifest", manifest.replace(run_id=run_id, created=manifest.created + i))
        scored = report.replace(run_id=run_id, overall=scores[i]) if scores else report.replace(run_id=run_id)
        store.runs.save(run_id, "report", scored)


def _five_runs(pg_url: str, tmp_path: Path) -> list[str]:
    """Five complete runs r0..r4 (r4 newest) in the store, with their answers; the sample keys."""
    manifest, report = _recorded_run()
    store = open_store(pg_url, tmp_path)
    try:
        _save_five(store, manifest, report)
        keys = [sample.key for sample in manifest.samples]
        for key in keys:
            store.answers.put(key, _entry())
        store.answers.put("f" * 64, _entry())  # no run references it
    finally:
        store.close()
    return keys


def test_prune_and_gc_work_on_a_store_dry_run_first_and_refuse_a_read_only_role(
    pg: Pg, pg_db: str, tmp_path: Path
) -> None:
    url = pg.url(pg_db)
    keys = _five_runs(url, tmp_path)
    dry = _cli(["-m", "evals.runs", "--store", url, "prune", "--keep-last", "2"])
    assert dry.returncode == 0 and "would remove r2" in dry.stdout and "dry run" in dry.stdout, dry.stderr
    assert "would remove r3" not in dry.stdout
    reader = pg.url(pg_db, _role(pg, pg_db, "reader", "pw", write=False), "pw")
    refused = _cli(["-m", "evals.runs", "--store", reader, "prune", "--keep-last", "2", "--yes"])
    assert refused.returncode == 1 and "may only read" in refused.stderr and refused.stderr.count("\n") == 1
    done = _cli(["-m", "evals.runs", "--store", url, "prune", "--keep-last", "2", "--yes"])
    assert done.returncode == 0 and "removed 3 run(s)" in done.stdout, done.stderr
    store = open_store(url, tmp_path)
    try:
        assert store.runs.run_ids() == ["r3", "r4"]
    finally:
        store.close()
    gc = _cli(["-m", "evals.runs", "--store", url, "gc"])
    assert gc.returncode == 0 and "would remove 1 cache entries" in gc.stdout, gc.stdout + gc.stderr
    assert _cli(["-m", "evals.runs", "--store", reader, "gc", "--yes"]).returncode == 1
    assert "removed 1 cache entries" in _cli(["-m", "evals.runs", "--store", url, "gc", "--yes"]).stdout
    with psycopg.connect(url) as conn:
        left = {r[0] for r in conn.execute("SELECT key FROM attest.answers")}
    assert left == set(keys)  # what the runs reference stays


def test_prune_leaves_a_run_whose_writer_is_alive(pg_url: str, tmp_path: Path) -> None:
    _five_runs(pg_url, tmp_path)
    store = open_store(pg_url, tmp_path)
    try:
        live = store.runs.manifest("r0").replace(run_id="g1", status="generating")
        with store.runs.writing("g1"):
            store.runs.save("g1", "manifest", live)
            out = _cli(["-m", "evals.runs", "--store", pg_url, "prune", "--incomplete", "--yes"])
            assert out.returncode == 0 and "keep   g1 (another process is writing it)" in out.stdout, (
                out.stdout + out.stderr
            )
        assert "g1" in store.runs.run_ids()
    finally:
        store.close()


def test_pull_reads_the_runs_in_batches(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals import runs
    from evals.store.postgres import connection

    _five_runs(pg_url, tmp_path)
    sent: list[str] = []
    real_run = connection.Link.run
    monkeypatch.setattr(connection.Link, "run", lambda self, doing, fn: sent.append(doing) or real_run(self, doing, fn))
    assert runs.main(["--store", pg_url, "--cache-dir", str(tmp_path / "mine"), "pull"]) == 0
    assert sent.count("read runs") == 1  # the five runs' records in one statement, not 8 per run
    assert not [doing for doing in sent if doing.startswith(("read the manifest", "read the report", "read run "))]
    local = open_store(None, tmp_path / "mine")
    try:
        assert local.runs.run_ids() == ["r0", "r1", "r2", "r3", "r4"]
        assert local.runs.manifest("r3").run_id == "r3" and local.runs.report("r3") is not None
    finally:
        local.close()
