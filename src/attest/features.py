"""Tagging: label a research-feed item with 1-4 topic tags from a fixed vocabulary.

`tag_messages` is the one renderer: `tag_item`, `attest tag`, the eval and the
optimiser all build the prompt through it. `ATTEST_TAG_PROMPT` may name a JSON
artifact (`{"instructions": str, "demos": [{"title", "summary", "tags"}]}`) whose
instructions and demonstrations replace the default prompt; the vocabulary is
always appended, so an artifact cannot drop it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from attest.backends.stub import tags_answer
from attest.backends.types import ChatJSON, Message
from attest.chat import ask
from attest.errors import AttestError
from attest.files import FileReadError, read_text_bounded
from attest.render import item_block
from attest.vocab import TAG_GLOSSES, TAGS, Tag

__all__ = [
    "DEFAULT_TAG_INSTRUCTIONS",
    "MAX_TAG_PROMPT_BYTES",
    "TAGS",
    "TAG_GLOSSES",
    "ItemTags",
    "PromptArtifactError",
    "Tag",
    "TagDemo",
    "TagPrompt",
    "active_tag_prompt",
    "load_tag_prompt",
    "tag_item",
    "tag_messages",
]

DEFAULT_TAG_INSTRUCTIONS = """\
You tag items for a research feed read by chemists and machine-learning engineers.
Choose 1 to 4 tags from the vocabulary below that name what the item is about.

- Tag the item's subject, not words it happens to use. "Catalyst" in a machine-learning \
paper is a metaphor; a "transformer" in a power-grid paper is an electrical device; \
"diffusion" of ions is not a generative model; "spectral" graph methods are not spectroscopy.
- When an item has two real topics, give both tags.
- Use ml-for-chemistry only when machine learning is applied to a chemical problem, and \
add the chemistry or machine-learning tag that names the specific topic as well.
- Prefer fewer correct tags over many plausible ones. Never invent a tag.

Answer with JSON only, in the form {"tags": ["tag-one", "tag-two"]}."""


class ItemTags(BaseModel):
    """The tagging answer: 1-4 distinct tags from the vocabulary."""

    model_config = ConfigDict(extra="forbid", title="ItemTags")

    tags: Annotated[list[Tag], Field(min_length=1, max_length=4, json_schema_extra={"uniqueItems": True})]

    @field_validator("tags", mode="before")
    @classmethod
    def _distinct(cls, tags: object) -> object:
        """A repeated tag says nothing new: keep its first place (small models repeat themselves)."""
        return list(dict.fromkeys(tags)) if isinstance(tags, list) and all(isinstance(t, str) for t in tags) else tags


class TagDemo(BaseModel):
    """One worked example shown to the model before the item."""

    model_config = ConfigDict(extra="forbid")

    title: str
    summary: str
    tags: Annotated[list[Tag], Field(min_length=1, max_length=4)]


class TagPrompt(BaseModel):
    """A tagging prompt: instructions plus optional demonstrations (the ATTEST_TAG_PROMPT artifact)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instructions: Annotated[str, Field(min_length=1)]
    demos: tuple[TagDemo, ...] = ()


class PromptArtifactError(AttestError):
    """The file named by ATTEST_TAG_PROMPT cannot be used."""


MAX_TAG_PROMPT_BYTES = 4 << 20  # instructions and a few demonstrations: kilobytes
_PROMPT_TODO = "point it at a prompt JSON file or unset ATTEST_TAG_PROMPT to use the default prompt"
DEFAULT_TAG_PROMPT = TagPrompt(instructions=DEFAULT_TAG_INSTRUCTIONS)
_loaded: dict[tuple[str, int, int], TagPrompt] = {}


def load_tag_prompt(path: Path) -> TagPrompt:
    """Read a prompt artifact, or raise PromptArtifactError saying what is wrong and what to do."""
    try:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in _loaded:
            text = read_text_bounded(path, MAX_TAG_PROMPT_BYTES, todo=_PROMPT_TODO)
            _loaded[key] = TagPrompt.model_validate(json.loads(text))
        return _loaded[key]
    except FileReadError as exc:
        raise PromptArtifactError(f"ATTEST_TAG_PROMPT={exc}") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    except (ValueError, ValidationError) as exc:
        reason = str(exc).splitlines()[0] if not isinstance(exc, ValidationError) else _first_error(exc)
    except RecursionError:
        reason = "JSON nested too deeply"
    raise PromptArtifactError(
        f'ATTEST_TAG_PROMPT={path}: {reason} (it names a JSON file such as {{"instructions": "..."}}); '
        "fix the file or unset ATTEST_TAG_PROMPT to use the default prompt"
    )


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"


def active_tag_prompt() -> TagPrompt:
    """The prompt ATTEST_TAG_PROMPT names, else the default: entry points call it first, so a bad file stops
    the command before any work."""
    override = os.environ.get("ATTEST_TAG_PROMPT")
    return load_tag_prompt(Path(override)) if override else DEFAULT_TAG_PROMPT


def _vocabulary() -> str:
    return "\n".join(f"- {tag}: {gloss}" for tag, gloss in TAG_GLOSSES.items())


def tag_messages(title: str, summary: str, prompt: TagPrompt | None = None) -> list[Message]:
    """Render the tagging request: the one place the tagging prompt is built."""
    active = prompt or active_tag_prompt()
    messages: list[Message] = [{"role": "system", "content": f"{active.instructions}\n\nVocabulary:\n{_vocabulary()}"}]
    for demo in active.demos:
        messages.append({"role": "user", "content": item_block(demo.title, demo.summary)})
        messages.append({"role": "assistant", "content": json.dumps({"tags": demo.tags})})
    messages.append({"role": "user", "content": item_block(title, summary)})
    return messages


def tag_item(title: str, summary: str, *, chat_json: ChatJSON | None = None) -> ItemTags:
    """Tag one item through the production backend (or `chat_json`)."""
    return ask(tag_messages(title, summary), ItemTags, chat_json, stub_answer=tags_answer)
