"""The words every rendering of a comparison shares: the verdict's reason, the advice, cut values."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evals.analysis.comparison import CaseChange, Comparison
from evals.analysis.differences import Change
from evals.analysis.paired import verdict_decimals

# provenance keys in words, as the opening of a comparison lists them
KEY_WORDS = {
    "prompt_fingerprint": "prompt (every request)",
    "system_prompts": "system prompts",
    "tag_prompt_sha256": "tag prompt file",
    "scorer_fingerprint": "scorer",
    "git_commit": "commit",
    "corpus_sha256": "corpus sha256",
    "attest_version": "attest version",
}

TEXT_LIST = 20  # case ids listed per line in text before "and N more"
SHORT = 120  # provenance values and one-line answers are cut here in text
ANSWER_MD = 1_500


def cut(value: object, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pct(level: float) -> str:
    return f"{level * 100:.3g}%"


def only(x: Comparison) -> str:
    return f"{len(x.only_base)} case(s) only in the baseline, {len(x.only_cand)} only in the candidate"


def score(x: float) -> str:
    return f"{x:.2f}"


def reason(x: Comparison) -> str:
    low, high = x.paired.interval.low, x.paired.interval.high
    if x.withheld:
        alone = "" if x.measured == "inconclusive" else f" (the interval alone would say {x.measured})"
        return x.withheld + alone
    if x.verdict == "ship":
        return f"the whole interval is above the margin {x.margin:g} and no excess of large regressions"
    if low > x.margin and x.paired.tail.excess:
        t = x.paired.tail
        return (
            f"the whole interval is above the margin {x.margin:g}, but {t.losses} case(s) fell by at least half "
            f"the scale against {t.gains} that rose as much (p = {t.p:.2g} < {t.alpha:.3g}): an excess of large "
            "regressions blocks ship"
        )
    if x.verdict == "regress":
        return "the whole interval is below 0"
    if low > 0:
        return f"the interval is above 0 but not wholly above the margin {x.margin:g}"
    held = "both losses and gains" if high > 0 and low < 0 else "0"
    return f"the interval holds {held}"


def difference(x: Comparison) -> str:
    """The paired difference, printed with enough decimals that its bounds say what the verdict says."""
    p = x.paired
    return p.difference.format(signed=True, decimals=verdict_decimals(p.interval, x.margin))


def advice(x: Comparison) -> str:
    if x.verdict != "inconclusive" or x.withheld:
        return ""
    if x.paired.improved == x.paired.regressed == 0:
        if not x.what_changed:
            return "nothing recorded differs and no case changed score: this is one measurement taken twice"
        return (
            "no case changed score, so more cases of the same kind will not decide it: "
            "check that the change reached the candidate run (what differs, above)"
        )
    mde = x.detectable.effect
    reach = "" if math.isinf(mde) else f" a true difference under {mde:.2f} usually reads inconclusive at n={x.n};"
    return f"to decide:{reach} add cases, add repeats, or try a bigger change"


def holm_note(x: Comparison) -> str:
    if x.holm_p is None:
        return ""
    level = pct(x.paired.interval.level)
    return f"Holm over {x.family_size} comparisons: interval at {level}, adjusted p = {x.holm_p:.2g}"


def p_text(x: Comparison) -> str:
    """The p beside the difference: the decision's own, and under Holm the adjusted one beside the Holm-level
    interval it agrees with."""
    p = x.paired
    if x.holm_p is not None:
        return f"Holm-adjusted p = {x.holm_p:.2g} over {x.family_size} (unadjusted {p.p_value:.2g}; {p.test})"
    return f"p = {p.p_value:.2g} ({p.test})"


def tail_text(x: Comparison) -> str:
    """The tail guard beside the verdict: its counts, its exact binomial p and the level it blocks ship at."""
    return x.paired.tail.format()


def ids(changes: Sequence[CaseChange], limit: int, quote: str = "") -> str:
    shown = [f"{quote}{cut(c.case_id, 60)}{quote} ({score(c.base)} -> {score(c.cand)})" for c in changes[:limit]]
    more = f", and {len(changes) - limit} more" if len(changes) > limit else ""
    return ", ".join(shown) + more


def side_by_side(x: Comparison) -> list[CaseChange]:
    return [*x.regressed, *x.improved][: x.show]


def change_text(c: Change) -> str:
    return f"{key_words(c.key)}: {value_text(c.base)} -> {value_text(c.cand)}"


def key_words(key: str) -> str:
    return KEY_WORDS.get(key, key.replace("_", " "))


def value_text(value: object) -> str:
    """A provenance value in full, on one line: None as (none), an empty string as \"\"."""
    if value is None:
        return "(none)"
    text = " ".join(str(value).split())
    return text or '""'


def differs_head(x: Comparison) -> str:
    """The opening's first words: what kinds of change differ, and whether that confounds the pair."""
    if not x.what_changed:
        return (
            "nothing else recorded differs (made equal below)"
            if x.notes
            else "nothing recorded differs between the runs"
        )
    if x.confounded:
        accepted = ", accepted with --accept-mixed" if not x.withheld else ""
        return f"confounded: {', '.join(x.confounded)} differ{accepted}"
    if x.kinds:
        return f"the {x.kinds[0]} only (of prompt, model, options), {len(x.what_changed)} recorded value(s)"
    return f"neither prompt, model nor options; {len(x.what_changed)} recorded value(s)"


NOT_BEATEN = "does not beat the best cheap strategy"


def floor_text(x: Comparison) -> str:
    """The best cheap strategy beside both runs (each on its own cases), naming a run that does not beat it."""
    base, cand = x.floors
    if base is None and cand is None:
        return ""
    shown = [f"{f.mean:.2f} beside the {who}" for f, who in ((base, "baseline"), (cand, "candidate")) if f is not None]
    losers = [who for f, who in ((base, "baseline"), (cand, "candidate")) if f is not None and not f.beaten]
    said = f"; the {' and the '.join(losers)} {NOT_BEATEN}" if losers else ""
    either = cand if cand is not None else base
    answer = either.answer if either is not None else ""
    return f"{', '.join(shown)} ({cut(answer, SHORT)}){said}"
