"""`python -m evals.unlock [--cache-dir DIR]`: drop the leases a stopped run left in the local cache."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attest.errors import run_reporting_errors
from attest.options import OneLineErrorParser
from evals.store.open import open_store
from evals.store.settings import resolve_cache_dir

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Drop every lease in the cache (a run stopped with Ctrl-Z, or killed, holds its leases)."""
    parser = OneLineErrorParser(
        prog="python -m evals.unlock", description="Drop every lease a stopped run left in the local cache."
    )
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    args = parser.parse_args(argv)
    return run_reporting_errors("evals.unlock", lambda: _unlock(resolve_cache_dir(args.cache_dir)))


def _unlock(directory: Path) -> int:
    opened = open_store(None, directory)
    try:
        print(f"dropped {opened.answers.unlock()} lease(s) in {directory}")
    finally:
        opened.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
