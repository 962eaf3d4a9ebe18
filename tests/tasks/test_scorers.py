"""The pure scorers: `score_one` per task on hand-written answers and on every real corpus case,
and `score_verdicts`. (The gate is the paired verdict now: tests/analysis/test_comparison.py and
tests/cli/test_optimize_tagging.py.)"""

from __future__ import annotations

import json
import random

import pytest

from attest.explain import REFUSAL
from evals import explanation_eval, reaction_eval, tagging_eval
from evals.analysis import baselines
from evals.corpus.cases import ExplanationCase, ReactionCase, TaggingCase
from evals.corpus.words import content_words

TAG_CASE = TaggingCase(
    id="pd-cn-coupling",
    split="dev",
    family="anchor",
    note="a synthesis paper whose catalyst is the point",
    title="Room-temperature palladium-catalysed C-N coupling of aryl chlorides",
    summary="A bulky biarylphosphine ligand lets aryl chlorides couple with secondary amines at 25 C in 2 h.",
    tags=["catalysis", "organic-synthesis"],
)
REACT_CASE = ReactionCase(
    id="chemist-reads-coupling",
    split="dev",
    family="anchor",
    note="an on-topic synthesis item for the chemist",
    persona="A synthetic chemist who develops palladium-catalysed coupling reactions.",
    interests="I read new cross-coupling methods and ligands I could run in my own flask.",
    title="Room-temperature palladium-catalysed C-N coupling of aryl chlorides",
    summary="A bulky biarylphosphine ligand lets aryl chlorides couple with secondary amines at 25 C in 2 h.",
    verdict=True,
)
MATCH_CASE = ExplanationCase(
    id="match-pd-coupling",
    split="dev",
    family="match",
    note="a plain match on the reader's stated topic",
    interests="I develop palladium-catalysed cross-coupling reactions and new phosphine ligands.",
    title="Room-temperature palladium-catalysed C-N coupling of aryl chlorides",
    summary="A bulky biarylphosphine ligand lets aryl chlorides couple with secondary amines at 25 C in 2 h.",
    refuse=False,
    must_mention_any=["palladium", "cross-coupling", "ligand"],
)
REFUSE_CASE = ExplanationCase(
    id="refuse-termite-mounds",
    split="dev",
    family="refuse",
    note="nothing the reader listed",
    interests="I develop palladium-catalysed cross-coupling reactions and new phosphine ligands.",
    title="Airflow in termite mounds follows the daily temperature cycle",
    summary="Sensors in 20 mounds show ventilation driven by day-night temperature swings, not wind.",
    refuse=True,
    must_mention_any=[],
)


def _tags(*tags: str) -> str:
    return json.dumps({"tags": list(tags)})


def _reaction(verdict: bool, reasoning: str, confidence: int = 4) -> str:
    return json.dumps({"verdict": verdict, "confidence": confidence, "reasoning": reasoning})


def _text(text: str) -> str:
    return json.dumps({"text": text})


# --- tagging ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "score"),
    [
        pytest.param(_tags("catalysis", "organic-synthesis"), 1.0, id="exact"),
        pytest.param(_tags("organic-synthesis", "catalysis"), 1.0, id="exact-other-order"),
        pytest.param(_tags("catalysis", "catalysis", "organic-synthesis"), 1.0, id="repeated-tag-counts-once"),
        pytest.param(_tags("catalysis"), 2 / 3, id="one-of-two"),
        pytest.param(_tags("catalysis", "spectroscopy"), 0.5, id="one-right-one-wrong"),
        pytest.param(_tags("catalysis", "organic-synthesis", "spectroscopy", "drug-discovery"), 2 / 3, id="two-extra"),
        pytest.param(_tags("deep-learning"), 0.0, id="disjoint"),
    ],
)
def test_tagging_score_is_f1(out: str, score: float) -> None:
    assert tagging_eval.score_one(TAG_CASE, out)["score"] == pytest.approx(score)


