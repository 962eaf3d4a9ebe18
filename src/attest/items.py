"""What the `attest` commands read: items (TITLE SUMMARY, or JSON lines from a file or stdin) and a reader.

Input is validated by pydantic models: a blank or whitespace-only field is refused
in one line naming the field (and the file and line number), and a file with no
items is an error, not a silent success. Keys other than `id`, `title` and `summary`
on a line are ignored, so an export from a feed reader can be piped in as it is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, TextIO

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from attest.errors import AttestError
from attest.files import FileReadError, MiB, read_text_bounded

__all__ = ["InputFileError", "Item", "Reader", "check_reader", "item_from_args", "read_items"]

NonBlank = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]


_MAX_FILE_BYTES = 64 * MiB  # a file of items to tag: far more than anyone pastes
_TODO = "give a UTF-8 JSON-lines file, or - for stdin"


class InputFileError(AttestError):
    """An item or reader given on the command line, or a line of an items file, cannot be used."""


class Item(BaseModel):
    """One feed item: `title` and `summary`, each with some non-space text; `id` kept if given."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    id: str | int | None = None
    title: NonBlank
    summary: NonBlank

    @property
    def shown_id(self) -> str | None:
        """The id as printed: always a string (a numeric id 17 prints as "17")."""
        return None if self.id is None else str(self.id)


class Reader(BaseModel):
    """Who reads the feed: `persona` (for `react`) and `interests`, in their own words."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    persona: NonBlank | None = None
    interests: NonBlank


def item_from_args(title: str, summary: str) -> Item:
    """The item given as TITLE SUMMARY, or InputFileError naming the blank argument."""
    try:
        return Item(title=title, summary=summary)
    except ValidationError as exc:
        field, reason = _field_and_reason(exc)
        raise InputFileError(f"argument {field.upper()}: {reason}") from None


def check_reader(persona: str | None, interests: str) -> Reader:
    """The reader given as --persona/--interests, or InputFileError naming the blank option."""
    try:
        return Reader(persona=persona, interests=interests)
    except ValidationError as exc:
        field, reason = _field_and_reason(exc)
        raise InputFileError(f"option --{field}: {reason}") from None


def read_items(path: str, stdin: TextIO | None = None) -> list[Item]:
    """Every item of a JSON-lines file (`-` for stdin); blank lines are skipped, no items is an error."""
    where = "<stdin>" if path == "-" else path
    items = list(_parse_lines(where, _read_lines(path, stdin or sys.stdin)))
    if not items:
        raise InputFileError(f'{where}: no items in it: give one {{"title", "summary"}} JSON object per line')
    return items


def _read_lines(path: str, stdin: TextIO) -> list[str]:
    if path != "-":
        try:
            return read_text_bounded(path, _MAX_FILE_BYTES, todo=_TODO).splitlines()
        except FileReadError as exc:
            raise InputFileError(str(exc)) from None
    try:
        text = stdin.read(_MAX_FILE_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"<stdin>: cannot read it ({exc}); {_TODO}") from None
    if len(text) > _MAX_FILE_BYTES:
        raise InputFileError(f"<stdin>: over {_MAX_FILE_BYTES} characters; split the items into smaller files")
    return text.splitlines()


def _parse_lines(where: str, lines: list[str]) -> Iterator[Item]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield _parse_line(where, number, line)


def _parse_line(where: str, number: int, line: str) -> Item:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{where}:{number}: not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InputFileError(f"{where}:{number}: not JSON (nested too deeply)") from None
    if not isinstance(obj, dict):
        raise InputFileError(f'{where}:{number}: each line must be a JSON object with "title" and "summary"')
    try:
        return Item.model_validate(obj)
    except ValidationError as exc:
        field, reason = _field_and_reason(exc)
        raise InputFileError(f"{where}:{number}: field '{field}': {reason}") from None


def _field_and_reason(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else "(top level)"
    blank = err["type"] in ("string_pattern_mismatch", "string_too_short")
    return field, "must not be blank" if blank else err["msg"]
