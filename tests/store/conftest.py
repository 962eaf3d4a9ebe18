"""One real PostgreSQL 16 per test session (per xdist worker), from the `pgserver` package,
and a fresh database per test, dropped after it.

The server listens on a unix socket only. Its pg_hba.conf is rewritten so that the
`postgres` superuser connects without a password and every other role needs its
password (scram), so the wrong-password and read-only tests meet real authentication.
If the server cannot start, every test using it FAILS with the reason: never a skip.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

_HBA = "local all postgres trust\nlocal all all scram-sha-256\n"


@dataclass
class Pg:
    """The session's server: its socket directory, and the handle to stop and start it."""

    server: Any
    socket_dir: str

    def url(self, db: str = "postgres", user: str = "postgres", password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@/{db}?host={self.socket_dir}"

    def admin(self, db: str = "postgres") -> psycopg.Connection[Any]:
        return psycopg.connect(self.url(db), autocommit=True)

    def stop(self) -> None:
        import pgserver

        pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        self.server.ensure_postgres_running()


@pytest.fixture(scope="session")
def pg() -> Iterator[Pg]:
    # Not under tmp_path_factory: as root, pgserver runs PostgreSQL as another user, who must be able to
    # traverse every parent directory, and each pytest session re-closes /tmp/pytest-of-root to 0700.
    top = Path(tempfile.mkdtemp(prefix="attest-pg-"))
    top.chmod(0o755)
    datadir = top / "data"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
            import pgserver

            server = pgserver.get_server(datadir, cleanup_mode="stop")
        socket_dir = str(psycopg.conninfo.conninfo_to_dict(server.get_uri())["host"])
        (Path(server.pgdata) / "pg_hba.conf").write_text(_HBA, encoding="utf-8")
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
    except Exception as exc:  # any failure to start is the reason the tests fail
        pytest.fail(f"cannot start PostgreSQL from the pgserver package in {datadir}: {type(exc).__name__}: {exc}")
    yield Pg(server, socket_dir)
    server.cleanup()
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def pg_db(pg: Pg) -> Iterator[str]:
    """A fresh, empty database for one test: its name. Dropped after (connections forced out)."""
    name = f"t_{secrets.token_hex(6)}"
    pg.start()  # a fault test may have stopped the server
    with pg.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    pg.start()
    with pg.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg: Pg, pg_db: str) -> str:
    """The superuser's URL of the test's fresh database (libpq's `?host=/socket/dir` form)."""
    return pg.url(pg_db)
