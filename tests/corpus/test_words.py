"""Word matching for the scorers and corpus-check: whole words, spelling variants, plural, hyphenation."""

from __future__ import annotations

import pytest

from evals.corpus.words import (
    STOPWORDS,
    canonical,
    content_words,
    mentions,
    mentions_a_form,
    own_words,
    same_root,
    words,
)


@pytest.mark.parametrize(
    ("text", "term"),
    [
        pytest.param("Per-channel KV-cache quantisation", "KV cache", id="hyphen-for-space"),
        pytest.param("the kvcache shrinks", "KV cache", id="joined"),
        pytest.param("a pre-training objective", "pretraining", id="split-for-joined"),
        pytest.param("two new data sets", "datasets", id="space-and-plural"),
        pytest.param("Per-channel KV-cache quantisation", "quantization", id="isation-ization"),
        pytest.param("we optimise the optimisers", "optimizer", id="ise-ize-plural"),
        pytest.param("Nickel-catalysed couplings", "catalyzed", id="yse-yze"),
        pytest.param("analysed by LC-MS", "analyzed", id="analysed"),
        pytest.param("behaviour cloning", "behavior", id="our-or"),
        pytest.param("carbon fibres", "fiber", id="re-er"),
        pytest.param("in the centre", "center", id="centre"),
        pytest.param("modelling disorder", "modeling", id="doubled-l"),
        pytest.param("a sulphonyl fluoride", "sulfonyl", id="sulph"),
        pytest.param("aluminium oxide", "aluminum", id="aluminium"),
        pytest.param("a product catalogue", "catalog", id="ogue"),
        pytest.param("judges show biases", "bias", id="plural-es"),
        pytest.param("lithium batteries", "battery", id="plural-ies"),
        pytest.param("the MOFs", "MOF", id="plural-acronym"),
        pytest.param("DLPNO-CCSD(T) single points", "CCSD(T)", id="brackets"),
        pytest.param("X-rays of the crystal", "X-ray", id="x-ray"),
        pytest.param("C\u2013H functionalisation", "C-H functionalization", id="en-dash"),
        pytest.param("Closing the loop: PET.", "PET", id="punctuated"),
        pytest.param("Ring-opening polymerisation", "ring opening polymerization", id="multiword"),
    ],
)
def test_mentions_variants(text: str, term: str) -> None:
    assert mentions(text, term)


@pytest.mark.parametrize(
    ("text", "term"),
    [
        pytest.param("the experiment was repeated", "PET", id="substring-inside"),
        pytest.param("petrol prices", "PET", id="substring-prefix"),
        pytest.param("carpet", "PET", id="substring-suffix"),
        pytest.param("palladiumless ligandry", "palladium", id="longer-word"),
        pytest.param("cache of KV", "KV cache", id="order-matters"),
        pytest.param("KV store and a cache", "KV cache", id="not-adjacent"),
        pytest.param("anything", "", id="empty-term"),
        pytest.param("evaluate models", "evaluation", id="no-stemming-beyond-plural"),
    ],
)
def test_mentions_rejects(text: str, term: str) -> None:
    assert not mentions(text, term)


def test_words_split_hyphens_dashes_and_slashes() -> None:
    assert words("Chan\u2013Lam / Ni-catalysed \u2014 C\u2014H") == ("chan", "lam", "ni", "catalyzed", "c", "h")


def test_both_spellings_of_a_word_share_one_canonical_form() -> None:
    pairs = [("quantisation", "quantization"), ("colours", "color"), ("analyses", "analyze"), ("fibre", "fibers")]
    for british, american in pairs:
        assert canonical(british) == canonical(american), (british, american)


def test_content_words_drop_stopwords_filler_letters_and_numbers() -> None:
    text = "What about these new nickel-catalysed couplings via C\u2013N bonds in 2024?"
    assert content_words(text) == {"nickel", "catalyzed", "coupling", "bond"}


def test_stopwords_include_the_usual_function_words_and_the_audit_examples() -> None:
    assert {"what", "about", "these", "the", "and", "of", "why", "how"} <= STOPWORDS
    assert len(STOPWORDS) > 150


@pytest.mark.parametrize(
    ("first", "second"),
    [("calibrated", "calibration"), ("evaluate", "evaluation"), ("twin", "twinning"), ("clinic", "clinical")],
)
def test_other_forms_of_one_word_share_a_root(first: str, second: str) -> None:
    assert same_root(canonical(first), canonical(second))


@pytest.mark.parametrize(
    ("first", "second"), [("crystal", "crystallization"), ("transformer", "transmission"), ("cycled", "cycling")]
)
def test_different_words_or_long_derivations_do_not_share_a_root(first: str, second: str) -> None:
    assert not same_root(canonical(first), canonical(second))


def test_a_term_is_a_form_of_the_text_when_each_of_its_words_is() -> None:
    interests = "whether risk models stay calibrated; how to evaluate LLM outputs"
    assert mentions_a_form(interests, "calibration") and mentions_a_form(interests, "LLM evaluation")
    assert not mentions_a_form(interests, "sepsis calibration")


def test_own_words_drop_runs_of_three_content_words_copied_from_a_source() -> None:
    title = "Per-channel 2-bit KV-cache quantization keeps 128k-context accuracy"
    assert own_words(f"You: {title}", [title], "") == ["you per"]  # "per" is a stop word: a copy starts at content
    assert own_words("You follow quantization; the KV cache shrinks.", [title], "") == [
        "you follow quantization the kv cache shrinks"
    ]
    assert own_words("You serve models; KV-cache quantization keeps memory low.", [title], "") == [
        "you serve models",
        "memory low",
    ]


def test_own_words_keep_a_run_the_exempt_text_shares() -> None:
    title = "Covalent warhead design for kinase inhibitors"
    assert own_words(f"You: {title}", [title], "") == ["you"]
    assert own_words("You like covalent warhead design.", [title], "I follow covalent warhead design") == [
        "you like covalent warhead design"
    ]