def test_tagging_errors_name_missing_and_extra_tags() -> None:
    scored = tagging_eval.score_one(TAG_CASE, _tags("catalysis", "spectroscopy"))
    assert scored["id"] == TAG_CASE.id
    assert scored["predicted"] == ["catalysis", "spectroscopy"]
    missing, extra = scored["errors"]
    assert "missing" in missing and "organic-synthesis" in missing and "spectroscopy" not in missing
    assert "extra" in extra and "spectroscopy" in extra and "catalysis" not in extra


def test_tagging_exact_answer_has_no_errors() -> None:
    assert tagging_eval.score_one(TAG_CASE, _tags("catalysis", "organic-synthesis"))["errors"] == []


@pytest.mark.parametrize(
    ("out", "reason"),
    [
        pytest.param("catalysis, organic-synthesis", "output is not valid JSON", id="prose"),
        pytest.param('{"tags": ["catalysis"', "output is not valid JSON", id="truncated"),
        pytest.param("", "output is not valid JSON", id="empty"),
        pytest.param(_tags("alchemy"), "fails the ItemTags schema", id="tag-not-in-vocabulary"),
        pytest.param(_tags(), "fails the ItemTags schema", id="no-tags"),
        pytest.param(
            _tags("catalysis", "organic-synthesis", "spectroscopy", "drug-discovery", "biochemistry"),
            "fails the ItemTags schema",
            id="five-tags",
        ),
        pytest.param('{"labels": ["catalysis"]}', "fails the ItemTags schema", id="wrong-field"),
        pytest.param('["catalysis"]', "fails the ItemTags schema", id="bare-list"),
    ],
)
def test_tagging_unusable_answer_scores_zero_with_reason(out: str, reason: str) -> None:
    scored = tagging_eval.score_one(TAG_CASE, out)
    assert scored["score"] == 0.0
    assert scored["predicted"] == []
    assert len(scored["errors"]) == 1 and reason in scored["errors"][0]


# --- reaction --------------------------------------------------------------------------


def test_reaction_right_verdict_naming_the_item_scores_one() -> None:
    scored = reaction_eval.score_one(
        REACT_CASE, _reaction(True, "A new aryl chloride coupling she could run tomorrow.")
    )
    assert (scored["score"], scored["errors"]) == (1.0, [])
    assert (scored["verdict"], scored["confidence"]) == (True, 4)


def test_reaction_right_verdict_with_vague_reason_scores_less() -> None:
    scored = reaction_eval.score_one(REACT_CASE, _reaction(True, "It fits what she says she likes to read."))
    assert scored["score"] == reaction_eval.UNREASONED == 0.75
    assert len(scored["errors"]) == 1 and "does not name the item" in scored["errors"][0]


@pytest.mark.parametrize(
    "reasoning",
    [
        pytest.param("A new aryl chloride coupling she could run.", id="naming"),
        pytest.param("Not her field.", id="vague"),
    ],
)
def test_reaction_wrong_verdict_scores_zero(reasoning: str) -> None:
    scored = reaction_eval.score_one(REACT_CASE, _reaction(False, reasoning))
    assert scored["score"] == 0.0
    assert any("verdict False" in e and "would read" in e for e in scored["errors"])


@pytest.mark.parametrize(
    ("out", "reason"),
    [
        pytest.param("Yes, she would read it.", "output is not valid JSON", id="prose"),
        pytest.param(
            _reaction(True, "A coupling paper.", confidence=7), "fails the Reaction schema", id="confidence-7"
        ),
        pytest.param(_reaction(True, "", confidence=3), "fails the Reaction schema", id="empty-reasoning"),
        pytest.param(
            '{"verdict": "maybe", "confidence": 4, "reasoning": "coupling"}',
            "fails the Reaction schema",
            id="verdict-maybe",
        ),
        pytest.param('{"verdict": true, "confidence": 4}', "fails the Reaction schema", id="no-reasoning"),
    ],
)
def test_reaction_invalid_answer_scores_zero(out: str, reason: str) -> None:
    scored = reaction_eval.score_one(REACT_CASE, out)
    assert (scored["score"], scored["verdict"], scored["confidence"]) == (0.0, None, None)
    assert len(scored["errors"]) == 1 and reason in scored["errors"][0]


