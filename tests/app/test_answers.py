"""`parse_answer`: a model's raw text becomes a validated answer or a ModelOutputError with a prose reason."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from attest.answers import ModelOutputError, parse_answer
from attest.errors import AttestError
from attest.explain import Explanation
from attest.features import TAGS, ItemTags
from attest.simulate import Reaction

MB = 1_000_000


def _reason(text: str, model: type[BaseModel]) -> ModelOutputError:
    with pytest.raises(ModelOutputError) as info:
        parse_answer(text, model)
    return info.value


# --- valid answers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "model", "expected"),
    [
        ('{"tags": ["catalysis", "organic-synthesis"]}', ItemTags, {"tags": ["catalysis", "organic-synthesis"]}),
        (
            '{"verdict": false, "confidence": 2, "reasoning": "A reactor scale-up study; she skips plants."}',
            Reaction,
            {"verdict": False, "confidence": 2, "reasoning": "A reactor scale-up study; she skips plants."},
        ),
        (
            '{"text": "You work on nickel photoredox, and this arylates amino acids that way."}',
            Explanation,
            {"text": "You work on nickel photoredox, and this arylates amino acids that way."},
        ),
        ('{"text": "Outside your stated interests."}', Explanation, {"text": "Outside your stated interests."}),
        ('\n  {"tags": ["statistics"]}  \n', ItemTags, {"tags": ["statistics"]}),
    ],
    ids=["tags", "reaction", "explanation", "refusal", "surrounding-whitespace"],
)
def test_valid_json_for_each_schema(text: str, model: type[BaseModel], expected: dict[str, object]) -> None:
    answer = parse_answer(text, model)
    assert isinstance(answer, model)
    assert answer.model_dump() == expected


def test_every_tag_in_the_vocabulary_is_accepted() -> None:
    for tag in TAGS:
        assert parse_answer(json.dumps({"tags": [tag]}), ItemTags).tags == [tag]


# --- not JSON -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"tags": ["catalysis"] "spectroscopy"}', "Expecting ',' delimiter at char 23"),
        ('{"tags": ["catalysis"]', "Expecting ',' delimiter at char 22"),
        ("", "Expecting value at char 0"),
        ("   ", "Expecting value at char 3"),
        ('```json\n{"tags": ["catalysis"]}\n```', "Expecting value at char 0"),
        ("Sure! Here are the tags: catalysis, organic-synthesis", "Expecting value at char 0"),
        ("{'tags': ['catalysis']}", "Expecting property name enclosed in double quotes at char 1"),
    ],
    ids=["missing-comma", "truncated", "empty", "blank", "markdown-fence", "prose", "single-quotes"],
)
def test_not_json_says_so_and_where(text: str, where: str) -> None:
    err = _reason(text, ItemTags)
    assert err.reason == f"output is not valid JSON: {where}"
    assert f"output is not valid JSON: {where}" in str(err)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_confidence_is_not_json(constant: str) -> None:
    err = _reason(f'{{"verdict": true, "confidence": {constant}, "reasoning": "An optimiser paper."}}', Reaction)
    assert err.reason == f"output is not valid JSON: {constant} is not a JSON number"


def test_absurd_nesting_is_reported_not_a_crash() -> None:
    err = _reason("[" * 200_000 + "]" * 200_000, ItemTags)
    assert err.reason == "output is not valid JSON: nested too deeply"


# --- wrong shape, extras, types -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "model", "reason"),
    [
        ('["catalysis"]', ItemTags, "field '(top level)': Input should be a valid dictionary"),
        ("null", ItemTags, "field '(top level)': Input should be a valid dictionary"),
        ('"catalysis"', ItemTags, "field '(top level)': Input should be a valid dictionary"),
        ("{}", ItemTags, "field 'tags': Field required"),
        ('{"answer": {"tags": ["catalysis"]}}', ItemTags, "field 'tags': Field required"),
        ('{"verdict": true, "confidence": 3}', Reaction, "field 'reasoning': Field required"),
    ],
    ids=["list", "null", "string", "empty-object", "wrapped", "missing-field"],
)
def test_wrong_shape_fails_the_schema(text: str, model: type[BaseModel], reason: str) -> None:
    err = _reason(text, model)
    assert err.reason.startswith(f"output fails the {model.__name__} schema: ")
    assert reason in err.reason


@pytest.mark.parametrize(
    ("text", "model", "field"),
    [
        ('{"tags": ["catalysis"], "confidence": 3}', ItemTags, "confidence"),
        ('{"verdict": true, "confidence": 3, "reasoning": "On topic.", "tags": ["catalysis"]}', Reaction, "tags"),
        ('{"text": "You study MOFs, and this is a new MOF.", "reasoning": "MOFs"}', Explanation, "reasoning"),
    ],
    ids=["tags", "reaction", "explanation"],
)
def test_extra_fields_are_forbidden(text: str, model: type[BaseModel], field: str) -> None:
    assert f"field '{field}': Extra inputs are not permitted" in _reason(text, model).reason


@pytest.mark.parametrize(
    ("text", "model", "reason"),
    [
        ('{"tags": "catalysis"}', ItemTags, "field 'tags': Input should be a valid list"),
        ('{"tags": [3]}', ItemTags, "field 'tags.0': Input should be"),
        (
            '{"verdict": "maybe", "confidence": 3, "reasoning": "r"}',
            Reaction,
            "field 'verdict': Input should be a valid boolean",
        ),
        (
            '{"verdict": true, "confidence": 4.5, "reasoning": "r"}',
            Reaction,
            "field 'confidence': Input should be a valid integer",
        ),
        (
            '{"verdict": true, "confidence": 6, "reasoning": "r"}',
            Reaction,
            "field 'confidence': Input should be less than or equal to 5",
        ),
        (
            '{"verdict": true, "confidence": 0, "reasoning": "r"}',
            Reaction,
            "field 'confidence': Input should be greater than or equal to 1",
        ),
        (
            '{"verdict": true, "confidence": 3, "reasoning": 42}',
            Reaction,
            "field 'reasoning': Input should be a valid string",
        ),
        (
            '{"verdict": true, "confidence": 3, "reasoning": ""}',
            Reaction,
            "field 'reasoning': String should have at least 1 character",
        ),
        ('{"text": ["You", "study", "MOFs"]}', Explanation, "field 'text': Input should be a valid string"),
        ('{"text": ""}', Explanation, "field 'text': String should have at least 1 character"),
    ],
    ids=[
        "tags-string",
        "tag-number",
        "verdict-word",
        "confidence-fraction",
        "confidence-high",
        "confidence-zero",
        "reasoning-number",
        "reasoning-empty",
        "text-list",
        "text-empty",
    ],
)
def test_wrong_types_and_ranges_fail(text: str, model: type[BaseModel], reason: str) -> None:
    assert reason in _reason(text, model).reason


def test_more_than_three_problems_are_counted_not_listed() -> None:
    err = _reason('{"verdict": "maybe", "confidence": 9, "reasoning": 42, "extra": 1}', Reaction)
    assert err.reason.count("field '") == 3
    assert err.reason.endswith("(and 1 more)")


# --- tags -----------------------------------------------------------------------------


def test_duplicated_tags_are_removed_keeping_first_order() -> None:
    text = '{"tags": ["catalysis", "organic-synthesis", "catalysis", "spectroscopy", "organic-synthesis"]}'
    assert parse_answer(text, ItemTags).tags == ["catalysis", "organic-synthesis", "spectroscopy"]


def test_a_small_models_repetition_collapses_to_one_tag() -> None:
    assert parse_answer(
        '{"tags": ["catalysis", "catalysis", "catalysis", "catalysis", "catalysis"]}', ItemTags
    ).tags == ["catalysis"]


def test_unknown_tags_fail() -> None:
    err = _reason('{"tags": ["catalysis", "quantum-computing"]}', ItemTags)
    assert "field 'tags.1': Input should be 'organic-synthesis'" in err.reason


def test_tag_count_is_one_to_four_distinct() -> None:
    assert "field 'tags': List should have at least 1 item" in _reason('{"tags": []}', ItemTags).reason
    five = json.dumps({"tags": list(TAGS[:5])})
    assert "field 'tags': List should have at most 4 items" in _reason(five, ItemTags).reason


def test_tag_case_is_not_folded() -> None:
    assert "field 'tags.0'" in _reason('{"tags": ["Catalysis"]}', ItemTags).reason


# --- big answers and the error message ------------------------------------------------


def test_one_megabyte_answer_is_rejected_with_a_short_message() -> None:
    text = json.dumps({"text": "You " + "really " * (MB // 7)})
    assert len(text) > MB
    err = _reason(text, Explanation)
    assert "field 'text': String should have at most 160 characters" in err.reason
    assert len(str(err)) < 500
    assert f"... ({len(text)} chars)" in str(err)
    assert err.text == text


def test_one_megabyte_of_garbage_is_rejected_with_a_short_message() -> None:
    text = "tags: catalysis " * (MB // 16 + 1)
    err = _reason(text, ItemTags)
    assert err.reason == "output is not valid JSON: Expecting value at char 0"
    assert len(str(err)) < 400


def test_error_message_shows_the_truncated_answer_and_the_reason() -> None:
    answer = "x" * 150 + "y" * 350
    err = ModelOutputError(answer, "output is not valid JSON: Expecting value at char 0")
    message = str(err)
    assert isinstance(err, AttestError)
    assert message.startswith("the model's answer is unusable: output is not valid JSON: Expecting value at char 0; ")
    assert "x" * 150 + "y" * 50 + "... (500 chars)" in message
    assert "y" * 51 not in message
    assert (err.text, err.reason) == (answer, "output is not valid JSON: Expecting value at char 0")


def test_a_short_answer_is_shown_whole() -> None:
    err = _reason('{"tags": ["catalysis"], "why": "Pd"}', ItemTags)
    assert str(err).endswith("""it answered '{"tags": ["catalysis"], "why": "Pd"}'""")
    assert "chars)" not in str(err)
