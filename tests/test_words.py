"""Word matching for the scorers and corpus-check: whole words, spelling variants, plural, hyphenation."""

from __future__ import annotations

import pytest

from evals.corpus.words import STOPWORDS, canonical, content_words, mentions, words


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
    assert words("Chan\u2013Lam / Ni-catalysed \u2014 C\u2014H") == ["chan", "lam", "ni", "catalyzed", "c", "h"]


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
