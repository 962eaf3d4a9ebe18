"""The corpora's success criteria, and one failing line per broken rule of corpus_check.

Part (a) pins the real files. Part (b) builds a small corpus set in tmp_path that
passes the check, then breaks one rule per variant and asserts the exact problem.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from attest.features import TAGS
from evals import corpus_check
from evals.corpus.cases import SPLITS, ExplanationCase, ReactionCase, TaggingCase
from evals.corpus.fixture import FixtureItem, FixtureLabel, FixturePersona
from evals.corpus.read import read_cases, split_sha256
from evals.corpus.targets import Targets, explanation_targets, reaction_targets, tagging_targets
from evals.corpus_check import main

REPO = Path(__file__).resolve().parents[2]
Corpora = dict[str, Any]

# --- (a) the real files ------------------------------------------------------------------

REAL = [
    pytest.param("evals/tagging_cases.json", TaggingCase, id="tagging"),
    pytest.param("evals/reaction_cases.json", ReactionCase, id="reaction"),
    pytest.param("evals/explanation_cases.json", ExplanationCase, id="explanation"),
]


def _classes(case: BaseModel) -> set[str]:
    if isinstance(case, TaggingCase):
        return set(case.tags)
    if isinstance(case, ReactionCase):
        return {f"verdict={case.verdict}"}
    assert isinstance(case, ExplanationCase)
    return {f"refuse={case.refuse}"}


@pytest.mark.parametrize(("name", "model"), REAL)
def test_real_corpus_meets_the_success_criteria(name: str, model: type[BaseModel]) -> None:
    cases = read_cases(REPO / name, model)
    assert len(cases) >= 40
    ids = [case.id for case in cases]  # type: ignore[attr-defined]
    assert len(set(ids)) == len(ids)
    assert all(case.note.strip() for case in cases)  # type: ignore[attr-defined]
    for split in SPLITS:
        group = [case for case in cases if case.split == split]  # type: ignore[attr-defined]
        assert group, f"{name}: no case in {split}"
        assert len(set().union(*map(_classes, group))) >= 2, f"{name}: one class only in {split}"


def test_real_bool_corpora_have_both_classes_per_split() -> None:
    reaction = read_cases(REPO / "evals/reaction_cases.json", ReactionCase)
    explanation = read_cases(REPO / "evals/explanation_cases.json", ExplanationCase)
    for split in SPLITS:
        assert {case.verdict for case in reaction if case.split == split} == {True, False}
        assert {case.refuse for case in explanation if case.split == split} == {True, False}


def test_real_tagging_corpus_meets_its_size_and_uses_every_tag_in_dev() -> None:
    cases = read_cases(REPO / "evals/tagging_cases.json", TaggingCase)
    dev = [c for c in cases if c.split == "dev"]
    assert len(cases) >= 160 and len(dev) >= 80
    assert {tag for case in dev for tag in case.tags} == set(TAGS)


def test_real_fixture_has_the_documented_size() -> None:
    fixture = REPO / "examples/flows/corpus"
    assert len(read_cases(fixture / "items.json", FixtureItem)) == 40
    personas = read_cases(fixture / "personas.json", FixturePersona)
    assert sorted(persona.id for persona in personas) == ["chemist", "ml-engineer"]
    assert len(read_cases(fixture / "labels.json", FixtureLabel)) == 80


def test_corpus_check_module_passes_on_the_real_files() -> None:
    """The structural rules and the growth targets (sizes, readers, families, tag coverage) hold."""
    env = {**os.environ, "PYTHONPATH": "src:."}
    done = subprocess.run(
        [sys.executable, "-m", "evals.corpus_check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "corpus-check: clean" in done.stdout


# --- (b) a small valid base, then one broken rule per variant -----------------------------

_CHEMIST = "A synthetic organic chemist who runs cross-coupling reactions at the bench."
_CHEMIST_INTERESTS = "I care about catalysis, new C-N couplings and reaction conditions I can try next week."
_ML = "An ML engineer who trains and serves language models in production."
_ML_INTERESTS = "I follow language model training, evaluation and inference efficiency."
_ITEM_1 = ("Room-temperature nickel catalysis for C-N coupling", "Aryl chlorides couple with amines at 25 C.")
_ITEM_2 = ("Sparse mixture-of-experts scaling laws", "Loss follows a power law in active parameters.")
_ITEM_3 = ("Conformal intervals for LLM judges", "Split conformal prediction bounds judge error on 2,000 items.")
_ITEM_4 = ("A yield model tested in the flask", "Predicted conditions gave 80% isolated yield on 12 new couplings.")
_ITEM_5 = ("Palladium spot prices, 2024", "Up 30% over the year.")
_CHEMIST_PAIR = (_CHEMIST, _CHEMIST_INTERESTS)


def _reaction(case_id: str, split: str, persona: tuple[str, str], item: tuple[str, str], verdict: bool) -> Any:
    note = f"targets a missed verdict; from fixture {case_id[-7:]}" if case_id.startswith("fx-") else "hard case"
    return {
        "id": case_id,
        "split": split,
        "family": "fixture" if case_id.startswith("fx-") else case_id.split("-")[0],
        "note": note,
        "persona": persona[0],
        "interests": persona[1],
        "title": item[0],
        "summary": item[1],
        "verdict": verdict,
    }


def _tagging() -> list[dict[str, Any]]:
    groups = [list(TAGS[start : start + 4]) for start in range(0, len(TAGS), 4)]
    return [
        {
            "id": f"tag-{index:02d}",
            "split": "train" if index < 5 else "dev",
            "family": "anchor",
            "note": "the tags drift to neighbours",
            "title": "A study touching " + " and ".join(tags),
            "summary": f"Work number {index} on " + ", ".join(tags) + ".",
            "tags": tags,
        }
        for index, tags in enumerate(groups)
    ]


def _explanation(case_id: str, split: str, title: str, refuse: bool, words: list[str]) -> Any:
    return {
        "id": case_id,
        "split": split,
        "family": "refuse" if refuse else "match",
        "note": "the model invents a match" if refuse else "the explanation misses the topic",
        "interests": _CHEMIST_INTERESTS,
        "title": title,
        "summary": f"A short abstract of {title.lower()}.",
        "refuse": refuse,
        "must_mention_any": words,
    }


def base_corpora() -> Corpora:
    """Three small corpora and a fixture that together pass corpus_check."""
    chemist, ml = (_CHEMIST, _CHEMIST_INTERESTS), (_ML, _ML_INTERESTS)
    return {
        "items": [{"id": f"item-0{n}", "title": t, "summary": s} for n, (t, s) in ((1, _ITEM_1), (2, _ITEM_2))],
        "personas": [
            {"id": "chemist", "name": "Ana", "persona": _CHEMIST, "interests": _CHEMIST_INTERESTS},
            {"id": "ml-engineer", "name": "Bo", "persona": _ML, "interests": _ML_INTERESTS},
        ],
        "labels": [
            {"persona": "chemist", "item": "item-01", "would_read": True},
            {"persona": "chemist", "item": "item-02", "would_read": False},
            {"persona": "ml-engineer", "item": "item-01", "would_read": False},
            {"persona": "ml-engineer", "item": "item-02", "would_read": True},
        ],
        "reaction": [
            _reaction("fx-chemist-item-01", "train", chemist, _ITEM_1, True),
            _reaction("fx-chemist-item-02", "dev", chemist, _ITEM_2, False),
            _reaction("fx-ml-engineer-item-01", "train", ml, _ITEM_1, False),
            _reaction("fx-ml-engineer-item-02", "dev", ml, _ITEM_2, True),
            _reaction("bait-01", "dev", chemist, ("AI accelerates science", "Agents will transform labs."), False),
            _reaction("adjacent-01", "dev", ml, ("Bayesian hierarchical models", "Partial pooling of groups."), False),
            _reaction("terse-01", "train", chemist, ("Pd-free Suzuki coupling", "Iron works."), True),
        ],
        "tagging": _tagging(),
        "explanation": [
            _explanation("match-01", "train", "Nickel catalysis for amination", False, ["catalysis", "catalytic"]),
            _explanation("refuse-01", "train", "Termite mound ventilation", True, []),
            _explanation("match-02", "dev", "Photoredox C-N couplings", False, ["C-N coupling"]),
            _explanation("refuse-02", "dev", "Medieval trade routes", True, []),
            _explanation("refuse-03", "dev", "Penguin huddling thermodynamics", True, []),
        ],
    }


_FILES = {
    "tagging": "tagging_cases.json",
    "reaction": "reaction_cases.json",
    "explanation": "explanation_cases.json",
    "items": "corpus/items.json",
    "personas": "corpus/personas.json",
    "labels": "corpus/labels.json",
}


def write_corpora(root: Path, corpora: Corpora) -> list[str]:
    """Write each corpus (a list, or raw text) under root; return the argv for main."""
    (root / "corpus").mkdir(exist_ok=True)
    for key, name in _FILES.items():
        value = corpora[key]
        (root / name).write_text(value if isinstance(value, str) else json.dumps(value, indent=1), encoding="utf-8")
    return [
        *("--tagging", str(root / _FILES["tagging"])),
        *("--reaction", str(root / _FILES["reaction"])),
        *("--explanation", str(root / _FILES["explanation"])),
        *("--explanation-judgements", str(_judgements(root))),
        *("--fixture", str(root / "corpus")),
        "--skip-targets",  # a small corpus meets no growth target; tests of the targets drop this
    ]


def _judgements(root: Path) -> Path:
    """A small valid judgement corpus beside the others (tests/corpus/test_judgement_corpus.py checks its rules)."""
    path = root / "judgements.json"
    if not path.exists():
        path.write_text(json.dumps(judgement_entries()), encoding="utf-8")
    return path


def judgement_entries() -> list[dict[str, Any]]:
    """Four entries: each split holds a pass and a fail."""
    entries = []
    for n, (split, grade) in enumerate([("train", "pass"), ("train", "fail"), ("dev", "pass"), ("dev", "fail")]):
        text = "You work on palladium catalysis, as this ligand does." if grade == "pass" else "You: palladium"
        entries.append(
            {
                "id": f"judged-{n}",
                "split": split,
                "interests": "palladium catalysis",
                "title": "A new ligand for palladium-catalysed C-N coupling",
                "summary": "The ligand doubles the turnover of Buchwald-Hartwig aminations.",
                "text": text,
                "grade": grade,
                "source": "hand-good" if grade == "pass" else "trick-word-list",
                "note": "names the shared topic" if grade == "pass" else "a word list, no sentence",
            }
        )
    return entries


def problem_lines(output: str, root: Path) -> list[str]:
    """The lines of main's output that report a problem: each starts with a file under root."""
    return [line for line in output.splitlines() if line.startswith(f"{root}/")]