@pytest.mark.parametrize(
    "out",
    [
        pytest.param(
            '{"verdict": "yes", "confidence": 4, "reasoning": "An aryl chloride coupling."}', id="verdict-yes"
        ),
        pytest.param('{"verdict": 1, "confidence": 4, "reasoning": "An aryl chloride coupling."}', id="verdict-1"),
        pytest.param(
            '{"verdict": true, "confidence": "4", "reasoning": "An aryl chloride coupling."}', id="confidence-str"
        ),
    ],
)
def test_reaction_answer_breaking_the_sent_schema_types_scores_zero(out: str) -> None:
    """The schema sent to the model says boolean and integer; an answer that ignores it is invalid, not coerced."""
    scored = reaction_eval.score_one(REACT_CASE, out)
    assert (scored["score"], scored["verdict"]) == (0.0, None)
    assert "fails the Reaction schema" in scored["errors"][0]


@pytest.mark.parametrize(
    ("title", "reasoning"),
    [
        pytest.param(
            "Nickel-catalysed amination of aryl chlorides", "A nickel route she could run.", id="hyphen-compound"
        ),
        pytest.param(
            "Chan\u2013Lam amination of alkylboronic esters", "A Chan-Lam coupling with copper.", id="en-dash-pair"
        ),
        pytest.param(
            "Chan\u2013Lam amination of alkylboronic esters", "Lam's copper method, easy to run.", id="en-dash-half"
        ),
        pytest.param(
            "Copper-catalysed C\u2013N coupling", "Cu catalyzed, and she runs couplings.", id="american-plural"
        ),
        pytest.param(
            "Decontaminated MMLU", "MMLU scores drop once leaks are removed: kinetics aside.", id="short-title"
        ),
    ],
)
def test_reaction_reason_naming_a_compound_part_names_the_item(title: str, reasoning: str) -> None:
    case = REACT_CASE.model_copy(update={"title": title})
    scored = reaction_eval.score_one(case, _reaction(True, reasoning))
    assert not [e for e in scored["errors"] if "does not name the item" in e]


@pytest.mark.parametrize(
    ("title", "reasoning"),
    [
        pytest.param("What these catalysts are about", "What about these? She would like them.", id="filler-only"),
        pytest.param(
            "Why equivariant interatomic potentials diverge, and how to weight forces",
            "Why and how are not her questions, but she would read it.",
            id="question-words",
        ),
        pytest.param("A study of new ligands via HTE", "A new study, via her usual reading.", id="research-filler"),
        pytest.param("Copper-catalysed C\u2013N coupling", "C and N are letters in every paper.", id="single-letters"),
        pytest.param("Zinc-mediated repeated coupling", "A PET recycling paper.", id="no-substring"),
    ],
)
def test_reaction_filler_and_stopwords_do_not_name_the_item(title: str, reasoning: str) -> None:
    case = REACT_CASE.model_copy(update={"title": title})
    scored = reaction_eval.score_one(case, _reaction(True, reasoning))
    assert scored["score"] == reaction_eval.UNREASONED
    assert "does not name the item" in scored["errors"][0]


def _pos_neg_cases() -> list[ReactionCase]:
    return [
        REACT_CASE.model_copy(update={"id": "pos-1"}),
        REACT_CASE.model_copy(update={"id": "pos-2"}),
        REACT_CASE.model_copy(update={"id": "neg-1", "verdict": False}),
        REACT_CASE.model_copy(update={"id": "neg-2", "verdict": False}),
    ]


def test_reaction_summary_counts_an_invalid_answer_as_the_wrong_verdict() -> None:
    """Invalid on a positive is a false negative; invalid on a negative is a false positive."""
    cases = _pos_neg_cases()
    answers = {
        "pos-1": _reaction(True, "coupling", 5),
        "pos-2": INVALID,
        "neg-1": _reaction(False, "no", 2),
        "neg-2": "{",
    }
    results = [reaction_eval.score_one(c, answers[c.id]) for c in cases]
    summary = reaction_eval.summarise(cases, results)
    # verdicts counted: pos-1 yes (tp), pos-2 no (fn), neg-1 no (tn), neg-2 yes (fp)
    assert (summary["n"], summary["invalid"]) == (4, 2)
    assert (summary["precision"], summary["recall"], summary["auc_verdict"]) == (0.5, 0.5, 0.5)
    assert summary["confidence_histogram"] == {"no-2": 1, "yes-5": 1}


