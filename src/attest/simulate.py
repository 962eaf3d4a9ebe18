"""Reaction: would this persona read this item? A verdict, a confidence and a reason.

`reaction_messages` is the one renderer; `react_to_item` and `feed.simulate_ratings`
call it, and so does the reaction eval.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from attest.backends.stub import reaction_answer
from attest.backends.types import ChatJSON, Message
from attest.chat import ask
from attest.render import item_block, one_line

__all__ = ["REACTION_SYSTEM_PROMPT", "Reaction", "react_to_item", "reaction_messages"]

REACTION_SYSTEM_PROMPT = """\
You simulate one reader of a research feed. Given who the reader is and their \
interests in their own words, decide whether they would open and read this item.

- Judge by the reader's stated interests, not by shared buzzwords. An item from a \
neighbouring field that the reader does not work in, or broad "AI for science" \
prose with no concrete method or result in their area, is usually skipped.
- A short summary that is clearly on one of their topics is still worth reading.
- verdict: true if they would read it, false if they would skip it.
- confidence: how sure you are of the verdict, from 1 (a guess) to 5 (certain).
- reasoning: one sentence that names the item's topic and the interest it meets or misses.

Answer with JSON only: {"verdict": true, "confidence": 4, "reasoning": "..."}."""


class Reaction(BaseModel):
    """The reaction answer; `confidence` is unsigned, its direction comes from `verdict`."""

    model_config = ConfigDict(extra="forbid", title="Reaction")

    verdict: bool
    confidence: Annotated[int, Field(ge=1, le=5)]
    reasoning: Annotated[str, Field(min_length=1, max_length=300)]


def reaction_messages(persona: str, interests: str, title: str, summary: str) -> list[Message]:
    """Render the reaction request: the one place the reaction prompt is built."""
    reader = f"Reader: {one_line(persona)}\nInterests: {one_line(interests)}"
    return [
        {"role": "system", "content": REACTION_SYSTEM_PROMPT},
        {"role": "user", "content": f"{reader}\n\n{item_block(title, summary)}"},
    ]


def react_to_item(
    persona: str, interests: str, title: str, summary: str, *, chat_json: ChatJSON | None = None
) -> Reaction:
    """Ask the model whether the persona would read the item."""
    return ask(reaction_messages(persona, interests, title, summary), Reaction, chat_json, stub_answer=reaction_answer)
