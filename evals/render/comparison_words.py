"""The words every rendering of a comparison shares: the verdict's reason, the advice, cut values."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evals.analysis.comparison import CaseChange, Change, Comparison

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
    if x.verdict == "ship":
        return f"the whole interval is above the margin {x.margin:.2f}"
    if x.verdict == "regress":
        return "the whole interval is below 0"
    if low > 0:
        return f"the interval is above 0 but not wholly above the margin {x.margin:.2f}"
    held = "both losses and gains" if high > 0 and low < 0 else "0"
    return f"the interval holds {held}"


def advice(x: Comparison) -> str:
    if x.verdict != "inconclusive":
        return ""
    mde = x.detectable.effect
    reach = "" if math.isinf(mde) else f" a true difference under {mde:.2f} usually reads inconclusive at n={x.n};"
    return f"to decide:{reach} add cases, add repeats, or try a bigger change"


def holm_note(x: Comparison) -> str:
    if x.holm_p is None:
        return ""
    level = pct(x.paired.interval.level)
    return f"Holm over {x.family_size} comparisons: interval at {level}, adjusted p = {x.holm_p:.2g}"


def ids(changes: Sequence[CaseChange], limit: int, quote: str = "") -> str:
    shown = [f"{quote}{cut(c.case_id, 60)}{quote} ({score(c.base)} -> {score(c.cand)})" for c in changes[:limit]]
    more = f", and {len(changes) - limit} more" if len(changes) > limit else ""
    return ", ".join(shown) + more


def side_by_side(x: Comparison) -> list[CaseChange]:
    return [*x.regressed, *x.improved][: x.show]


def change_text(c: Change) -> str:
    return f"{c.key}: {cut(c.base, 40)} -> {cut(c.cand, 40)}"
