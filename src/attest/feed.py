"""The app's flows over a list of feed items: simulated ratings and explanations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attest.backends.types import ChatJSON
from attest.explain import Explanation, generate_explanation
from attest.simulate import Reaction, react_to_item

__all__ = ["Item", "Persona", "Rating", "explain", "simulate_ratings"]


@dataclass(frozen=True)
class Item:
    """A research-feed item."""

    id: str
    title: str
    summary: str


@dataclass(frozen=True)
class Persona:
    """A reader: who they are, and their interests in their own words."""

    id: str
    persona: str
    interests: str


@dataclass(frozen=True)
class Rating:
    """One persona's simulated reaction to one item."""

    item_id: str
    reaction: Reaction

    @property
    def signed_confidence(self) -> int:
        """Confidence with the verdict's sign: +5 is a certain yes, -5 a certain no."""
        return self.reaction.confidence if self.reaction.verdict else -self.reaction.confidence


def simulate_ratings(persona: Persona, items: Sequence[Item], *, chat_json: ChatJSON | None = None) -> list[Rating]:
    """Ask whether `persona` would read each item, in order."""
    return [
        Rating(
            item.id, react_to_item(persona.persona, persona.interests, item.title, item.summary, chat_json=chat_json)
        )
        for item in items
    ]


def explain(profile: str, item: Item, *, chat_json: ChatJSON | None = None) -> Explanation:
    """Explain to a reader with interests `profile` why `item` matches them (or refuse)."""
    return generate_explanation(profile, item.title, item.summary, chat_json=chat_json)
