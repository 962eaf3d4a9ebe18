"""The PostgreSQL store against a real server: answers, records, schema, roles and one-line failures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from evals.store.keys import Entry, Identity, request_key
from evals.store.open import open_store
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
    with pytest.raises(StoreError, match="schema version 99, newer than this attest's 1: upgrade attest"):
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
