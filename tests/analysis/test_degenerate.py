"""Degenerate answers named in words, from hand-made answers: one value of a field for every case, the
same answer everywhere, most answers unparseable, most answers the stub's; and none for healthy runs."""

from __future__ import annotations

import json
from pathlib import Path

from evals.analysis.degenerate import MIN_ANSWERS, degenerate, parse_answer


def _texts(answers: list[object]) -> list[tuple[str, str | None]]:
    return [(f"case-{i}", a if isinstance(a, str) or a is None else json.dumps(a)) for i, a in enumerate(answers)]


def test_one_value_of_a_field_for_every_case_is_named_with_the_field_and_value() -> None:
    answers = [{"verdict": True, "confidence": 4, "reasoning": f"reason {i}"} for i in range(8)]
    found = degenerate(_texts(answers))
    assert any("every answer has verdict = true (8 of 8)" in w for w in found)
    assert any("every answer has confidence = 4 (8 of 8)" in w for w in found)
    assert not any("reasoning" in w for w in found)  # the free text varies


def test_the_same_answer_for_every_case_is_one_warning_quoting_it() -> None:
    found = degenerate(_texts([{"tags": ["biology"]}] * 6))
    assert found == ['every answer (6 of 6) is the same: {"tags":["biology"]}']


def test_key_order_and_spacing_do_not_make_answers_differ() -> None:
    texts = _texts(['{"a": 1, "b": 2}', '{"b":2,"a":1}'] * 3)
    assert degenerate(texts) == ['every answer (6 of 6) is the same: {"a":1,"b":2}']


def test_most_answers_unparseable() -> None:
    texts = _texts(["not json", "{", "[1, 2]", {"verdict": True, "c": 1}, {"verdict": False, "c": 2}, "oops"])
    found = degenerate(texts)
    assert found == ["4 of 6 answers (67%) are not a JSON object: most answers are unparseable"]


def test_half_unparseable_is_not_most() -> None:
    texts = _texts(["x", "y", "z", {"v": 1}, {"v": 2}, {"v": 3}])
    assert degenerate(texts) == []


def test_answers_identical_to_the_stubs_on_most_cases() -> None:
    answers = [{"verdict": i % 2 == 0, "confidence": i % 5 + 1} for i in range(10)]
    texts = _texts(answers)
    stub = {case: text for case, text in texts[:7] if text is not None}
    found = degenerate(texts, stub)
    assert found == ["7 of 10 answers (70%) are identical to the stub backend's (keyword overlap)"]
    assert degenerate(texts, dict(list(stub.items())[:5])) == []  # half is not most


def test_a_healthy_run_and_a_tiny_run_get_no_warning() -> None:
    healthy = [{"verdict": i % 3 == 0, "confidence": i % 5 + 1, "reasoning": str(i)} for i in range(20)]
    assert degenerate(_texts(healthy)) == []
    assert degenerate(_texts([{"verdict": True}] * (MIN_ANSWERS - 1))) == []


def test_missing_answers_are_not_counted() -> None:
    texts = _texts([None] * 10 + [{"v": i} for i in range(6)])
    assert degenerate(texts) == []


def test_parse_answer_takes_only_json_objects() -> None:
    assert parse_answer('{"a": 1}') == {"a": 1}
    assert parse_answer("[1]") is None
    assert parse_answer("nope") is None
    assert parse_answer(None) is None


def test_generic_modules_name_no_task() -> None:
    """The degenerate check and the pages derive everything from the data: no task name in their source."""
    root = Path(__file__).resolve().parents[2] / "evals"
    sources = [
        root / "analysis" / "degenerate.py",
        *(root / "render").glob("page*.py"),
        root / "render" / "html.py",
        root / "render" / "plots.py",
        *(root / "render" / "templates").iterdir(),
    ]
    for path in sources:
        text = path.read_text(encoding="utf-8").lower()
        for task in ("tagging", "reaction", "explanation"):
            assert task not in text, f"{path.name} names the {task} task"
