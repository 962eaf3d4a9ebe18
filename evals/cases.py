"""The corpus case models: one strict pydantic model per task.

Every case has an ``id`` (unique in its file, kebab-case), a ``split`` (``train``
or ``dev``) and a ``note`` naming the failure it targets; then the task's inputs
and expectations.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from attest.features import Tag

CaseId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Split = Literal["train", "dev"]
SPLITS: tuple[Split, ...] = ("train", "dev")


class _Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: CaseId
    split: Split
    note: NonEmpty


class TaggingCase(_Case):
    title: NonEmpty
    summary: NonEmpty
    tags: Annotated[list[Tag], Field(min_length=1, max_length=4)]


class ReactionCase(_Case):
    persona: NonEmpty
    interests: NonEmpty
    title: NonEmpty
    summary: NonEmpty
    verdict: bool


class ExplanationCase(_Case):
    interests: NonEmpty
    title: NonEmpty
    summary: NonEmpty
    refuse: bool
    must_mention_any: list[NonEmpty]


AnyCase = TaggingCase | ReactionCase | ExplanationCase
