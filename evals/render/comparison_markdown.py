"""A comparison as a PR comment, always under GitHub's size limit."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evals.analysis.comparison import Comparison
from evals.render.comparison_words import (
    ANSWER_MD,
    SHORT,
    advice,
    cut,
    holm_note,
    ids,
    only,
    pct,
    reason,
    score,
    side_by_side,
)

__all__ = ["MARKDOWN_LIMIT", "to_markdown"]

MARKDOWN_LIMIT = 60_000  # a PR comment's size; GitHub refuses 65,536 and more


def to_markdown(comparisons: Comparison | Sequence[Comparison], *, limit: int = MARKDOWN_LIMIT) -> str:
    """A PR comment for one or more comparisons, always shorter than `limit` characters.

    Long lists are cut with "and N more"; answers side by side are added while they fit
    and the comment says how many were left out.
    """
    items = [comparisons] if isinstance(comparisons, Comparison) else list(comparisons)
    share = (limit - 200) // max(1, len(items))
    text = "\n\n".join(_markdown_one(x, share) for x in items)
    if len(text) < limit:
        return text
    return text[: limit - 100] + f"\n\n(cut here: the comment would pass {limit:,} characters)\n"


def _cell(value: object, limit: int = SHORT) -> str:
    return cut(value, limit).replace("|", "\\|")


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def _markdown_one(x: Comparison, budget: int) -> str:
    """One comparison in about `budget` characters: lists and tables shrink with it, answers fill what is left."""
    p = x.paired
    # about a third of the budget at most for lists and tables, the rest for answers side by side
    listed, rows, keys = max(5, budget // 1200), max(5, budget // 1500), max(5, budget // 2000)
    parts = [
        f"### {x.task}: **{x.verdict}** "
        f"(candidate {_code(cut(x.cand_run, 80))} vs baseline {_code(cut(x.base_run, 80))})",
        "",
        "| | mean [interval] n |\n|---|---|",
        f"| baseline | {x.base.format()} |\n| candidate | {x.cand.format()} |",
        f"| difference | {p.difference.format(signed=True)} ({pct(p.interval.level)}) |",
        "",
        f"{reason(x).capitalize()}. p = {p.p_value:.2g} ({p.test}); margin {x.margin:.2f}. "
        f"{p.improved} improved, {p.regressed} regressed, {p.unchanged} unchanged over {x.n} paired cases"
        + (f" (not compared: {only(x)})." if x.only_base or x.only_cand else "."),
    ]
    parts += [f"{note}." for note in (holm_note(x), advice(x).capitalize()) if note]
    parts.append(f"Minimum detectable effect: {x.detectable.format()}.")
    if x.regressed:
        parts.append(f"**Regressed ({len(x.regressed)}):** {ids(x.regressed, listed, '`')}")
    if x.improved:
        parts.append(f"**Improved ({len(x.improved)}):** {ids(x.improved, listed, '`')}")
    parts.append(_markdown_families(x, rows))
    if x.what_changed:
        table = "".join(
            f"| {_cell(c.key, 60)} | {_cell(c.base, 80)} | {_cell(c.cand, 80)} |\n" for c in x.what_changed[:keys]
        )
        more = f"\n{len(x.what_changed) - keys} more keys differ.\n" if len(x.what_changed) > keys else ""
        head = "<details><summary>What changed</summary>\n\n| | baseline | candidate |\n|---|---|---|\n"
        parts.append(f"{head}{table}{more}\n</details>")
    text = "\n".join(parts)
    return text + _markdown_answers(x, budget - len(text))


def _markdown_families(x: Comparison, rows: int) -> str:
    table = "".join(f"| {_cell(r.family, 60)} | {r.difference.format(signed=True)} |\n" for r in x.families[:rows])
    more = f"\n{len(x.families) - rows} more families.\n" if len(x.families) > rows else ""
    return f"<details><summary>By family</summary>\n\n| family | difference n |\n|---|---|\n{table}{more}\n</details>"


def _fenced(text: str) -> str:
    text = text[:ANSWER_MD] + ("…" if len(text) > ANSWER_MD else "")
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}"


def _markdown_answers(x: Comparison, room: int) -> str:
    shown = side_by_side(x)
    if not shown:
        return ""
    head, tail = "\n<details><summary>Side by side, losses first</summary>\n", "\n</details>\n"
    blocks: list[str] = []
    used = len(head) + len(tail) + 120
    for c in shown:
        block = (
            f"\n{_code(cut(c.case_id, 80))} [{_cell(c.family, 40)}] {score(c.base)} → {score(c.cand)}\n\n"
            f"baseline:\n{_fenced(c.base_answer)}\n\ncandidate:\n{_fenced(c.cand_answer)}\n"
        )
        if used + len(block) > room:
            break
        blocks.append(block)
        used += len(block)
    left = len(shown) - len(blocks)
    note = f"\n{left} more not shown: the comment would pass {MARKDOWN_LIMIT:,} characters.\n" if left else ""
    return head + "".join(blocks) + note + tail if blocks or note else ""
