"""The `attest` command: `attest tag "TITLE" "SUMMARY"` or `attest tag --file items.jsonl`.

Errors become one line on stderr and exit code 1; `ATTEST_DEBUG=1` re-raises them
with the traceback.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from attest import __version__
from attest.backends.registry import KINDS
from attest.errors import AttestError, run_reporting_errors

__all__ = ["main"]


class InputFileError(AttestError):
    """A line of an items file cannot be used."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attest", description="Research-feed features backed by a local chat model.")
    parser.add_argument("--version", action="version", version=f"attest {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    tag = sub.add_parser("tag", help="tag items with topics from the vocabulary; prints JSON")
    tag.add_argument("title", nargs="?", help="the item's title")
    tag.add_argument("summary", nargs="?", help="the item's summary")
    tag.add_argument("--file", type=Path, help='a JSON-lines file of {"title", "summary"} objects ("id" optional)')
    add_backend_options(tag)
    return parser


def add_backend_options(parser: argparse.ArgumentParser, *, default_backend: str = "ollama") -> None:
    """The options every entry point shares for choosing and tuning a backend."""
    parser.add_argument(
        "--backend",
        choices=KINDS,
        help=f"model backend (env ATTEST_BACKEND; default {default_backend})",
    )
    parser.add_argument("--model", help="model name (env ATTEST_MODEL; Ollama default gemma4:e2b)")
    parser.add_argument("--retries", type=int, default=3, help="attempts per request on transport faults (default 3)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one answer (default 120)")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_reporting_errors("attest", lambda: _tag(args))


def _tag(args: argparse.Namespace) -> int:
    from attest.backends.registry import make_backend
    from attest.backends.retry import RetryPolicy
    from attest.backends.settings import Settings
    from attest.features import tag_item

    items = list(_items(args))
    retry = RetryPolicy(attempts=max(1, args.retries), timeout_s=args.timeout)
    backend = make_backend(Settings.resolve(backend=args.backend, model=args.model, retry=retry))
    for item_id, title, summary in items:
        tags = tag_item(title, summary, chat_json=backend.chat_json).tags
        print(json.dumps({"id": item_id, "tags": tags} if item_id is not None else {"tags": tags}))
    return 0


def _items(args: argparse.Namespace) -> Iterator[tuple[str | None, str, str]]:
    if args.file is not None:
        if args.title is not None:
            raise InputFileError("give either TITLE SUMMARY or --file, not both")
        yield from _read_jsonl(args.file)
        return
    if not args.title or not args.summary:
        raise InputFileError('give an item as `attest tag "TITLE" "SUMMARY"`, or `attest tag --file items.jsonl`')
    yield None, args.title, args.summary


def _read_jsonl(path: Path) -> Iterator[tuple[str | None, str, str]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{path}: cannot read it ({exc}); give a UTF-8 JSON-lines file") from None
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield _parse_line(path, number, line)


def _parse_line(path: Path, number: int, line: str) -> tuple[str | None, str, str]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("title"), str) or not isinstance(obj.get("summary"), str):
        raise InputFileError(f'{path}:{number}: each line must be an object with string "title" and "summary"')
    item_id = obj.get("id")
    return (str(item_id) if item_id is not None else None), obj["title"], obj["summary"]


if __name__ == "__main__":
    raise SystemExit(main())
