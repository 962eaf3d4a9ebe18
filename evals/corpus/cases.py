"""The corpus case models: one strict pydantic model per task.

Every case has an ``id`` (unique in its file, kebab-case), a ``split`` (``train``
or ``dev``), a ``family`` (the kind of failure it belongs to, one of its task's
families below, so reports can break scores down by family) and a ``note`` naming
the failure it targets; then the task's inputs and expectations.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from attest.features import Tag

__all__ = [
    "EXPLANATION_FAMILIES",
    "REACTION_FAMILIES",
    "SPLITS",
    "TAGGING_FAMILIES",
    "AnyCase",
    "Case",
    "CaseId",
    "ExplanationCase",
    "ExplanationFamily",
    "NonEmpty",
    "ReactionCase",
    "ReactionFamily",
    "Split",
    "TaggingCase",
    "TaggingFamily",
]

CaseId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Split = Literal["train", "dev"]
SPLITS: tuple[Split, ...] = ("train", "dev")

# Families (a case's note says which failure inside its family it targets):
# tagging: anchor (plain on-topic item), keyword-trap (a word that names another tag), two-topic
#   (several real topics), edge (no tag fits exactly), long-abstract (a full-length abstract);
# reaction: fixture (fx-<persona>-<item>, from examples/flows), adjacent (the field next door, a no),
#   bait (AI-for-science prose, a no), terse (a one-line summary, clearly on topic, a yes), brief-off (a
#   one-line summary whose title borrows a word of the reader's field, off topic, a no; not terse-*, whose
#   cases the design note labels true: issue 30 renamed it from terse-off), crossover (ML for
#   chemistry, labelled per persona: each reader gets both verdicts), near-miss (a neighbouring field that
#   touches a stated interest, a yes), anchor, long-abstract;
# explanation: match, refuse (nothing shared), near-refuse (the reader's broad field, but no stated
#   interest), oblique-match (the shared topic in other words), long-abstract.
TaggingFamily = Literal["anchor", "keyword-trap", "two-topic", "edge", "long-abstract"]
ReactionFamily = Literal[
    "fixture", "adjacent", "bait", "terse", "brief-off", "crossover", "near-miss", "anchor", "long-abstract"
]
ExplanationFamily = Literal["match", "refuse", "near-refuse", "oblique-match", "long-abstract"]
TAGGING_FAMILIES: tuple[TaggingFamily, ...] = get_args(TaggingFamily)
REACTION_FAMILIES: tuple[ReactionFamily, ...] = get_args(ReactionFamily)
EXPLANATION_FAMILIES: tuple[ExplanationFamily, ...] = get_args(ExplanationFamily)


class Case(BaseModel):
    """What every task's case has (a task's case model derives it and narrows `family` to its families)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: CaseId
    split: Split
    note: NonEmpty
    family: NonEmpty


class TaggingCase(Case):
    family: TaggingFamily
    title: NonEmpty
    summary: NonEmpty
    tags: Annotated[list[Tag], Field(min_length=1, max_length=4)]


class ReactionCase(Case):
    family: ReactionFamily
    persona: NonEmpty
    interests: NonEmpty
    title: NonEmpty
    summary: NonEmpty
    verdict: bool


class ExplanationCase(Case):
    family: ExplanationFamily
    interests: NonEmpty
    title: NonEmpty
    summary: NonEmpty
    refuse: bool
    must_mention_any: list[NonEmpty]


AnyCase = TaggingCase | ReactionCase | ExplanationCase
