"""The `attest` command: the app's three features on the command line, JSON out, one line per item.

    attest tag "TITLE" "SUMMARY"
    attest react --persona "..." --interests "..." --file items.jsonl
    attest explain --interests "..." --file -        # JSON lines on stdin

Errors become one line on stderr and exit code 1 (usage errors: exit 2);
`ATTEST_DEBUG=1` re-raises them with the traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from attest import __version__
from attest.errors import run_main
from attest.options import OneLineErrorParser, add_backend_options, settings_from_args

if TYPE_CHECKING:
    from attest.backends.settings import Settings
    from attest.backends.types import Backend, ChatJSON, StubAnswer
    from attest.items import Item

__all__ = ["BackendFactory", "add_backend_options", "build_parser", "main"]

Answer = Callable[["Item", "ChatJSON"], dict[str, Any]]
BackendFactory = Callable[["Settings"], "Backend"]

FILE_HELP = 'a JSON-lines file of {"title", "summary"} objects ("id" kept if present); "-" reads stdin'
USAGE_HINT = {
    "tag": '`attest tag "TITLE" "SUMMARY"`, or `attest tag --file items.jsonl`',
    "react": '`attest react --persona "..." --interests "..." "TITLE" "SUMMARY"`, or `... --file items.jsonl`',
    "explain": '`attest explain --interests "..." "TITLE" "SUMMARY"`, or `... --file items.jsonl`',
}


def build_parser() -> argparse.ArgumentParser:
    """The `attest` argument parser: one subcommand per feature, each with the shared backend options."""
    parser = OneLineErrorParser(prog="attest", description="Research-feed features backed by a local chat model.")
    parser.add_argument("--version", action="version", version=f"attest {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _command(sub, "tag", 'tag items with 1-4 topics from the vocabulary; prints {"tags": [...]} per item')
    react = _command(sub, "react", "would this reader read each item? prints verdict, confidence, reasoning")
    react.add_argument("--persona", required=True, help="who the reader is, in a sentence or two")
    react.add_argument("--interests", required=True, help="what the reader reads, in their own words")
    explain = _command(sub, "explain", 'why each item matches the reader\'s interests; prints {"text": ...}')
    explain.add_argument("--interests", required=True, help="what the reader reads, in their own words")
    return parser


def _command(sub: Any, name: str, summary: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = sub.add_parser(name, help=summary, description=summary)
    command.add_argument("title", nargs="?", help="the item's title (or use --file)")
    command.add_argument("summary", nargs="?", help="the item's summary (or use --file)")
    command.add_argument("--file", metavar="PATH", help=FILE_HELP)
    add_backend_options(command)
    return command


def main(
    argv: Sequence[str] | None = None, *, stdin: TextIO | None = None, backend_factory: BackendFactory | None = None
) -> int:
    """Run `attest ARGV`; `stdin` (for `--file -`) and `backend_factory` (default `make_backend`) can be injected."""
    args = build_parser().parse_args(argv)
    return run_main("attest", lambda: _run(args, stdin, backend_factory))


def _run(args: argparse.Namespace, stdin: TextIO | None, backend_factory: BackendFactory | None) -> int:
    from attest.backends.registry import make_backend

    answer = _answerer(args)
    items = _items(args, stdin)
    settings = dataclasses.replace(settings_from_args(args), stub_answer=_stub_answer(args.command))
    backend = (backend_factory or make_backend)(settings)
    try:
        for item in items:
            shown = {"id": item.shown_id} if item.shown_id is not None else {}
            print(json.dumps({**shown, **answer(item, backend.chat_json)}), flush=True)
    finally:
        backend.close()
    return 0


def _stub_answer(command: str) -> StubAnswer:
    """The stub backend's answerer for this command's feature."""
    from attest.backends import stub

    return {"tag": stub.tags_answer, "react": stub.reaction_answer}.get(command, stub.explanation_answer)


def _answerer(args: argparse.Namespace) -> Answer:
    """The command's call for one item (the reader is validated here, before any item is read)."""
    from attest.items import check_reader

    if args.command == "tag":
        from attest.features import active_tag_prompt

        active_tag_prompt()  # ATTEST_TAG_PROMPT is read and checked once, before any item
        return _tag
    reader = check_reader(getattr(args, "persona", None), args.interests)
    if args.command == "react":
        return lambda item, chat: _react(reader.persona or "", reader.interests, item, chat)
    return lambda item, chat: _explain(reader.interests, item, chat)


def _tag(item: Item, chat: ChatJSON) -> dict[str, Any]:
    from attest.features import tag_item

    return {"tags": list(tag_item(item.title, item.summary, chat_json=chat).tags)}


def _react(persona: str, interests: str, item: Item, chat: ChatJSON) -> dict[str, Any]:
    from attest.simulate import react_to_item

    return react_to_item(persona, interests, item.title, item.summary, chat_json=chat).model_dump()


def _explain(interests: str, item: Item, chat: ChatJSON) -> dict[str, Any]:
    from attest.explain import generate_explanation

    return generate_explanation(interests, item.title, item.summary, chat_json=chat).model_dump()


def _items(args: argparse.Namespace, stdin: TextIO | None) -> list[Item]:
    from attest.items import InputFileError, item_from_args, read_items

    if args.file is not None:
        if args.title is not None:
            raise InputFileError("give either TITLE SUMMARY or --file, not both")
        return read_items(args.file, stdin)
    if args.title is None or args.summary is None:
        raise InputFileError(f"give an item as {USAGE_HINT[args.command]}")
    return [item_from_args(args.title, args.summary)]


if __name__ == "__main__":
    raise SystemExit(main())
