"""Explanation: one short sentence telling a reader why an item matches their interests.

`explanation_messages` is the one renderer; `generate_explanation` and `feed.explain`
call it, and so does the explanation eval. When no stated interest matches, the
prompt mandates the exact refusal in `REFUSAL`. `judge_messages` is the one renderer
of the judge prompt, which grades an explanation pass or fail (`Judgement`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from attest.backends.stub import explanation_answer
from attest.backends.types import ChatJSON, Message
from attest.chat import ask
from attest.render import item_block, one_line
from attest.vocab import REFUSAL

__all__ = [
    "EXPLANATION_SYSTEM_PROMPT",
    "JUDGE_SYSTEM_PROMPT",
    "REFUSAL",
    "Explanation",
    "Judgement",
    "explanation_messages",
    "generate_explanation",
    "judge_messages",
]

EXPLANATION_SYSTEM_PROMPT = f"""\
You write the one-line note a research feed shows under an item, telling the reader \
why it matches their interests.

- If the item is about one of the reader's stated interests, write one sentence of \
fewer than fifteen words, addressed to the reader as "you", that names the specific \
shared topic, e.g. "You work on palladium catalysis, and this is a new C-N coupling ligand."
- Start with the reason itself. Do not open with "You will find", "This item" or \
any other preamble.
- If none of the reader's stated interests matches the item, answer exactly: {REFUSAL}
- Never claim a match through vague themes such as "advanced topics", "AI" or \
"science" in general: a match names a topic the reader actually listed.

Answer with JSON only: {{"text": "..."}}."""


class Explanation(BaseModel):
    """The explanation answer: one sentence, or exactly the refusal."""

    model_config = ConfigDict(extra="forbid", title="Explanation")

    text: Annotated[str, Field(min_length=1, max_length=160)]


def explanation_messages(profile: str, title: str, summary: str) -> list[Message]:
    """Render the explanation request: the one place the explanation prompt is built."""
    return [
        {"role": "system", "content": EXPLANATION_SYSTEM_PROMPT},
        {"role": "user", "content": f"Interests: {one_line(profile)}\n\n{item_block(title, summary)}"},
    ]


JUDGE_SYSTEM_PROMPT = f"""\
You grade the one-line note a research feed shows under an item, telling a reader why \
it matches their interests. You are given the reader's interests, the item, and the note.

Grade "pass" only if one of these holds:
- the note truthfully names a specific topic that this item shares with the reader's \
stated interests, as one sentence addressed to the reader; or
- the note is a refusal ("{REFUSAL}") and refusing was right: none of the reader's \
stated interests matches the item.

Grade "fail" otherwise: a connection that is false or only a shared word, a vague theme, \
a restated title, interests echoed back, a refusal when an interest does match, or \
anything that is not a sentence to the reader.

Answer with JSON only: {{"grade": "pass" or "fail", "reason": "one short sentence"}}."""


class Judgement(BaseModel):
    """The judge's answer: pass or fail, and why in a sentence."""

    model_config = ConfigDict(extra="forbid", title="Judgement")

    grade: Literal["pass", "fail"]
    reason: Annotated[str, Field(max_length=300)]


def judge_messages(profile: str, title: str, summary: str, text: str) -> list[Message]:
    """Render the judge request for one explanation `text`: the one place the judge prompt is built."""
    user = f"Interests: {one_line(profile)}\n\n{item_block(title, summary)}\n\nNote: {one_line(text)}"
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def generate_explanation(profile: str, title: str, summary: str, *, chat_json: ChatJSON | None = None) -> Explanation:
    """Ask the model why the item matches the reader's interests (or for the refusal)."""
    return ask(explanation_messages(profile, title, summary), Explanation, chat_json, stub_answer=explanation_answer)