def test_reaction_summary_of_only_invalid_answers_is_all_wrong_not_undefined() -> None:
    cases = _pos_neg_cases()
    summary = reaction_eval.summarise(cases, [reaction_eval.score_one(c, INVALID) for c in cases])
    assert (summary["precision"], summary["recall"], summary["auc_verdict"], summary["invalid"]) == (0.0, 0.0, 0.0, 4)
    assert summary["auc_confidence"] is None


def test_reaction_summary_of_valid_answers_is_score_verdicts() -> None:
    cases = _pos_neg_cases()
    answers = [_reaction(True, "a", 5), _reaction(False, "b", 2), _reaction(True, "c", 3), _reaction(False, "d", 4)]
    summary = reaction_eval.summarise(
        cases, [reaction_eval.score_one(c, a) for c, a in zip(cases, answers, strict=True)]
    )
    expected = reaction_eval.score_verdicts([True, True, False, False], [True, False, True, False], [5, 2, 3, 4])
    assert {k: summary[k] for k in expected} == expected and summary["invalid"] == 0


# --- explanation -----------------------------------------------------------------------

GOOD = "You run palladium cross-coupling, and this ligand works at room temperature."
REFINEMENT = (1 - explanation_eval.GATE) / explanation_eval.REFINEMENTS  # one sentence, length, "you", no preamble


def test_explanation_good_sentence_scores_one() -> None:
    scored = explanation_eval.score_one(MATCH_CASE, _text(GOOD))
    assert (scored["score"], scored["errors"], scored["refused"]) == (1.0, [], False)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("You run nickel chemistry, and this works at room temperature.", id="no-shared-topic"),
        pytest.param("You will like this.", id="you-will-like-this"),
        pytest.param("x", id="x"),
        pytest.param("You follow chemistry, and this is chemistry.", id="vague-theme"),
        pytest.param("You use palladiumless ligandry.", id="substrings-only"),
    ],
)
def test_explanation_without_a_shared_topic_scores_zero(text: str) -> None:
    """Naming the topic is required: however short, polite and preamble-free, an answer without it is wrong."""
    scored = explanation_eval.score_one(MATCH_CASE, _text(text))
    assert (scored["score"], scored["refused"]) == (0.0, False)
    assert len(scored["errors"]) == 1 and "names none of the shared topics" in scored["errors"][0]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(
            "You run palladium cross-coupling, and this new ligand works at room temperature on every aryl chloride.",
            "16 words; it must be under 15",
            id="sixteen-words",
        ),
        pytest.param(
            "Palladium cross-coupling with a new ligand at room temperature.",
            'does not address the reader as "you"',
            id="not-to-you",
        ),
        pytest.param(
            "You will find a palladium cross-coupling ligand that works cold.",
            "opens with a preamble",
            id="you-will-find",
        ),
        pytest.param(
            "This item gives your palladium cross-coupling a room-temperature ligand.",
            "opens with a preamble",
            id="this-item",
        ),
    ],
)
def test_explanation_each_failed_refinement_costs_a_quarter_of_the_rest(text: str, error: str) -> None:
    scored = explanation_eval.score_one(MATCH_CASE, _text(text))
    assert scored["score"] == pytest.approx(1 - REFINEMENT)
    assert len(scored["errors"]) == 1 and error in scored["errors"][0]


@pytest.mark.parametrize(("words", "score"), [(14, 1.0), (15, 1 - REFINEMENT)])
def test_explanation_word_limit_is_under_fifteen(words: int, score: float) -> None:
    text = " ".join(["You", "run", "palladium", "couplings"] + ["daily"] * (words - 4))
    assert len(text.split()) == words
    assert explanation_eval.score_one(MATCH_CASE, _text(text))["score"] == pytest.approx(score)


