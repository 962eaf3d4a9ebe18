"""A model's raw text made into a task's answer: `parse_answer`, `ModelOutputError`, `schema_of`.

A leaf module (pydantic and `attest.errors` only): the scorers import it without
importing any backend, so scoring stays model-free by construction.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from attest.errors import AttestError

__all__ = ["ModelOutputError", "parse_answer", "schema_of"]

T = TypeVar("T", bound=BaseModel)


class ModelOutputError(AttestError):
    """The model answered, but not with valid JSON for the task's schema."""

    def __init__(self, text: str, reason: str) -> None:
        shown = text if len(text) <= 200 else text[:200] + f"... ({len(text)} chars)"
        super().__init__(f"the model's answer is unusable: {reason}; it answered {shown!r}")
        self.text = text
        self.reason = reason


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent as the structured-output format for `model` (a fresh copy: callers may change it)."""
    return copy.deepcopy(_schema(model))


@functools.lru_cache(maxsize=64)
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """Cached per model class: pydantic builds the schema afresh on every call (half a millisecond), and an
    eval asks for its task's schema once per request and per scored answer."""
    return model.model_json_schema()


def parse_answer(text: str, model: type[T]) -> T:
    """Parse a model's raw text into `model`, or raise ModelOutputError with a prose reason."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise ModelOutputError(text, f"output is not valid JSON: {_json_reason(exc)}") from None
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise ModelOutputError(text, f"output fails the {model.__name__} schema: {_validation_reason(exc)}") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _json_reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at char {exc.pos}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def _validation_reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"field '{where}': {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
