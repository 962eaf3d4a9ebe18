"""Word-level text matching for the scorers and corpus-check: pure, no model, no I/O.

Text is split into lower-case words on everything that is not a letter or digit,
so hyphens, en and em dashes, slashes and brackets all separate words
("nickel-catalysed" -> nickel, catalysed; "Chan\u2013Lam" (en dash) -> chan, lam). Each word is
then put in one canonical spelling, so simple variants compare equal:

- British and American spelling: -ise/-ize (and -isation/-ization, -ised, -ising, ...),
  -yse/-yze (analysed/analyzed, catalysed/catalyzed), -our/-or (behaviour/behavior),
  -re/-er after b, g or t (fibre/fiber, centre/center), -ogue/-og (catalogue/catalog), a doubled l before an ending
  (modelling/modeling), sulph/sulf, aluminium/aluminum, caesium/cesium;
- a regular plural (-s, -es, -ies -> -y), and then a final silent e, so that
  "base"/"bases", "bias"/"biases" and "optimise"/"optimizes" meet.

Both sides go through the same canonical form, so an over-eager rule can only make
two spellings of different words meet, never split one word's spellings apart.

A term matches a text when its words occur as consecutive whole words of the text,
or when the text joins or splits them differently ("KV cache" matches "KV-cache"
and "kvcache"; "dataset" matches "data set"). Matching is never by substring:
"PET" does not match "repeated".
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

__all__ = ["STOPWORDS", "canonical", "content_words", "mentions", "words"]

_WORD = re.compile(r"[^\W_]+")
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"sulph"), "sulf"),
    (re.compile(r"^(alumin|caes)i?(um)$"), r"\1\2"),
    (re.compile(r"^(.{2,})is(e|ed|es|er|ers|ing|ation|ations|ational)$"), r"\1iz\2"),
    (re.compile(r"^(.+)ys(e|ed|es|er|ers|ing)$"), r"\1yz\2"),
    (re.compile(r"^(.{3,})our(s|ed|ing|ite|ites|able|al)?$"), r"\1or\2"),
    (re.compile(r"^(.{2,}[bgt])re(s|d)?$"), r"\1er\2"),
    (re.compile(r"^(.{2,})ogue(s)?$"), r"\1og\2"),
    (re.compile(r"^(.{2,}[aeiou])ll(ing|ed|er|ers)$"), r"\1l\2"),
)
_KEEP_FINAL_S = ("ss", "us", "is", "as")
_MAX_JOIN = 3  # a term's words may be written as up to this many more or fewer text words

# A standard English stop-word list (the usual function words), then the filler a
# reason or an explanation uses without saying anything about the item.
_STOPWORD_TEXT = """
    a about above after again against all also am among an and any are aren around as at be because
    been before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either else ever every few for from further had hadn has hasn have haven
    having he her here hers herself him himself his how however i if in into is isn it its itself
    just ll me might more most must mustn my myself no nor not now of off on once only or other
    ought our ours ourselves out over own per quite rather re same shall she should shouldn since so
    some such than that the their theirs them themselves then there these they this those though
    through thus to too under until up upon us ve very via was wasn we were weren what when where
    whether which while who whom whose why will with within without won would wouldn yet you your
    yours yourself yourselves
    article based new novel paper item items study studies work works using use used toward towards
    versus vs
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@functools.lru_cache(maxsize=1 << 16)
def canonical(word: str) -> str:
    """One spelling for a lower-case word: American spelling, singular.

    Cached: a corpus repeats its words, and rescore scores every past sample again.
    """
    for pattern, replacement in _RULES:
        word = pattern.sub(replacement, word)
    return _singular(word)


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(_KEEP_FINAL_S):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _lower_words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def words(text: str) -> list[str]:
    """The canonical words of `text`, in order."""
    return [canonical(word) for word in _lower_words(text)]


def content_words(text: str) -> set[str]:
    """The canonical words of `text` that say something: no stop words, no single letters, no bare numbers."""
    return {
        canonical(word) for word in _lower_words(text) if len(word) > 1 and not word.isdigit() and word not in STOPWORDS
    }


def mentions(text: str, term: str) -> bool:
    """Whether `text` names `term` as whole words, up to spelling variants, plural and hyphenation."""
    wanted = words(term)
    if not wanted:
        return False
    joined = "".join(wanted)
    have = words(text)
    longest = len(wanted) + _MAX_JOIN
    return any(joined == "".join(window) for window in _windows(have, longest) if joined.startswith(window[0]))


def _windows(items: list[str], longest: int) -> Iterable[list[str]]:
    for start in range(len(items)):
        for end in range(start + 1, min(start + longest, len(items)) + 1):
            yield items[start:end]