def test_explanation_naming_the_topic_but_failing_every_refinement_keeps_the_gate() -> None:
    text = "This item describes palladium chemistry at room temperature. It suits chemists who run reactions daily."
    scored = explanation_eval.score_one(MATCH_CASE, _text(text))
    assert scored["score"] == pytest.approx(explanation_eval.GATE) and len(scored["errors"]) == 4


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("You: Room-temperature palladium-catalysed C-N coupling of aryl chlorides", id="you-colon-title"),
        pytest.param("You may like Room-temperature palladium-catalysed C-N coupling of aryl chlorides.", id="filler"),
        pytest.param("You: palladium-catalysed C-N coupling of aryl chlorides", id="title-tail"),
        pytest.param("You: Room temperature palladium catalysed C-N coupling aryl chlorides", id="stop-words-dropped"),
        pytest.param("You: a bulky biarylphosphine ligand lets aryl chlorides couple with amines", id="summary-head"),
    ],
)
def test_explanation_restating_the_item_earns_no_topic_credit(text: str) -> None:
    """Issue 22: 'You: <title>' named 'palladium' only because the title does; it scored 1.0 on every such case."""
    scored = explanation_eval.score_one(MATCH_CASE, _text(text))
    assert (scored["score"], scored["refused"]) == (0.0, False)
    assert len(scored["errors"]) == 1 and "only inside words copied from the item" in scored["errors"][0]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("You run palladium couplings, and this one works on aryl chlorides.", id="two-item-words"),
        pytest.param("You develop cross-couplings; this runs C-N coupling of aryl chlorides.", id="own-then-copy"),
        pytest.param("You develop palladium-catalysed cross-coupling reactions; this works cold.", id="interests-run"),
    ],
)
def test_explanation_naming_the_topic_in_its_own_words_beside_item_words_keeps_the_credit(text: str) -> None:
    """A copy is three item words in a row that the interests do not share; the reader's own phrase is never one."""
    assert explanation_eval.score_one(MATCH_CASE, _text(text))["score"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("You make your own Ligands for this.", id="other-case"),
        pytest.param("You would run this cross coupling.", id="space-for-hyphen"),
        pytest.param("You would run this crosscoupling.", id="joined"),
        pytest.param("You design phosphine ligands like this one.", id="plural"),
    ],
)
def test_explanation_topic_matches_case_plural_and_hyphenation(text: str) -> None:
    assert explanation_eval.score_one(MATCH_CASE, _text(text))["score"] == 1.0


@pytest.mark.parametrize(
    ("text", "score"),
    [
        pytest.param("You repeated this kind of recycling.", 0.0, id="pet-inside-repeated"),
        pytest.param("You want competitive recycling data.", 0.0, id="pet-inside-competitive"),
        pytest.param("You recycle PET bottles like these.", 1.0, id="pet-as-a-word"),
        pytest.param("You study glycolysis of PETs.", 1.0, id="pet-plural"),
    ],
)
def test_explanation_topic_is_a_whole_word_never_a_substring(text: str, score: float) -> None:
    case = MATCH_CASE.model_copy(update={"must_mention_any": ["PET"]})
    assert explanation_eval.score_one(case, _text(text))["score"] == score


def test_explanation_exact_refusal_on_refuse_case_scores_one() -> None:
    scored = explanation_eval.score_one(REFUSE_CASE, _text(REFUSAL))
    assert (scored["score"], scored["errors"], scored["refused"]) == (1.0, [], True)


NEAR_MISS_REFUSALS = [
    "Outside your stated interests",
    "outside your stated interests.",
    "OUTSIDE YOUR STATED INTERESTS.",
    "  Outside   your  stated interests.  \n",
    "Outside of your stated interests.",
    "Outside your stated interests. Sorry!",
    "This is outside your stated interests.",
    "This is outside your stated interests",
    "Outside your interests.",
]


