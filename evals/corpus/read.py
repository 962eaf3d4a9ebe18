"""Read a corpus file into validated cases, reporting every problem at once.

``read_cases`` is the one loader the eval pipeline uses. A corpus is a JSON list
of objects; every object is validated strictly (no type coercion) against the
case model, and all problems in the file are collected into one
:class:`CorpusError` whose lines name the file, the case and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from attest.errors import AttestError
from attest.files import FileReadError, read_bounded

__all__ = ["MAX_CORPUS_BYTES", "CorpusError", "read_cases", "split_sha256"]

C = TypeVar("C", bound=BaseModel)

MAX_CORPUS_BYTES = _MAX_BYTES = 5 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_USABLE_ID = re.compile(r"[\x21-\x7e]{1,80}")
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (dict, "a JSON object"),
    (list, "a JSON list"),
    (str, "a string"),
    (bool, "a boolean"),
    (int, "a number"),
    (float, "a number"),
    (type(None), "null"),
)


class CorpusError(AttestError):
    """All problems found in one corpus file; str() is one line per problem.

    An AttestError, so every entry point reports a bad corpus as its problem lines, never a traceback.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: list[str] = list(problems)
        super().__init__("\n".join(self.problems))


class _Object(dict[str, Any]):
    """A parsed JSON object that remembers keys it saw more than once."""

    duplicate_keys: tuple[str, ...] = ()


def read_cases(path: Path, model: type[C]) -> list[C]:
    """Load ``path`` as a JSON list of ``model`` cases; raise CorpusError listing all problems."""
    data = _parse(path, _read_bytes(path))
    first = _first_indices(data)
    cases: list[C] = []
    problems: list[str] = []
    for index, raw in enumerate(data):
        case, case_problems = _check_case(path, index, raw, model, first)
        problems.extend(case_problems)
        if case is not None:
            cases.append(case)
    if problems:
        raise CorpusError(problems)
    return cases


def split_sha256(cases: Sequence[BaseModel]) -> str:
    """Sha256 hex of the canonical JSON of ``cases`` in the given order."""
    dumped = [case.model_dump(mode="json") for case in cases]
    text = json.dumps(dumped, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _file_error(path: Path, what: str, todo: str) -> CorpusError:
    return CorpusError([f"{path}: {what}; {todo}"])


def _read_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0  # the bounded reader says what is wrong
    if not path.exists() and not path.is_symlink():
        raise _file_error(path, "no such file", "check the path or create the file")
    if size > _MAX_BYTES:
        raise _too_big(path, size)
    try:
        return read_bounded(
            path, _MAX_BYTES, todo="point at the corpus JSON file (a corpus is hand-written, under 5 MB)"
        )
    except FileReadError as exc:
        raise CorpusError([str(exc)]) from None


def _too_big(path: Path, size: int) -> CorpusError:
    what = f"file is {size} bytes, over the {_MAX_BYTES}-byte (5 MB) cap"
    return _file_error(path, what, "a corpus is hand-written; check this is the right file")


def _parse(path: Path, data: bytes) -> list[Any]:
    text = _decode(path, data)
    if not text.strip():
        raise _file_error(path, "file is empty", "write a JSON list of cases")
    try:
        parsed = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise _file_error(path, _json_problem(exc), "fix the JSON syntax") from None
    except RecursionError:
        what = "JSON nested too deeply to parse"
        todo = "a case is a flat object of strings, booleans and lists"
        raise _file_error(path, what, todo) from None
    except ValueError as exc:
        raise _file_error(path, f"not JSON: {exc}", "fix the value") from None
    if not isinstance(parsed, list):
        what = f"top level is {_json_type(parsed)}, not a list"
        raise _file_error(path, what, "put the cases in one JSON list [...]")
    if not parsed:
        raise _file_error(path, "the list holds no cases", "add cases")
    return parsed


def _decode(path: Path, data: bytes) -> str:
    if data.startswith(_BOM):
        what = "starts with a UTF-8 byte-order mark"
        raise _file_error(path, what, "save it as UTF-8 without BOM")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(data[: exc.start])
        what = f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line} column {column})"
        raise _file_error(path, what, "save it as UTF-8") from None


def _position(before: bytes) -> tuple[int, int]:
    line = before.count(b"\n") + 1
    column = len(before) - (before.rfind(b"\n") + 1) + 1
    return line, column


def _json_problem(exc: json.JSONDecodeError) -> str:
    """The decoder's complaint with its position; a trailing comma is named as such (3.11 and 3.13 word it apart)."""
    if "trailing comma" in exc.msg.lower():
        return f"not JSON: trailing comma at line {exc.lineno} column {exc.colno}"
    before = exc.doc[: exc.pos].rstrip()
    if exc.doc[exc.pos : exc.pos + 1] in ("]", "}") and before.endswith(","):
        comma = len(before) - 1
        line = exc.doc.count("\n", 0, comma) + 1
        column = comma - (exc.doc.rfind("\n", 0, comma) + 1) + 1
        return f"not JSON: trailing comma at line {line} column {column}"
    return f"not JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}"


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) < len(pairs):
        keys = [key for key, _ in pairs]
        obj.duplicate_keys = tuple(sorted({key for key in keys if keys.count(key) > 1}))
    return obj


def _json_type(value: object) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _case_name(index: int, raw: object) -> str:
    case_id = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(case_id, str) and _USABLE_ID.fullmatch(case_id):
        return case_id
    return f"#{index}"


def _first_indices(data: list[Any]) -> dict[str, int]:
    first: dict[str, int] = {}
    for index, raw in enumerate(data):
        case_id = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(case_id, str):
            first.setdefault(case_id, index)
    return first


def _check_case(
    path: Path, index: int, raw: object, model: type[C], first: dict[str, int]
) -> tuple[C | None, list[str]]:
    if not isinstance(raw, dict):
        what = f"is {_json_type(raw)}, not a JSON object"
        return None, [f"{path}: case #{index}: {what}; write each case as an object"]
    case, field_problems = _validate(raw, model)
    problems = [
        *_duplicate_keys(raw),
        *field_problems,
        *_duplicate_id(raw, index, first),
    ]
    lines = [f"{path}: case {_case_name(index, raw)}: {problem}" for problem in problems]
    return (None if lines else case), lines


def _validate(raw: dict[str, Any], model: type[C]) -> tuple[C | None, list[str]]:
    try:
        return model.model_validate(raw, strict=True), []
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        return None, [f"field '{_dotted(e['loc'])}': {_one_line(e['msg'])}" for e in errors]


def _duplicate_keys(raw: dict[str, Any]) -> list[str]:
    keys = raw.duplicate_keys if isinstance(raw, _Object) else ()
    return [f"field '{key}': duplicate key (JSON keeps only the last value)" for key in keys]


def _duplicate_id(raw: dict[str, Any], index: int, first: dict[str, int]) -> list[str]:
    case_id = raw.get("id")
    if isinstance(case_id, str) and first[case_id] != index:
        return [f"field 'id': duplicate id (also case #{first[case_id]})"]
    return []


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(case)"


def _one_line(text: str) -> str:
    return " ".join(text.split())
