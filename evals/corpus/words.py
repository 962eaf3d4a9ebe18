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
from collections.abc import Iterable, Sequence

__all__ = ["STOPWORDS", "canonical", "content_words", "mentions", "mentions_a_form", "own_words", "same_root", "words"]

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


@functools.lru_cache(maxsize=1 << 14)
def words(text: str) -> tuple[str, ...]:
    """The canonical words of `text`, in order (cached: a scorer reads each case's texts once per sample)."""
    return tuple(canonical(word) for word in _lower_words(text))


def _says_something(word: str) -> bool:
    return len(word) > 1 and not word.isdigit() and word not in STOPWORDS


@functools.lru_cache(maxsize=1 << 14)
def content_words(text: str) -> frozenset[str]:
    """The canonical words of `text` that say something: no stop words, no single letters, no bare numbers.

    Cached: the scorers and the cheap strategies ask again for the same case's interests, title and summary
    once per sample, strategy and fitted value (the word-overlap floor alone asked 2.4 million times in the
    suite before this cache).
    """
    return frozenset(canonical(word) for word in _lower_words(text) if _says_something(word))


@functools.lru_cache(maxsize=1 << 12)
def _runs(text: str, length: int) -> frozenset[tuple[str, ...]]:
    """Cached: a case's title, summary and interests are the same for every sample scored against it."""
    said = [canonical(word) for word in _lower_words(text) if _says_something(word)]
    return frozenset(tuple(said[start : start + length]) for start in range(len(said) - length + 1))


@functools.lru_cache(maxsize=1 << 12)
def _copies(sources: tuple[str, ...], exempt: str, run: int) -> frozenset[tuple[str, ...]]:
    return frozenset().union(*(_runs(source, run) for source in sources)) - _runs(exempt, run)


def own_words(text: str, sources: Sequence[str], exempt: str, run: int = 3) -> list[str]:
    """The stretches of `text` that are not copied from `sources`, each as one string of lower-case words.

    A copy is `run` or more consecutive content words (stop words between them are skipped, on
    both sides) that also follow one another in a source, unless they do in `exempt` too; the
    stop words inside a copy belong to it. "You: <the title>" has no words of its own but "You".
    """
    raw = _lower_words(text)
    positions = [index for index, word in enumerate(raw) if _says_something(word)]
    said = [canonical(raw[index]) for index in positions]
    copies = _copies(tuple(sources), exempt, run)
    copied = [False] * len(raw)
    for start in range(len(said) - run + 1):
        if tuple(said[start : start + run]) in copies:
            for index in range(positions[start], positions[start + run - 1] + 1):
                copied[index] = True
    stretches: list[list[str]] = [[]]
    for word, taken in zip(raw, copied, strict=True):
        if taken:
            stretches.append([])
        else:
            stretches[-1].append(word)
    return [" ".join(stretch) for stretch in stretches if stretch]


@functools.lru_cache(maxsize=1 << 16)
def mentions(text: str, term: str) -> bool:
    """Whether `text` names `term` as whole words, up to spelling variants, plural and hyphenation (cached: the
    scorers ask for each case's terms in each answer, and the cheap strategies' fits answer alike again)."""
    wanted = words(term)
    if not wanted:
        return False
    joined = "".join(wanted)
    have = words(text)
    longest = len(wanted) + _MAX_JOIN
    return any(joined == "".join(window) for window in _windows(have, longest) if joined.startswith(window[0]))


def same_root(first: str, second: str) -> bool:
    """Whether two canonical words look like forms of one word: a shared stem of five letters or more with
    short endings (calibrated/calibration, evaluate/evaluation), or the whole of a four-letter-or-longer
    word with a short ending (twin/twinning, clinic/clinical). A heuristic for corpus-check, not for scoring."""
    if first == second:
        return True
    short, long = sorted((first, second), key=len)
    shared = next((index for index, (a, b) in enumerate(zip(short, long, strict=False)) if a != b), len(short))
    if shared == len(short) >= 4:
        return len(long) - shared <= 5
    return shared >= 5 and len(short) - shared <= 5 and len(long) - shared <= 5


def mentions_a_form(text: str, term: str) -> bool:
    """Whether every word of `term` occurs in `text` in some form (`same_root`); the term as a whole always does."""
    if mentions(text, term):
        return True
    have = set(words(text))
    wanted = words(term)
    return bool(wanted) and all(any(same_root(word, other) for other in have) for word in wanted)


def _windows(items: Sequence[str], longest: int) -> Iterable[Sequence[str]]:
    for start in range(len(items)):
        for end in range(start + 1, min(start + longest, len(items)) + 1):
            yield items[start:end]