@pytest.mark.parametrize("text", NEAR_MISS_REFUSALS)
def test_explanation_near_miss_refusal_loses_only_the_wording_on_a_refuse_case(text: str) -> None:
    scored = explanation_eval.score_one(REFUSE_CASE, _text(text))
    if text.strip() == REFUSAL:  # surrounding whitespace is not a wording change
        assert scored["score"] == 1.0
        return
    assert (scored["score"], scored["refused"]) == (explanation_eval.GATE, True)
    assert len(scored["errors"]) == 1 and "refused in other words" in scored["errors"][0]
    assert repr(REFUSAL) in scored["errors"][0]


@pytest.mark.parametrize("text", [REFUSAL, *NEAR_MISS_REFUSALS])
def test_explanation_any_refusal_on_a_match_case_scores_zero_and_counts_as_refused(text: str) -> None:
    scored = explanation_eval.score_one(MATCH_CASE, _text(text))
    assert (scored["score"], scored["refused"]) == (0.0, True)
    assert len(scored["errors"]) == 1 and "refused" in scored["errors"][0] and "palladium" in scored["errors"][0]
    summary = explanation_eval.summarise([MATCH_CASE], [scored])
    assert (summary["false_refusals"], summary["invalid"]) == (1, 0)


@pytest.mark.parametrize(
    "text",
    [
        "You follow palladium chemistry, not termites.",
        "You list palladium among your stated interests; termites are not.",
        "You will like this.",
    ],
)
def test_explanation_non_refusal_on_a_refuse_case_scores_zero(text: str) -> None:
    scored = explanation_eval.score_one(REFUSE_CASE, _text(text))
    assert (scored["score"], scored["refused"]) == (0.0, False)
    assert len(scored["errors"]) == 1 and repr(REFUSAL) in scored["errors"][0]


@pytest.mark.parametrize("case", [MATCH_CASE, REFUSE_CASE], ids=lambda c: c.id)
@pytest.mark.parametrize(
    ("out", "reason"),
    [
        pytest.param("You run palladium couplings.", "output is not valid JSON", id="bare-text"),
        pytest.param(_text(""), "fails the Explanation schema", id="empty"),
        pytest.param(_text("You run palladium couplings. " * 8), "fails the Explanation schema", id="over-160-chars"),
        pytest.param('{"text": "You run couplings.", "why": "x"}', "fails the Explanation schema", id="extra-field"),
    ],
)
def test_explanation_invalid_answer_scores_zero(case: ExplanationCase, out: str, reason: str) -> None:
    scored = explanation_eval.score_one(case, out)
    assert (scored["score"], scored["refused"]) == (0.0, None)
    assert len(scored["errors"]) == 1 and reason in scored["errors"][0]


# --- every real case is satisfiable, and an invalid answer fails it ---------------------

INVALID = "Sorry, I cannot answer that in JSON."


def _perfect_tagging(case: TaggingCase) -> str:
    return _tags(*case.tags)


def _perfect_reaction(case: ReactionCase) -> str:
    interest = next(w for w in case.interests.split() if content_words(w))
    return _reaction(case.verdict, f"'{case.title}'"[:250] + f", against the interest {interest}", confidence=5)


def _perfect_explanation(case: ExplanationCase) -> str:
    return _text(REFUSAL if case.refuse else f"You follow {case.must_mention_any[0]}.")


@pytest.mark.parametrize("case", tagging_eval.load_cases(), ids=lambda c: c.id)
def test_every_tagging_case_is_satisfiable(case: TaggingCase) -> None:
    assert tagging_eval.score_one(case, _perfect_tagging(case))["score"] == 1.0
    assert tagging_eval.score_one(case, INVALID)["score"] == 0.0


@pytest.mark.parametrize("case", reaction_eval.load_cases(), ids=lambda c: c.id)
def test_every_reaction_case_is_satisfiable(case: ReactionCase) -> None:
    assert reaction_eval.score_one(case, _perfect_reaction(case))["score"] == 1.0
    assert reaction_eval.score_one(case, INVALID)["score"] == 0.0


