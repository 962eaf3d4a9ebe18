"""The explanation eval: the exact refusal when nothing matches; otherwise a short
sentence to "you" that names a shared topic, with no preamble.

Each branch has one required check, worth GATE, and refinements that share the rest:

- a match case requires a non-refusal that names one of `must_mention_any` (the shared
  topic in the reader's words; whole words, up to spelling variants, plural and
  hyphenation: evals/corpus/words.py) in its own words, not inside a run of COPY_RUN or
  more content words copied from the item (so "You: <title>" earns nothing); without it
  the answer scores 0 however well it is phrased. It must also be a sentence, as the
  prompt asks ("write one sentence"): a label and a colon before a list of words ("You:
  catalysis kinetics ...") or a bare list of words without one function word is none,
  and scores 0. One sentence, under fifteen words, "you" and no preamble then each earn a
  quarter of the remaining credit;
- a refuse case requires a refusal; the exact mandated wording earns the rest.

A refusal is the mandated sentence or a near miss of it (another case, no full stop,
extra words around "outside your stated interests"): it counts as refusing, so it is
wrong on a match case and loses only the exact-wording credit on a refuse case.
`gate` is tagging_eval's.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from attest.backends.stub import explanation_answer, judgement_answer
from attest.backends.types import Message
from attest.explain import REFUSAL, Explanation, Judgement, explanation_messages, judge_messages
from evals.corpus.cases import ExplanationCase
from evals.corpus.judgements import JudgementEntry
from evals.corpus.rules import explanation_rules
from evals.corpus.targets import explanation_targets
from evals.corpus.words import content_words, mentions, own_words, words
from evals.engine import execute, floors, pipeline
from evals.engine.chat import SampleChat
from evals.engine.pipeline import CaseResult, EvalResult
from evals.engine.scoring import not_a_sentence, parse_or_error
from evals.engine.task import CheckContext, CorpusChecks, DspyAdapter, JudgeSpec, Scored, Strategy, Task
from evals.tagging_eval import gate

__all__ = [
    "TASK",
    "dspy_fields",
    "evaluate",
    "gate",
    "is_refusal",
    "load_cases",
    "score_one",
    "strategies",
    "to_dspy_example",
]

CORPUS = Path(__file__).with_name("explanation_cases.json")
JUDGEMENTS = Path(__file__).with_name("explanation_judgements.json")  # the human-graded judgement corpus
GATE = 0.5  # credit for the required check; the refinements share the other half
MAX_WORDS = 15  # the prompt asks for fewer than fifteen words
PREAMBLES = ("you will find", "this item")
REFINEMENTS = 4  # one sentence, under fifteen words, "you", no preamble
_SENTENCE_END = re.compile(r"[.!?]+\s+(?=\S)")  # an end of sentence with more text after it
COPY_RUN = 3  # this many consecutive content words of the item, copied, name the item and not the reader
_YOU = re.compile(r"\byou(?:r|rs|rself|'re|'ve|'ll|'d)?\b", re.IGNORECASE)
# over canonical words (evals/corpus/words.py): "outside" is "outsid", "interests" is "interest"
_REFUSING = re.compile(r"\boutsid (?:of )?(?:your |the reader s )?(?:stated )?interest\b")


def render(case: ExplanationCase) -> list[Message]:
    return explanation_messages(case.interests, case.title, case.summary)


def render_judge(case: ExplanationCase, out: str) -> list[Message] | None:
    """The judge request for one answer: its text, when it parses (else None: judged fail unasked)."""
    parsed, _ = parse_or_error(out, Explanation)
    if not isinstance(parsed, Explanation):
        return None
    return judge_messages(case.interests, case.title, case.summary, parsed.text.strip())


def _render_entry(entry: JudgementEntry) -> list[Message]:
    return judge_messages(entry.interests, entry.title, entry.summary, entry.text)


def _judge_probe() -> list[Message]:
    return judge_messages("{interests}", "{title}", "{summary}", "{text}")


def is_refusal(text: str) -> bool:
    """The mandated refusal or a near miss of it: 'outside (of) your (stated) interests' anywhere, any case."""
    return bool(_REFUSING.search(" ".join(words(text))))


class ExplanationScored(Scored):
    refused: bool | None  # None: the answer was not valid


def score_one(case: ExplanationCase, out: str) -> ExplanationScored:
    """A refusal (exact for full credit) on refuse cases; on match cases a named shared topic, then refinements."""
    parsed, why = parse_or_error(out, Explanation)
    if parsed is None:
        return {"id": case.id, "score": 0.0, "errors": [why], "refused": None}
    assert isinstance(parsed, Explanation)
    text = parsed.text.strip()
    refused = is_refusal(text)
    if case.refuse:
        score, errors = _score_refuse_case(text, refused)
        return {"id": case.id, "score": score, "errors": errors, "refused": refused}
    if refused:
        error = f"refused ({text!r}), but the item shares {case.must_mention_any}"
        return {"id": case.id, "score": 0.0, "errors": [error], "refused": True}
    score, errors = _score_match_case(case, text)
    return {"id": case.id, "score": score, "errors": errors, "refused": False}


def _score_refuse_case(text: str, refused: bool) -> tuple[float, list[str]]:
    if not refused:
        error = f"no stated interest matches, so the answer must be exactly {REFUSAL!r}; got {text!r}"
        return 0.0, [error]
    if text != REFUSAL:
        error = f"refused in other words: the answer must be exactly {REFUSAL!r}; got {text!r}"
        return GATE, [error]
    return 1.0, []


def _score_match_case(case: ExplanationCase, text: str) -> tuple[float, list[str]]:
    if not any(mentions(text, term) for term in case.must_mention_any):
        return 0.0, [f"names none of the shared topics {case.must_mention_any}"]
    if not _names_topic_itself(case, text):
        error = (
            f"names the shared topic {case.must_mention_any} only inside words copied from the item; "
            "say which of the reader's interests it matches in your own words, not by restating the title"
        )
        return 0.0, [error]
    shape = not_a_sentence(text)
    if shape:
        return 0.0, [shape]
    errors = _refinement_errors(text)
    return 1.0 - (1.0 - GATE) * len(errors) / REFINEMENTS, errors


def _names_topic_itself(case: ExplanationCase, text: str) -> bool:
    """Whether a shared-topic term occurs outside the runs the answer copies from the item.

    A copy is COPY_RUN or more consecutive content words that follow one another in the title
    or the summary (and not in the interests, which are the reader's own words): echoing the
    title names the item, not why it matches the reader.
    """
    own = own_words(text, (case.title, case.summary), case.interests, COPY_RUN)
    named = (term for term in case.must_mention_any if mentions(text, term))  # lazily: the first usually does
    return any(any(mentions(stretch, term) for stretch in own) for term in named)


def _refinement_errors(text: str) -> list[str]:
    errors = []
    sentences = len(_SENTENCE_END.findall(text.rstrip())) + 1
    if sentences > 1:
        errors.append(f"{sentences} sentences; the prompt asks for one")
    count = len(text.split())
    if count >= MAX_WORDS:
        errors.append(f"{count} words; it must be under {MAX_WORDS}")
    if not _YOU.search(text):
        errors.append('does not address the reader as "you"')
    if text.lower().startswith(PREAMBLES):
        errors.append(f"opens with a preamble ({' '.join(text.split()[:2])} ...); start with the reason")
    return errors


def summarise(cases: Sequence[ExplanationCase], results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How often the model refused where it should and where it should not (near-miss refusals count)."""
    must = {c.id: c.refuse for c in cases}
    refused = [r for r in results if r.get("refused") is not None]
    return {
        "refusals_correct": sum(1 for r in refused if must[r["id"]] and r["refused"]),
        "refusals_expected": sum(1 for r in refused if must[r["id"]]),
        "false_refusals": sum(1 for r in refused if not must[r["id"]] and r["refused"]),
        "invalid": len(results) - len(refused),
    }


GENERIC_EXPLANATION = "You may find this relevant to your work."
# the reader's interests echoed back name the reader's topic words without saying anything of the item: a scorer
# that credits naming the topic pays them, so they are part of the honest floor
ECHOED_WORDS = 13


def strategies(cases: Sequence[ExplanationCase]) -> list[Strategy[ExplanationCase]]:
    """The title echoed as `You: {title}` and the reader's own interests echoed back, each with and without a
    word-overlap refuse rule; the exact refusal; a generic sentence; one naming the most frequent shared topic."""
    found: list[Strategy[ExplanationCase]] = [
        Strategy('the title echoed as "You: {title}"', _echo),
        Strategy(
            'the title echoed as "You: {title}", refusing when interests and item share no content word',
            _echo_or_refuse,
        ),
        Strategy(f"the first {ECHOED_WORDS} words of the interests echoed", _echo_interests),
        Strategy(
            f"the first {ECHOED_WORDS} words of the interests echoed, refusing when interests and item share no "
            "content word",
            _echo_interests_or_refuse,
        ),
        Strategy.constant(json.dumps({"text": REFUSAL}), f"always the exact refusal {REFUSAL!r}"),
        Strategy.constant(json.dumps({"text": GENERIC_EXPLANATION}), f"always {GENERIC_EXPLANATION!r}"),
    ]
    topics = Counter(t.lower() for c in cases if not c.refuse for t in c.must_mention_any).most_common(1)
    if topics:
        sentence = f"This matches your interest in {topics[0][0]}."
        found.append(Strategy.constant(json.dumps({"text": sentence}), f"always {sentence!r}"))
    return [*found, *floors.shared_interests(_train(), score_one)]


@functools.cache
def _train() -> tuple[ExplanationCase, ...]:
    """The corpus's train split: where the shared-interests floor chooses its refusal count."""
    return tuple(load_cases(CORPUS, "train"))


def _echo(case: ExplanationCase) -> str:
    return json.dumps({"text": f"You: {case.title}"})


def _echo_interests(case: ExplanationCase) -> str:
    return json.dumps({"text": "You: " + " ".join(case.interests.split()[:ECHOED_WORDS])})


def _echo_or_refuse(case: ExplanationCase) -> str:
    return _echo(case) if _shares_a_word(case) else json.dumps({"text": REFUSAL})


def _echo_interests_or_refuse(case: ExplanationCase) -> str:
    return _echo_interests(case) if _shares_a_word(case) else json.dumps({"text": REFUSAL})


def _shares_a_word(case: ExplanationCase) -> bool:
    return bool(content_words(case.interests) & content_words(f"{case.title} {case.summary}"))


def dspy_fields() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return ("interests", "title", "summary"), ("refuse", "must_mention_any")


def to_dspy_example(case: ExplanationCase) -> dict[str, Any]:
    inputs = {"interests": case.interests, "title": case.title, "summary": case.summary}
    return {**inputs, "refuse": case.refuse, "must_mention_any": list(case.must_mention_any), "case": case}


def _refusal_counts(cases: Sequence[ExplanationCase]) -> list[str]:
    values = [case.refuse for case in cases]
    return [str(values.count(True)), str(values.count(False))]


def _rules(path: Path, cases: Sequence[ExplanationCase], context: CheckContext) -> Iterable[str]:
    return explanation_rules(path, cases)


TASK = Task(
    "explanation",
    ExplanationCase,
    Explanation,
    CORPUS,
    render,
    score_one,
    summarise,
    strategies=strategies,
    interval="bootstrap",  # graded: refinements earn thirds of the remaining credit
    stub_answer=explanation_answer,
    dspy=DspyAdapter(dspy_fields(), to_dspy_example),
    checks=CorpusChecks(("refuse=true", "refuse=false"), _refusal_counts, _rules, explanation_targets),
    judge=JudgeSpec(Judgement, render_judge, _render_entry, _judge_probe, JUDGEMENTS, judgement_answer),
)


def load_cases(path: Path | None = None, split: str | None = None) -> list[ExplanationCase]:
    return pipeline.load_cases(TASK, path, split)


def evaluate(
    chat_json: SampleChat,
    cases: Sequence[ExplanationCase],
    *,
    repeat: int = 1,
    on_case: Callable[[CaseResult], None] | None = None,
) -> EvalResult:
    return execute.evaluate(TASK, chat_json, cases, repeat=repeat, on_case=on_case)
