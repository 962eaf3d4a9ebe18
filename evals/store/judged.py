"""A report's `judged` block as a strict type, checked on every read of a report (Report.__post_init__).

Plain msgspec structs, not records: they are never saved on their own, only checked where
the report holds them, and importing nothing of evals keeps evals.store.models free to import them.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

__all__ = ["JudgedBlock", "JudgedRow"]

_Count = Annotated[int, Meta(ge=0, le=10**9)]
_Name = Annotated[str, Meta(max_length=1000)]


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class _Judge(_Strict, frozen=True, kw_only=True):
    """The judge, as evals.store.models.JudgeIdentity."""

    backend: _Name
    model: _Name
    digest: _Name
    options: dict[str, Any] = {}
    prompt_fingerprint: Annotated[str, Meta(max_length=128)]


class JudgedRow(_Strict, frozen=True, kw_only=True):
    """One sample's judgement (engine/judge.py's Judged as JSON)."""

    id: _Name
    sample: _Count
    passed: bool
    reason: Annotated[str, Meta(max_length=10_000)]
    unparseable: bool = False


class JudgedBlock(_Strict, frozen=True, kw_only=True):
    """The judge, its cache use, the counts and every sample's judgement."""

    judge: _Judge
    generate: dict[str, Any] = {}
    samples: _Count
    passed: _Count
    unparseable: list[_Name] = []
    results: list[JudgedRow]