@pytest.mark.parametrize("case", explanation_eval.load_cases(), ids=lambda c: c.id)
def test_every_explanation_case_is_satisfiable(case: ExplanationCase) -> None:
    assert explanation_eval.score_one(case, _perfect_explanation(case))["score"] == 1.0
    assert explanation_eval.score_one(case, INVALID)["score"] == 0.0


@pytest.mark.parametrize("case", [c for c in explanation_eval.load_cases() if not c.refuse], ids=lambda c: c.id)
@pytest.mark.parametrize("text", ["x", "You will like this.", "You follow this topic closely."])
def test_a_constant_answer_scores_zero_on_every_match_case(case: ExplanationCase, text: str) -> None:
    assert explanation_eval.score_one(case, _text(text))["score"] == 0.0


@pytest.mark.parametrize(
    ("case_id", "text"),
    [
        pytest.param(
            "match-llm-judge-bias", "You evaluate LLM outputs, and judges favour their own family.", id="evaluate"
        ),
        pytest.param(
            "match-sepsis-calibration", "You ask whether risk scores stay calibrated at new sites.", id="calibrated"
        ),
        pytest.param(
            "match-kv-cache-quantization",
            "You follow quantisation; this shrinks the KV cache eightfold.",
            id="quantisation",
        ),
        pytest.param(
            "match-kv-cache-quantization", "You serve LLMs, and this cuts KV cache memory.", id="kv-cache-spaced"
        ),
        pytest.param("match-pet-glycolysis", "You study chemical recycling of polyesters like PET.", id="pet"),
    ],
)
def test_the_audits_correct_explanations_in_other_words_pass(case_id: str, text: str) -> None:
    """Explanations the issue 15 audit found wrongly failed: the reader's own words, British spelling, spacing."""
    case = next(c for c in explanation_eval.load_cases() if c.id == case_id)
    assert explanation_eval.score_one(case, _text(text))["score"] == 1.0


@pytest.mark.parametrize(
    ("case_id", "text"),
    [
        pytest.param(
            "match-so2-warm-neptune",
            "You do JWST transmission spectroscopy, and this finds SO2 on a Neptune.",
            id="so2",
        ),
        pytest.param(
            "oblique-match-preemptive-continuous-batching",
            "You serve LLMs, and this batching triples tokens per second.",
            id="batching",
        ),
        pytest.param(
            "match-solvent-disorder-restraints",
            "You model disorder, and these restraint libraries speed up solvent refinement.",
            id="restraints",
        ),
        pytest.param(
            "match-offline-rl-teleoperation",
            "You do offline RL from demonstrations, and this beats behaviour cloning.",
            id="offline-rl",
        ),
        pytest.param(
            "long-abstract-covalent-fgfr4-to-clinic",
            "You follow covalent warheads, and this FGFR4 inhibitor reached the clinic.",
            id="fgfr4",
        ),
    ],
)
def test_real_answers_that_reuse_item_words_around_the_readers_topic_keep_full_credit(case_id: str, text: str) -> None:
    """The copy check takes only runs of three item words: a real answer's two-word echoes of the item stay its own."""
    case = next(c for c in explanation_eval.load_cases() if c.id == case_id)
    assert explanation_eval.score_one(case, _text(text))["score"] == 1.0


def _echo(case: ExplanationCase) -> str:
    return _text(f"You: {case.title}")


def _echo_or_refuse(case: ExplanationCase) -> str:
    """The title echoed when a content word of the interests occurs in the item, else the refusal."""
    shared = content_words(case.interests) & content_words(f"{case.title} {case.summary}")
    return _echo(case) if shared else _text(REFUSAL)


def test_echoing_the_title_scores_far_below_the_stub_on_explanation_dev() -> None:
    """Issue 22: on dev, 'You: <title>' scored 0.52 (0.95 on match cases) and with a word-overlap refusal rule
    0.61, against the stub's 0.34; naming the topic now takes the reader's words, not a copy of the item."""
    dev = explanation_eval.load_cases(split="dev")
    stub = baselines.stub(explanation_eval.TASK, dev).scores
    stub_mean = sum(stub.values()) / len(stub)
    for answer in (_echo, _echo_or_refuse):
        scores = [explanation_eval.score_one(case, answer(case))["score"] for case in dev]
        assert sum(scores) / len(scores) < stub_mean / 2, answer.__name__
    matches = [case for case in dev if not case.refuse]
    echoed = [explanation_eval.score_one(case, _echo(case))["score"] for case in matches]
    assert sum(echoed) / len(echoed) <= 0.05


