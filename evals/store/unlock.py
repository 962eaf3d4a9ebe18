"""`python -m evals.store.local.cache unlock [--cache-dir DIR]`: drop the leases a stopped run left in the cache."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from attest.errors import run_reporting_errors
from evals.store.local.cache import ResponseCache
from evals.store.settings import resolve_cache_dir

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m evals.store.local.cache unlock [--cache-dir DIR]`: drop the leases a stopped run left in the cache."""
    parser = argparse.ArgumentParser(
        prog="python -m evals.store.local.cache", description="Maintain the response cache."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    unlock = commands.add_parser("unlock", help="drop every lease (a run stopped with Ctrl-Z holds its leases)")
    unlock.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    args = parser.parse_args(argv)
    return run_reporting_errors("evals.store.local.cache", lambda: _unlock(resolve_cache_dir(args.cache_dir)))


def _unlock(directory: Path) -> int:
    cache = ResponseCache(directory)
    try:
        print(f"dropped {cache.unlock()} lease(s) in {directory}")
    finally:
        cache.close()
    return 0
