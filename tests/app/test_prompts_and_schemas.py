"""The three task modules and the feed flows: pure renderers, what the production calls send, the schemas,
the ATTEST_TAG_PROMPT artifact, and the stub model."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from attest import feed
from attest.answers import ModelOutputError, parse_answer, schema_of
from attest.backends.types import Message
from attest.chat import default_chat_json
from attest.explain import EXPLANATION_SYSTEM_PROMPT, REFUSAL, Explanation, explanation_messages, generate_explanation
from attest.features import (
    DEFAULT_TAG_INSTRUCTIONS,
    TAG_GLOSSES,
    TAGS,
    ItemTags,
    PromptArtifactError,
    TagDemo,
    TagPrompt,
    tag_item,
    tag_messages,
)
from attest.render import item_block
from attest.simulate import REACTION_SYSTEM_PROMPT, Reaction, react_to_item, reaction_messages
from tests.fakes import RecordingChat, Sent, seed_stub

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "examples" / "flows" / "corpus"

TITLE = "Pd-catalysed C-N coupling at room temperature"
SUMMARY = "A new ligand lets aryl chlorides couple with amines without heating."
PERSONA = (
    "A synthetic organometallic chemist who develops nickel- and palladium-catalysed coupling reactions "
    "and characterises her complexes by NMR and cyclic voltammetry."
)
INTERESTS = "I read new cross-coupling reactions and catalysts I could run in my own flask, with substrate tables."
CHEMIST = feed.Persona("chemist", PERSONA, INTERESTS)
ITEMS = [
    feed.Item("item-a", TITLE, SUMMARY),
    feed.Item(
        "item-b",
        "Stable AdamW without learning-rate warmup via update-norm clipping",
        "Clipping the per-step update norm removes the need for warmup in 1B-parameter transformer runs.",
    ),
    feed.Item(
        "item-c",
        "Continuous-flow hydrogenation scale-up to 40 kg per day",
        "A packed-bed reactor with in-line IR monitoring ran for 300 hours without catalyst leaching.",
    ),
]
TAGS_ANSWER = '{"tags": ["catalysis", "organic-synthesis"]}'
REACTION_ANSWER = '{"verdict": true, "confidence": 5, "reasoning": "A new Pd C-N coupling, which she runs herself."}'
EXPLANATION_ANSWER = '{"text": "You run palladium couplings, and this one works at room temperature."}'

Renderer = Callable[[], list[Message]]
RENDERERS: dict[str, Renderer] = {
    "tag": lambda: tag_messages(TITLE, SUMMARY),
    "tag-with-demos": lambda: tag_messages(TITLE, SUMMARY, _artifact_prompt()),
    "reaction": lambda: reaction_messages(PERSONA, INTERESTS, TITLE, SUMMARY),
    "explanation": lambda: explanation_messages(INTERESTS, TITLE, SUMMARY),
}


def _artifact_prompt() -> TagPrompt:
    return TagPrompt(
        instructions="Tag the item with what it is about, from the vocabulary. Answer with JSON only.",
        demos=(
            TagDemo(
                title="Electrochemical C-H amination of arenes without a metal catalyst",
                summary="Anodic oxidation in HFIP couples arenes with azoles at 10 mA; 36 examples.",
                tags=["electrochemistry", "organic-synthesis"],
            ),
            TagDemo(
                title="Benchmark contamination in code-generation leaderboards",
                summary="A third of the problems in two popular suites appear verbatim in public pretraining corpora.",
                tags=["model-evaluation", "datasets-benchmarks", "language-models"],
            ),
        ),
    )


def _write_artifact(path: Path, prompt: TagPrompt) -> Path:
    path.write_text(prompt.model_dump_json(indent=2), encoding="utf-8")
    return path


# --- renderers are pure ---------------------------------------------------------------


@pytest.mark.parametrize("render", RENDERERS.values(), ids=RENDERERS.keys())
def test_renderer_is_pure(render: Renderer) -> None:
    first = render()
    kept = copy.deepcopy(first)
    assert render() == kept
    first[0]["content"] = "tampered"
    first.append({"role": "user", "content": "tampered"})
    assert render() == kept


def test_rendering_does_not_touch_its_inputs() -> None:
    prompt = _artifact_prompt()
    before = prompt.model_dump()
    tag_messages(TITLE, SUMMARY, prompt)
    assert prompt.model_dump() == before
    items = list(ITEMS)
    feed.simulate_ratings(CHEMIST, items, chat_json=seed_stub().chat_json)
    assert items == ITEMS


def test_item_is_rendered_as_two_labelled_lines() -> None:
    messy_title = "Pd-catalysed C-N coupling\n  at room   temperature"
    messy_summary = "A new ligand lets aryl chlorides\ncouple with amines\twithout heating.\n"
    block = "Title: Pd-catalysed C-N coupling at room temperature\nSummary: " + SUMMARY
    assert item_block(messy_title, messy_summary) == block
    assert tag_messages(messy_title, messy_summary)[-1] == {"role": "user", "content": block}


def test_tag_messages_default_layout() -> None:
    system, user = tag_messages(TITLE, SUMMARY)
    assert system["role"] == "system"
    assert system["content"].startswith(DEFAULT_TAG_INSTRUCTIONS + "\n\nVocabulary:\n")
    for tag, gloss in TAG_GLOSSES.items():
        assert f"\n- {tag}: {gloss}" in system["content"]
    assert user == {"role": "user", "content": item_block(TITLE, SUMMARY)}


def test_reaction_and_explanation_layout() -> None:
    system, user = reaction_messages(PERSONA, INTERESTS, TITLE, SUMMARY)
    assert system == {"role": "system", "content": REACTION_SYSTEM_PROMPT}
    assert user == {
        "role": "user",
        "content": f"Reader: {PERSONA}\nInterests: {INTERESTS}\n\n{item_block(TITLE, SUMMARY)}",
    }
    system, user = explanation_messages(INTERESTS, TITLE, SUMMARY)
    assert system == {"role": "system", "content": EXPLANATION_SYSTEM_PROMPT}
    assert user == {"role": "user", "content": f"Interests: {INTERESTS}\n\n{item_block(TITLE, SUMMARY)}"}


# --- the production calls send exactly what the renderer returns ----------------------


def test_tag_item_sends_the_rendered_messages_and_the_schema() -> None:
    chat = RecordingChat([TAGS_ANSWER])
    assert tag_item(TITLE, SUMMARY, chat_json=chat).tags == ["catalysis", "organic-synthesis"]
    assert chat.history == [Sent(tag_messages(TITLE, SUMMARY), schema_of(ItemTags))]


def test_react_to_item_sends_the_rendered_messages_and_the_schema() -> None:
    chat = RecordingChat([REACTION_ANSWER])
    reaction = react_to_item(PERSONA, INTERESTS, TITLE, SUMMARY, chat_json=chat)
    assert (reaction.verdict, reaction.confidence) == (True, 5)
    assert chat.history == [Sent(reaction_messages(PERSONA, INTERESTS, TITLE, SUMMARY), schema_of(Reaction))]


def test_generate_explanation_sends_the_rendered_messages_and_the_schema() -> None:
    chat = RecordingChat([EXPLANATION_ANSWER])
    assert generate_explanation(INTERESTS, TITLE, SUMMARY, chat_json=chat).text.startswith("You run palladium")
    assert chat.history == [Sent(explanation_messages(INTERESTS, TITLE, SUMMARY), schema_of(Explanation))]


def test_simulate_ratings_sends_one_rendered_request_per_item_in_order() -> None:
    verdicts = {"item-a": (True, 5), "item-b": (False, 4), "item-c": (False, 2)}

    def answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
        item = next(i for i in ITEMS if f"Title: {i.title}\n" in messages[-1]["content"])
        verdict, confidence = verdicts[item.id]
        return {"verdict": verdict, "confidence": confidence, "reasoning": f"About {item.title.lower()}."}

    chat = RecordingChat(answer)
    ratings = feed.simulate_ratings(CHEMIST, ITEMS, chat_json=chat)
    assert chat.history == [
        Sent(reaction_messages(PERSONA, INTERESTS, item.title, item.summary), schema_of(Reaction)) for item in ITEMS
    ]
    assert [r.item_id for r in ratings] == ["item-a", "item-b", "item-c"]
    assert [r.signed_confidence for r in ratings] == [5, -4, -2]


def test_feed_explain_sends_the_rendered_messages_and_the_schema() -> None:
    chat = RecordingChat([{"text": REFUSAL}])
    assert feed.explain(INTERESTS, ITEMS[1], chat_json=chat).text == REFUSAL
    assert chat.history == [
        Sent(explanation_messages(INTERESTS, ITEMS[1].title, ITEMS[1].summary), schema_of(Explanation))
    ]


CALLS: dict[str, Callable[[RecordingChat], object]] = {
    "tag_item": lambda chat: tag_item(TITLE, SUMMARY, chat_json=chat),
    "react_to_item": lambda chat: react_to_item(PERSONA, INTERESTS, TITLE, SUMMARY, chat_json=chat),
    "generate_explanation": lambda chat: generate_explanation(INTERESTS, TITLE, SUMMARY, chat_json=chat),
    "simulate_ratings": lambda chat: feed.simulate_ratings(CHEMIST, ITEMS[:1], chat_json=chat),
    "feed.explain": lambda chat: feed.explain(INTERESTS, ITEMS[0], chat_json=chat),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
@pytest.mark.parametrize(
    "answer",
    ['{"tags": ["alchemy"]}', '{"verdict": "perhaps"}', '{"text": "' + "x" * 400 + '"}', "I'd say catalysis.", ""],
    ids=["unknown-tag", "bad-verdict", "too-long", "prose", "empty"],
)
def test_an_answer_that_fails_the_schema_raises_model_output_error(
    call: Callable[[RecordingChat], object], answer: str
) -> None:
    chat = RecordingChat([answer])
    with pytest.raises(ModelOutputError) as info:
        call(chat)
    assert info.value.text == answer
    assert len(chat.history) == 1


def test_without_chat_json_the_production_backend_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    default_chat_json.cache_clear()
    monkeypatch.setenv("ATTEST_BACKEND", "stub")
    expected = parse_answer(seed_stub().chat_json(tag_messages(TITLE, SUMMARY), schema_of(ItemTags)).text, ItemTags)
    try:
        assert tag_item(TITLE, SUMMARY) == expected
    finally:
        default_chat_json.cache_clear()


# --- ATTEST_TAG_PROMPT ----------------------------------------------------------------


def test_artifact_replaces_instructions_keeps_vocabulary_and_adds_demos(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = _artifact_prompt()
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(_write_artifact(tmp_path / "tag-prompt.json", prompt)))
    chat = RecordingChat([TAGS_ANSWER])
    tag_item(TITLE, SUMMARY, chat_json=chat)
    sent = chat.history[0].messages
    assert sent == tag_messages(TITLE, SUMMARY, prompt)
    assert sent[0]["role"] == "system"
    assert sent[0]["content"].startswith(prompt.instructions + "\n\nVocabulary:\n")
    assert DEFAULT_TAG_INSTRUCTIONS not in sent[0]["content"]
    assert all(f"\n- {tag}: " in sent[0]["content"] for tag in TAGS)
    assert sent[1:5] == [
        {"role": "user", "content": item_block(prompt.demos[0].title, prompt.demos[0].summary)},
        {"role": "assistant", "content": '{"tags": ["electrochemistry", "organic-synthesis"]}'},
        {"role": "user", "content": item_block(prompt.demos[1].title, prompt.demos[1].summary)},
        {"role": "assistant", "content": '{"tags": ["model-evaluation", "datasets-benchmarks", "language-models"]}'},
    ]
    assert sent[5:] == [{"role": "user", "content": item_block(TITLE, SUMMARY)}]


def test_artifact_without_demos_sends_system_and_item_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"instructions": "Name the item's topics."}), encoding="utf-8")
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(path))
    system, user = tag_messages(TITLE, SUMMARY)
    assert system["content"].startswith("Name the item's topics.\n\nVocabulary:\n")
    assert user["content"] == item_block(TITLE, SUMMARY)


def test_an_edited_artifact_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tag-prompt.json"
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(path))
    path.write_text(json.dumps({"instructions": "First version."}), encoding="utf-8")
    assert tag_messages(TITLE, SUMMARY)[0]["content"].startswith("First version.")
    path.write_text(json.dumps({"instructions": "Second, longer version."}), encoding="utf-8")
    assert tag_messages(TITLE, SUMMARY)[0]["content"].startswith("Second, longer version.")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "No such file or directory"),
        ("instructions: tag things\n", "Expecting value: line 1 column 1 (char 0)"),
        (
            '{"instructions": "Tag it.", "demos": [{"title": "t", "summary": "s", "tags": ["alchemy"]}]}',
            "field 'demos.0.tags.0'",
        ),
        ('{"demos": []}', "field 'instructions': Field required"),
        ('{"instructions": "Tag it.", "temperature": 0.2}', "field 'temperature': Extra inputs are not permitted"),
        ('{"instructions": ""}', "field 'instructions': String should have at least 1 character"),
    ],
    ids=["missing", "not-json", "unknown-demo-tag", "no-instructions", "extra-field", "empty-instructions"],
)
def test_an_unusable_artifact_names_the_path_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None, reason: str
) -> None:
    path = tmp_path / "tag-prompt.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    monkeypatch.setenv("ATTEST_TAG_PROMPT", str(path))
    chat = RecordingChat([TAGS_ANSWER])
    with pytest.raises(PromptArtifactError) as info:
        tag_item(TITLE, SUMMARY, chat_json=chat)
    message = str(info.value)
    assert message.startswith(f"ATTEST_TAG_PROMPT={path}: ")
    assert reason in message
    assert message.endswith("fix the file or unset ATTEST_TAG_PROMPT to use the default prompt")
    assert "\n" not in message
    assert chat.history == []


# --- the explanation refusal and the schemas ------------------------------------------


def test_explanation_prompt_mandates_the_exact_refusal() -> None:
    assert REFUSAL == "Outside your stated interests."
    assert "answer exactly: Outside your stated interests.\n" in EXPLANATION_SYSTEM_PROMPT
    assert (
        "answer exactly: Outside your stated interests."
        in explanation_messages(INTERESTS, TITLE, SUMMARY)[0]["content"]
    )


def test_vocabulary_is_25_distinct_glossed_tags() -> None:
    assert len(TAGS) == len(set(TAGS)) == 25
    assert tuple(TAG_GLOSSES) == TAGS
    assert all(TAG_GLOSSES.values())


def test_tags_schema_is_an_enum_of_the_vocabulary() -> None:
    schema = schema_of(ItemTags)
    assert schema["title"] == "ItemTags"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["tags"]
    tags = schema["properties"]["tags"]
    assert tags["type"] == "array"
    assert (tags["minItems"], tags["maxItems"], tags["uniqueItems"]) == (1, 4, True)
    assert tags["items"] == {"enum": list(TAGS), "type": "string"}


def test_reaction_schema() -> None:
    schema = schema_of(Reaction)
    assert schema["title"] == "Reaction"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["verdict", "confidence", "reasoning"]
    props = schema["properties"]
    assert props["verdict"]["type"] == "boolean"
    assert (props["confidence"]["type"], props["confidence"]["minimum"], props["confidence"]["maximum"]) == (
        "integer",
        1,
        5,
    )
    assert (props["reasoning"]["minLength"], props["reasoning"]["maxLength"]) == (1, 300)


def test_explanation_schema() -> None:
    schema = schema_of(Explanation)
    assert schema["title"] == "Explanation"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["text"]
    assert (schema["properties"]["text"]["minLength"], schema["properties"]["text"]["maxLength"]) == (1, 160)


@pytest.mark.parametrize("model", [ItemTags, Reaction, Explanation], ids=lambda m: m.__name__)
def test_every_free_text_field_is_bounded(model: type[ItemTags | Reaction | Explanation]) -> None:
    for name, prop in schema_of(model)["properties"].items():
        if prop.get("type") == "string" and "enum" not in prop:
            assert "maxLength" in prop, f"{model.__name__}.{name} has no maxLength"


# --- the stub model -------------------------------------------------------------------


def _fixture(name: str) -> list[dict[str, str]]:
    data = json.loads((FIXTURE / name).read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def test_stub_answers_every_fixture_item_with_schema_valid_json() -> None:
    chat = seed_stub().chat_json
    items, personas = _fixture("items.json"), _fixture("personas.json")
    for item in items:
        assert 1 <= len(tag_item(item["title"], item["summary"], chat_json=chat).tags) <= 4
        for p in personas:
            react_to_item(p["persona"], p["interests"], item["title"], item["summary"], chat_json=chat)
            generate_explanation(p["interests"], item["title"], item["summary"], chat_json=chat)


def test_stub_stays_schema_valid_for_a_long_title() -> None:
    title = (
        "A multi-laboratory, pre-registered comparison of palladium-, nickel- and copper-catalysed C-N "
        "cross-coupling conditions for the amination of heteroaryl chlorides bearing unprotected N-H groups, "
        "with automated high-throughput screening, kinetic profiling and an open dataset of 11,520 reactions"
    )
    chat = seed_stub().chat_json
    react_to_item(PERSONA, INTERESTS, title, SUMMARY, chat_json=chat)
    generate_explanation(INTERESTS, title, SUMMARY, chat_json=chat)
    tag_item(title, SUMMARY, chat_json=chat)


def test_stub_is_deterministic() -> None:
    requests = [
        (tag_messages(TITLE, SUMMARY), schema_of(ItemTags)),
        (reaction_messages(PERSONA, INTERESTS, TITLE, SUMMARY), schema_of(Reaction)),
        (explanation_messages(INTERESTS, TITLE, SUMMARY), schema_of(Explanation)),
    ]
    first = [seed_stub().chat_json(m, s).text for m, s in requests]
    second = [seed_stub().chat_json(m, s).text for m, s in requests]
    assert first == second


def test_stub_refuses_when_no_interest_matches() -> None:
    chat = seed_stub().chat_json
    interests = "I follow reinforcement learning for robot locomotion."
    assert generate_explanation(interests, TITLE, SUMMARY, chat_json=chat).text == REFUSAL