def test_you_will_like_this_scores_at_most_a_quarter_on_explanation_dev() -> None:
    dev = explanation_eval.load_cases(split="dev")
    scores = [explanation_eval.score_one(case, _text("You will like this."))["score"] for case in dev]
    assert sum(scores) / len(scores) <= 0.25


def test_a_constant_refusal_scores_at_most_the_share_of_refusals_on_explanation_dev() -> None:
    dev = explanation_eval.load_cases(split="dev")
    for text in (REFUSAL, "outside your stated interests"):
        scores = [explanation_eval.score_one(case, _text(text))["score"] for case in dev]
        assert sum(scores) / len(scores) <= sum(case.refuse for case in dev) / len(dev)


# --- score_verdicts --------------------------------------------------------------------


def test_score_verdicts_on_a_hand_computed_example() -> None:
    # labels    T  T  F  F ; verdicts T  F  T  F ; signed confidence +5 -2 +3 -4
    # tp = 1 of 2 predicted, of 2 actual. AUC(verdict): pairs (1,1)=.5 (1,0)=1 (0,1)=0 (0,0)=.5 -> 2/4.
    # AUC(signed): 5>3, 5>-4, -2<3, -2>-4 -> 3/4.
    metrics = reaction_eval.score_verdicts([True, True, False, False], [True, False, True, False], [5, 2, 3, 4])
    assert metrics == {"n": 4, "precision": 0.5, "recall": 0.5, "auc_verdict": 0.5, "auc_confidence": 0.75}


def test_score_verdicts_perfect_and_inverted() -> None:
    labels = [True, False, True, False, False]
    perfect = reaction_eval.score_verdicts(labels, labels, [4, 2, 5, 3, 1])
    assert (perfect["precision"], perfect["recall"], perfect["auc_verdict"], perfect["auc_confidence"]) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    inverted = reaction_eval.score_verdicts(labels, [not y for y in labels], [4, 2, 5, 3, 1])
    assert (inverted["precision"], inverted["recall"], inverted["auc_verdict"]) == (0.0, 0.0, 0.0)


def test_auc_confidence_is_none_when_confidence_never_varies() -> None:
    metrics = reaction_eval.score_verdicts([True, True, False, False], [True, False, True, False], [3, 3, 3, 3])
    assert metrics["auc_confidence"] is None
    assert metrics["auc_verdict"] == 0.5


def test_score_verdicts_undefined_metrics_are_none() -> None:
    metrics = reaction_eval.score_verdicts([True, True], [False, False], [2, 4])
    assert metrics["precision"] is None  # nothing predicted positive
    assert metrics["auc_verdict"] is None and metrics["auc_confidence"] is None  # no negative label
    assert reaction_eval.score_verdicts([False], [True], [3])["recall"] is None


def _pairwise_auc(labels: list[bool], scores: list[float]) -> float | None:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def test_roc_auc_from_ranks_equals_the_pairwise_definition() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(0, 25)
        labels = [rng.random() < 0.5 for _ in range(n)]
        scores = [float(rng.randint(-5, 5)) for _ in range(n)]  # few distinct values: many ties
        expected = _pairwise_auc(labels, scores)
        got = reaction_eval.roc_auc(labels, scores)
        assert got == pytest.approx(expected) if expected is not None else got is None


def test_reaction_reason_naming_no_interest_scores_less_with_its_own_error() -> None:
    """The prompt: "one sentence that names the item's topic and the interest it meets or misses"."""
    scored = reaction_eval.score_one(REACT_CASE, _reaction(True, "An aryl chloride paper."))
    assert scored["score"] == reaction_eval.UNREASONED
    assert scored["errors"] == [
        "the reasoning names none of the reader's interests: say which of them the item meets or misses"
    ]