def _case(corpora: Corpora, key: str, case_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(case for case in corpora[key] if case.get("id") == case_id)
    return found


def _set(key: str, case_id: str, field: str, value: object) -> Callable[[Corpora], None]:
    def edit(corpora: Corpora) -> None:
        _case(corpora, key, case_id)[field] = value

    return edit


def _drop(key: str, case_id: str, field: str) -> Callable[[Corpora], None]:
    def edit(corpora: Corpora) -> None:
        del _case(corpora, key, case_id)[field]

    return edit


def _remove(key: str, case_id: str) -> Callable[[Corpora], None]:
    def edit(corpora: Corpora) -> None:
        corpora[key].remove(_case(corpora, key, case_id))

    return edit


def _add_copy(key: str, case_id: str, new_id: str) -> Callable[[Corpora], None]:
    def edit(corpora: Corpora) -> None:
        corpora[key].append({**_case(corpora, key, case_id), "id": new_id})

    return edit


def _both(*edits: Callable[[Corpora], None]) -> Callable[[Corpora], None]:
    def edit(corpora: Corpora) -> None:
        for one in edits:
            one(corpora)

    return edit


def _copy_field(key: str, source: str, target: str, field: str) -> Callable[[Corpora], None]:
    def edit(corpora: Corpora) -> None:
        _case(corpora, key, target)[field] = _case(corpora, key, source)[field]

    return edit


def _add_cases(key: str, *cases: dict[str, Any]) -> Callable[[Corpora], None]:
    def change(corpora: Corpora) -> None:
        corpora[key].extend(cases)

    return change


def _add_case(key: str, case: dict[str, Any]) -> Callable[[Corpora], None]:
    return lambda corpora: corpora[key].append(case)


def _label_twice(corpora: Corpora) -> None:
    corpora["labels"].append(dict(corpora["labels"][0]))


def _label_unknown_persona(corpora: Corpora) -> None:
    corpora["labels"].append({"persona": "biologist", "item": "item-01", "would_read": True})


def _copy_inputs(corpora: Corpora) -> None:
    first, second = corpora["tagging"][0], corpora["tagging"][1]
    second["title"], second["summary"] = first["title"].upper(), "  " + first["summary"]


def _flip_label(corpora: Corpora) -> None:
    corpora["labels"][0]["would_read"] = False


def _trailing_comma(corpora: Corpora) -> None:
    corpora["reaction"] = json.dumps(corpora["reaction"], indent=1)[:-2] + ",\n]"


def _all_tagging_in_train(corpora: Corpora) -> None:
    for case in corpora["tagging"]:
        case["split"] = "train"


def _drop_label(corpora: Corpora) -> None:
    del corpora["labels"][1]


BROKEN = [
    pytest.param(
        _drop("reaction", "fx-chemist-item-01", "verdict"),
        ["reaction_cases.json: case fx-chemist-item-01: field 'verdict': Field required"],
        id="missing-field",
    ),
    pytest.param(
        _set("explanation", "refuse-02", "refuse", "yes"),
        ["explanation_cases.json: case refuse-02: field 'refuse': Input should be a valid boolean"],
        id="wrong-type",
    ),
    pytest.param(
        _set("tagging", "tag-03", "id", "tag-01"),
        ["tagging_cases.json: case tag-01: field 'id': duplicate id (also case #1)"],
        id="duplicate-id",
    ),
    pytest.param(
        _set("reaction", "bait-01", "split", "test"),
        ["reaction_cases.json: case bait-01: field 'split': Input should be 'train' or 'dev'"],
        id="unknown-split",
    ),
    pytest.param(
        _set("explanation", "match-01", "note", "  "),
        ["explanation_cases.json: case match-01: field 'note': String should have at least 1 character"],
        id="empty-note",
    ),
    pytest.param(
        _set("tagging", "tag-02", "tags", ["catalysis", "astrobiology"]),
        ["tagging_cases.json: case tag-02: field 'tags.1': Input should be 'organic-synthesis'"],
        id="unknown-tag",
    ),
    pytest.param(
        _set("explanation", "match-02", "must_mention_any", ["zeolite"]),
        ["explanation_cases.json: case match-02: field 'must_mention_any.0': 'zeolite' does not occur in"],
        id="unreachable-must-mention",
    ),
    pytest.param(
        _set("explanation", "match-02", "must_mention_any", ["C-N coupling", "photoredox"]),
        [
            "explanation_cases.json: case match-02: field 'must_mention_any.1': 'photoredox' does not occur in the "
            "interests; list the shared topic in the reader's own words"
        ],
        id="must-mention-only-in-the-item",
    ),
    pytest.param(
        _set("explanation", "match-02", "must_mention_any", ["conditions", "reaction condition", "nickel"]),
        ["explanation_cases.json: case match-02: field 'must_mention_any.2': 'nickel' does not occur in the interests"],
        id="must-mention-in-the-item-title",
    ),
    pytest.param(
        _set("explanation", "match-02", "must_mention_any", ["redox"]),
        ["explanation_cases.json: case match-02: field 'must_mention_any.0': 'redox' does not occur in the interests"],
        id="must-mention-only-a-substring",
    ),
    pytest.param(
        _flip_label,
        [
            "reaction_cases.json: case fx-chemist-item-01: field 'verdict': is true but "
            "{root}/corpus/labels.json has would_read false"
        ],
        id="fixture-label-disagrees",
    ),
    pytest.param(
        _trailing_comma,
        ["reaction_cases.json: not JSON: trailing comma at line 78 column 3; fix the JSON syntax"],
        id="not-json",
    ),
    pytest.param(
        _set("reaction", "bait-01", "split", "train"),
        ["reaction_cases.json: case bait-01: field 'split': is 'train'; every bait-* case belongs in dev"],
        id="bait-in-train",
    ),
    pytest.param(
        _set("reaction", "adjacent-01", "split", "train"),
        ["reaction_cases.json: case adjacent-01: field 'split': is 'train'; every adjacent-* case belongs in dev"],
        id="adjacent-in-train",
    ),
    pytest.param(
        _copy_inputs,
        ["tagging_cases.json: case tag-01: field 'title+summary': same inputs as case tag-00"],
        id="duplicate-inputs",
    ),
    pytest.param(
        _add_copy("reaction", "terse-01", "terse-02"),
        ["reaction_cases.json: case terse-02: field 'persona+interests+title+summary': same inputs as case terse-01"],
        id="duplicate-reaction-inputs",
    ),
    pytest.param(
        _add_copy("explanation", "refuse-02", "refuse-04"),
        ["explanation_cases.json: case refuse-04: field 'interests+title+summary': same inputs as case refuse-02"],
        id="duplicate-explanation-inputs",
    ),
    pytest.param(
        _both(
            _set("reaction", "fx-chemist-item-01", "split", "dev"),
            _set("reaction", "fx-ml-engineer-item-01", "split", "dev"),
        ),
        ["reaction_cases.json: field 'verdict': split 'train' has no case with verdict false; add one"],
        id="verdict-class-missing-in-split",
    ),
    pytest.param(
        _set("reaction", "fx-chemist-item-02", "split", "train"),
        [
            "reaction_cases.json: case fx-ml-engineer-item-02: field 'title+summary': the same item is in train "
            "as case fx-chemist-item-02; put every case of one item in one split"
        ],
        id="reaction-item-in-both-splits",
    ),
    pytest.param(
        _copy_field("tagging", "tag-00", "tag-05", "title"),
        ["tagging_cases.json: case tag-05: field 'title': the same item is in train as case tag-00"],
        id="tagging-title-in-both-splits",
    ),
    pytest.param(
        _copy_field("explanation", "refuse-01", "refuse-02", "summary"),
        ["explanation_cases.json: case refuse-02: field 'summary': the same item is in train as case refuse-01"],
        id="explanation-summary-in-both-splits",
    ),
    pytest.param(
        _add_case(
            "reaction",
            {**_reaction("near-miss-01", "dev", (_ML, _ML_INTERESTS), _ITEM_3, False), "family": "near-miss"},
        ),
        ["reaction_cases.json: case near-miss-01: field 'verdict': is false, but near-miss cases are"],
        id="near-miss-negative",
    ),
    pytest.param(
        _set("reaction", "adjacent-01", "verdict", True),
        ["reaction_cases.json: case adjacent-01: field 'verdict': is true, but adjacent-* cases are"],
        id="adjacent-positive",
    ),
    pytest.param(
        _set("reaction", "bait-01", "verdict", True),
        ["reaction_cases.json: case bait-01: field 'verdict': is true, but bait-* cases are"],
        id="bait-positive",
    ),
    pytest.param(
        _set("reaction", "terse-01", "verdict", False),
        [
            "reaction_cases.json: case terse-01: field 'verdict': is false, but terse-* cases are a one-line summary "
            "that is nonetheless clearly on the reader's topic, labelled true; relabel it or rename it out of "
            "terse-* and change its family (a one-line item labelled false belongs in 'brief-off')"
        ],
        id="terse-negative",
    ),
    pytest.param(
        _add_case(
            "reaction", {**_reaction("brief-off-01", "dev", _CHEMIST_PAIR, _ITEM_3, True), "family": "brief-off"}
        ),
        ["reaction_cases.json: case brief-off-01: field 'verdict': is true, but brief-off cases are"],
        id="brief-off-positive",
    ),
    pytest.param(
        _add_case(
            "reaction", {**_reaction("terse-off-02", "dev", _CHEMIST_PAIR, _ITEM_5, False), "family": "brief-off"}
        ),
        [
            "reaction_cases.json: case terse-off-02: field 'id': does not start with 'brief-off-' for family "
            "'brief-off'",
            "reaction_cases.json: case terse-off-02: field 'verdict': is false, but terse-* cases are a one-line "
            "summary that is nonetheless clearly on the reader's topic, labelled true; relabel it or rename it out "
            "of terse-*",
        ],
        id="terse-id-labelled-false-whatever-its-family",
    ),
    pytest.param(
        _add_case("reaction", {**_reaction("bait-02", "train", _CHEMIST_PAIR, _ITEM_5, False), "family": "anchor"}),
        [
            "reaction_cases.json: case bait-02: field 'id': does not start with 'anchor-' for family 'anchor'",
            "reaction_cases.json: case bait-02: field 'split': is 'train'; every bait-* case belongs in dev",
        ],
        id="bait-id-in-train-whatever-its-family",
    ),
    pytest.param(
        _add_case("reaction", {**_reaction("adjacent-02", "dev", _CHEMIST_PAIR, _ITEM_5, True), "family": "near-miss"}),
        [
            "reaction_cases.json: case adjacent-02: field 'id': does not start with 'near-miss-' for family",
            "reaction_cases.json: case adjacent-02: field 'verdict': is true, but adjacent-* cases are",
        ],
        id="adjacent-id-labelled-true-whatever-its-family",
    ),
    pytest.param(
        _add_cases(
            "reaction",
            _reaction("crossover-01", "dev", _CHEMIST_PAIR, _ITEM_3, True),
            _reaction("crossover-02", "dev", _CHEMIST_PAIR, _ITEM_4, True),
        ),
        [
            "reaction_cases.json: case crossover-02: field 'verdict': every crossover case for this reader is true "
            "(2 case(s)); crossover items are labelled per persona, so add one this reader would skip"
        ],
        id="crossover-one-label-for-a-reader",
    ),
    pytest.param(
        _label_twice,
        ["corpus/labels.json: label chemist/item-01: labelled 2 times; keep one"],
        id="fixture-label-twice",
    ),
    pytest.param(
        _label_unknown_persona,
        ["corpus/labels.json: label biologist/item-01: names an unknown persona or item"],
        id="fixture-label-unknown-persona",
    ),
    pytest.param(
        _set("items", "item-02", "url", "https://example.org/2"),
        ["corpus/items.json: case item-02: field 'url': Extra inputs are not permitted"],
        id="fixture-item-extra-field",
    ),
    pytest.param(
        _set("personas", "chemist", "interests", ""),
        ["corpus/personas.json: case chemist: field 'interests': String should have at least 1 character"],
        id="fixture-persona-empty-interests",
    ),
    pytest.param(
        _set("reaction", "fx-chemist-item-02", "summary", "Loss follows a power law."),
        [
            "reaction_cases.json: case fx-chemist-item-02: field 'summary': is 'Loss follows a power law.' "
            "but {root}/corpus/items.json item-02 has 'Loss follows a power law in active parameters.'"
        ],
        id="fx-text-differs",
    ),
    pytest.param(
        _remove("reaction", "fx-chemist-item-02"),
        ["reaction_cases.json: case fx-chemist-item-02: missing; every fixture persona x item pair"],
        id="fx-pair-missing",
    ),
    pytest.param(
        _set("reaction", "fx-chemist-item-01", "id", "fx-chemist-item-09"),
        [
            "reaction_cases.json: case fx-chemist-item-09: field 'id': names no fixture persona and item",
            "reaction_cases.json: case fx-chemist-item-01: missing",
        ],
        id="fx-id-unknown",
    ),
    pytest.param(
        _set("reaction", "fx-chemist-item-02", "note", "a plain negative"),
        ["reaction_cases.json: case fx-chemist-item-02: field 'note': does not name fixture item item-02"],
        id="fx-note-without-item",
    ),
    pytest.param(
        _set("reaction", "terse-01", "id", "hard-01"),
        ["reaction_cases.json: case hard-01: field 'id': does not start with 'terse-' for family 'terse'"],
        id="reaction-id-not-its-family",
    ),
    pytest.param(
        _set("reaction", "terse-01", "family", "hard"),
        ["reaction_cases.json: case terse-01: field 'family': Input should be 'fixture', 'adjacent', 'bait'"],
        id="reaction-family-unknown",
    ),
    pytest.param(
        _drop("tagging", "tag-01", "family"),
        ["tagging_cases.json: case tag-01: field 'family': Field required"],
        id="family-missing",
    ),
    pytest.param(
        _set("explanation", "match-01", "family", "keyword-trap"),
        ["explanation_cases.json: case match-01: field 'family': Input should be 'match', 'refuse'"],
        id="family-of-another-task",
    ),
    pytest.param(
        _drop_label,
        ["corpus/labels.json: label chemist/item-02: missing; label every item x persona pair once"],
        id="fixture-label-missing",
    ),
    pytest.param(
        _set("tagging", "tag-06", "tags", ["catalysis"]),
        ["tagging_cases.json: field 'tags': tag 'ml-for-chemistry' is used by no case"],
        id="tag-unused",
    ),
    pytest.param(
        _set("tagging", "tag-06", "tags", ["ml-for-chemistry", "ml-for-chemistry"]),
        ["tagging_cases.json: case tag-06: field 'tags': 'ml-for-chemistry' is listed 2 times"],
        id="tag-repeated",
    ),
    pytest.param(
        _all_tagging_in_train,
        ["tagging_cases.json: field 'split': no case in 'dev'"],
        id="split-missing",
    ),
    pytest.param(
        _set("explanation", "refuse-01", "split", "dev"),
        ["explanation_cases.json: field 'refuse': split 'train' has no case with refuse true"],
        id="class-missing-in-split",
    ),
    pytest.param(
        _set("explanation", "refuse-03", "split", "train"),
        ["explanation_cases.json: field 'split': dev holds 1 of 3 refusals; move 1 more"],
        id="refusals-mostly-in-train",
    ),
    pytest.param(
        _set("explanation", "refuse-01", "must_mention_any", ["Termite"]),
        ["explanation_cases.json: case refuse-01: field 'must_mention_any': must be empty when refuse is true"],
        id="must-mention-on-refusal",
    ),
    pytest.param(
        _set("explanation", "match-01", "must_mention_any", []),
        ["explanation_cases.json: case match-01: field 'must_mention_any': is empty but refuse is false"],
        id="must-mention-missing",
    ),
]


def test_base_corpora_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(write_corpora(tmp_path, base_corpora())) == 0
    out = capsys.readouterr().out
    assert problem_lines(out, tmp_path) == []
    assert out.rstrip().endswith("corpus-check: clean")
    for name in ("tagging", "reaction", "explanation"):
        assert f"{name}  {tmp_path}/{name}_cases.json" in out


def test_the_design_notes_reaction_families_pass_with_their_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """terse true, brief-off false, and crossover items labelled per persona (a yes and a no for each reader)."""
    _add_cases(
        "reaction",
        {**_reaction("brief-off-01", "dev", _CHEMIST_PAIR, _ITEM_5, False), "family": "brief-off"},
        _reaction("crossover-01", "dev", _CHEMIST_PAIR, _ITEM_4, True),
        _reaction("crossover-02", "dev", (_ML, _ML_INTERESTS), _ITEM_4, False),
        _reaction("crossover-03", "dev", _CHEMIST_PAIR, _ITEM_3, False),
        _reaction("crossover-04", "dev", (_ML, _ML_INTERESTS), _ITEM_3, True),
    )(corpora := base_corpora())
    assert main(write_corpora(tmp_path, corpora)) == 0, capsys.readouterr().out


def test_must_mention_terms_may_differ_in_case_plural_and_hyphenation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpora = base_corpora()
    terms = ["Catalysis", "C-N couplings", "c n coupling", "reaction-condition"]
    _set("explanation", "match-02", "must_mention_any", terms)(corpora)
    assert main(write_corpora(tmp_path, corpora)) == 0, capsys.readouterr().out


def test_must_mention_terms_may_be_other_forms_of_the_readers_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The interests say 'catalysis' and 'reaction conditions'; an answer may say 'catalytic' or 'conditioned'."""
    corpora = base_corpora()
    _set("explanation", "match-02", "must_mention_any", ["catalytic", "reaction conditioned"])(corpora)
    assert main(write_corpora(tmp_path, corpora)) == 0, capsys.readouterr().out


@pytest.mark.parametrize(("breaking", "expected"), BROKEN)
def test_each_broken_rule_gives_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], breaking: Callable[[Corpora], None], expected: list[str]
) -> None:
    corpora = copy.deepcopy(base_corpora())
    breaking(corpora)
    assert main(write_corpora(tmp_path, corpora)) == 1
    captured = capsys.readouterr()
    lines = problem_lines(captured.out, tmp_path)
    assert len(lines) == len(expected), lines
    for wanted in expected:
        wanted = f"{tmp_path}/" + wanted.replace("{root}", str(tmp_path))
        assert any(line.startswith(wanted) for line in lines), (wanted, lines)
    assert "Traceback" not in captured.out + captured.err


def test_table_shows_counts_and_classes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(write_corpora(tmp_path, base_corpora()))
    out = capsys.readouterr().out
    reaction = out.split(f"reaction  {tmp_path}/reaction_cases.json\n")[1].split("\n\n")[0].splitlines()
    assert reaction[0].split() == ["split", "cases", "verdict=true", "verdict=false", "sha256"]
    assert reaction[1].split()[:4] == ["train", "3", "2", "1"]
    assert reaction[2].split()[:4] == ["dev", "4", "1", "3"]
    assert reaction[3].split()[:4] == ["all", "7", "3", "4"]


def test_table_sha256_is_split_sha256_of_the_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpora = base_corpora()
    main(write_corpora(tmp_path, corpora))
    first = capsys.readouterr().out
    cases = read_cases(tmp_path / "reaction_cases.json", ReactionCase)
    for split in SPLITS:
        digest = split_sha256([case for case in cases if case.split == split])[:12]
        assert f" {digest}\n" in first
    _set("reaction", "terse-01", "note", "another note")(corpora)
    main(write_corpora(tmp_path, corpora))
    second = capsys.readouterr().out
    dev = split_sha256([case for case in cases if case.split == "dev"])[:12]
    train = split_sha256([case for case in cases if case.split == "train"])[:12]
    assert f" {dev}\n" in second
    assert f" {train}\n" not in second


def test_internal_error_is_one_line_unless_debug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = write_corpora(tmp_path, base_corpora())

    def broken(path: Path, model: type[BaseModel]) -> list[BaseModel]:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(corpus_check, "read_cases", broken)
    monkeypatch.delenv("ATTEST_DEBUG", raising=False)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("corpus-check: internal error: RuntimeError at ")
    assert "ATTEST_DEBUG=1" in err and "traceback is in" in err
    monkeypatch.setenv("ATTEST_DEBUG", "1")
    with pytest.raises(RuntimeError, match="disk on fire"):
        main(argv)


# --- (c) the growth targets: one labelled group, one line per unmet target ---------------

SMALL = Targets(
    tagging=(7, 2), reaction=(7, 4), explanation=(5, 3), dev_refusals=2, readers=2, hard_family=0, tag_in_dev=0
)
TargetCheck = Callable[[Path, Any, Targets], Any]


def _written(tmp_path: Path, key: str, model: type[BaseModel]) -> tuple[Path, list[Any]]:
    write_corpora(tmp_path, base_corpora())
    path = tmp_path / _FILES[key]
    return path, read_cases(path, model)


@pytest.mark.parametrize(
    ("check", "key", "model", "targets", "expected"),
    [
        pytest.param(
            explanation_targets,
            "explanation",
            ExplanationCase,
            dataclasses.replace(SMALL, explanation=(6, 4)),
            [
                "explanation_cases.json: field 'id': 5 cases, below the target of 6; add 1",
                "explanation_cases.json: field 'split': 3 dev cases, below the target of 4; add 1 to dev",
            ],
            id="explanation-sizes",
        ),
        pytest.param(
            explanation_targets,
            "explanation",
            ExplanationCase,
            dataclasses.replace(SMALL, dev_refusals=3),
            ["explanation_cases.json: field 'refuse': dev holds 2 refusal case(s), below the target of 3; add 1"],
            id="dev-refusals",
        ),
        pytest.param(
            reaction_targets,
            "reaction",
            ReactionCase,
            dataclasses.replace(SMALL, reaction=(8, 5)),
            [
                "reaction_cases.json: field 'id': 7 cases, below the target of 8; add 1",
                "reaction_cases.json: field 'split': 4 dev cases, below the target of 5; add 1 to dev",
            ],
            id="reaction-sizes",
        ),
        pytest.param(
            reaction_targets,
            "reaction",
            ReactionCase,
            dataclasses.replace(SMALL, readers=3),
            ["reaction_cases.json: field 'persona': 2 distinct reader(s), below the target of 3; add cases for 1 more"],
            id="readers",
        ),
        pytest.param(
            reaction_targets,
            "reaction",
            ReactionCase,
            dataclasses.replace(SMALL, hard_family=1),
            [
                "reaction_cases.json: field 'family': family 'crossover' has 0 case(s), below the target of 1; add 1",
                "reaction_cases.json: field 'family': family 'near-miss' has 0 case(s), below the target of 1; add 1",
            ],
            id="hard-family-sizes",
        ),
        pytest.param(
            tagging_targets,
            "tagging",
            TaggingCase,
            dataclasses.replace(SMALL, tagging=(8, 3)),
            [
                "tagging_cases.json: field 'id': 7 cases, below the target of 8; add 1",
                "tagging_cases.json: field 'split': 2 dev cases, below the target of 3; add 1 to dev",
            ],
            id="tagging-sizes",
        ),
        pytest.param(
            tagging_targets,
            "tagging",
            TaggingCase,
            dataclasses.replace(SMALL, tag_in_dev=1),
            [
                f"tagging_cases.json: field 'tags': tag '{tag}' is gold in 0 dev case(s), below the target of 1; add 1"
                for tag in TAGS[:20]
            ],
            id="tag-coverage-in-dev",
        ),
    ],
)
def test_each_unmet_target_gives_its_line(
    tmp_path: Path, check: TargetCheck, key: str, model: type[BaseModel], targets: Targets, expected: list[str]
) -> None:
    """Against SMALL the base meets every size; raising one target by one gives exactly its lines."""
    path, cases = _written(tmp_path, key, model)
    met = set(check(path, cases, SMALL))
    lines = [line for line in check(path, cases, targets) if line not in met]
    assert len(lines) == len(expected), lines
    for wanted in expected:
        assert any(line.startswith(f"{tmp_path}/{wanted}") for line in lines), (wanted, lines)


@pytest.mark.parametrize(
    ("check", "key", "model", "missing"),
    [
        pytest.param(tagging_targets, "tagging", TaggingCase, ["keyword-trap", "two-topic", "edge", "long-abstract"]),
        pytest.param(
            reaction_targets,
            "reaction",
            ReactionCase,
            ["terse", "brief-off", "crossover", "near-miss", "anchor", "long-abstract"],
        ),
        pytest.param(
            explanation_targets, "explanation", ExplanationCase, ["near-refuse", "oblique-match", "long-abstract"]
        ),
    ],
)
def test_every_family_of_the_task_must_be_in_dev(
    tmp_path: Path, check: TargetCheck, key: str, model: type[BaseModel], missing: list[str]
) -> None:
    path, cases = _written(tmp_path, key, model)
    lines = list(check(path, cases, SMALL))
    assert lines == [
        f"{path}: field 'family': no dev case of family '{family}'; add dev cases of that family" for family in missing
    ]


def test_growth_targets_are_one_labelled_group_after_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpora = base_corpora()
    _set("reaction", "bait-01", "split", "train")(corpora)  # one structural problem as well
    argv = [arg for arg in write_corpora(tmp_path, corpora) if arg != "--skip-targets"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    before, heading, after = out.partition("growth targets not met (issue 15; --skip-targets leaves them out): ")
    assert heading, out
    assert problem_lines(before, tmp_path) == [
        f"{tmp_path}/reaction_cases.json: case bait-01: field 'split': is 'train'; every bait-* case belongs in dev"
    ]
    targets = problem_lines(after, tmp_path)
    assert int(after.split("\n", 1)[0]) == len(targets) > 20
    assert f"{tmp_path}/reaction_cases.json: field 'id': 7 cases, below the target of 220; add 213" in targets
    assert out.rstrip().endswith(f"corpus-check: {len(targets) + 1} problems ({len(targets)} of them growth targets)")
    assert main([*argv, "--skip-targets"]) == 1
    assert "growth targets" not in capsys.readouterr().out
