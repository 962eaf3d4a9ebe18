"""The store's one validation step: what `connect` does with --store/ATTEST_STORE before reaching a server.

Kept beside the connection (evals.store.postgres.connection), which it rehearses; the
entry points call it through evals.store.settings.resolve_store_url.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import conninfo

from attest.config import checked
from attest.errors import ConfigError
from evals.store.postgres.connection import STORE_SETTING, STORE_VALID, connect_kwargs

__all__ = ["check_url"]

_SWALLOWED = re.compile(r"(^|\s)password\s*=")


def check_url(url: str) -> str:
    """`url` if everything `connect` does with it before reaching a server works; else one ConfigError.

    That is: libpq parses it, psycopg merges attest's options into it and reads its
    timeout, and each host it names (a comma-separated list) can be handed to the
    resolver (IDNA-encoded), which is where a 64-character label or a lone `xn--` fails.
    Nothing is resolved or connected here. The message never repeats the URL or libpq's
    words about it, which may hold the password.
    """
    return checked(STORE_SETTING, STORE_VALID, lambda: _rehearse(url))


def _rehearse(url: str) -> str:
    try:
        kwargs = connect_kwargs(url)
    except psycopg.ProgrammingError:  # libpq's reason may quote the string, password and all
        raise ConfigError(f"{STORE_SETTING} is not a PostgreSQL URL or connection string: {STORE_VALID}") from None
    info = conninfo.conninfo_to_dict(url, **kwargs)
    conninfo.timeout_from_conninfo(info)
    _refuse_what_messages_would_show(info)
    for host in str(info.get("host") or "").split(","):
        if host and not host.startswith("/") and host[1:2] != ":":  # a socket directory is a path, not a name
            host.encode("idna")
    return url


def _refuse_what_messages_would_show(info: dict[str, Any]) -> None:
    """libpq reads `port= password=pw` as the port "password=pw", and its messages (and `describe`) show a
    port, host, user or database: so a value that swallowed the password, or a port that is not a number,
    is refused here without repeating it."""
    for key, value in info.items():
        if key != "password" and _SWALLOWED.search(str(value)):
            raise ConfigError(
                f"{STORE_SETTING}: {key}= is empty, so it took the password= after it as its value: "
                f"write {key}='' or leave it out"
            )
    for port in str(info.get("port") or "").split(","):
        if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ConfigError(f"{STORE_SETTING}: the port is not a number from 1 to 65535: {STORE_VALID}")
