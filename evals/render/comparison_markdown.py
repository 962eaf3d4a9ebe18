"""A comparison as a PR comment, always under GitHub's size limit."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from attest.text import printable
from evals.analysis.comparison import CaseChange, Comparison
from evals.render.comparison_words import (
    ANSWER_MD,
    SHORT,
    advice,
    cut,
    difference,
    differs_head,
    floor_text,
    holm_note,
    key_words,
    only,
    p_text,
    pct,
    reason,
    score,
    side_by_side,
    tail_text,
    value_text,
)
from evals.store.records import RunError

__all__ = ["MARKDOWN_LIMIT", "append_summary", "to_markdown"]

MARKDOWN_LIMIT = 60_000  # a PR comment's size; GitHub refuses 65,536 and more
FOLD = 8  # more changed cases than this fold into <details>
VALUE_MD = 400  # a provenance value longer than this (none a run records is) is cut between words


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


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def text_md(value: object, limit: int | None = SHORT) -> str:
    """Untrusted text as inert markdown on one line: controls shown as escapes, `<>&` as HTML
    entities, every markdown punctuation backslash-escaped, line breaks folded into spaces."""
    text = printable(" ".join(str(value).split()))
    if limit is not None:
        text = cut(text, limit)
    return html.escape(_MARKDOWN_SPECIAL.sub(r"\\\1", text), quote=False)


_cell = text_md


def _code(value: object, limit: int = 80) -> str:
    """Untrusted text as a code span: one line, no backtick to close it early, no `|` to split a table cell."""
    text = cut(printable(" ".join(str(value).split())), limit).replace("`", "'").replace("|", "\\|")
    return f"`{text}`"


def _ids(changes: Sequence[CaseChange], limit: int) -> str:
    shown = [f"{_code(c.case_id, 60)} ({score(c.base)} -> {score(c.cand)})" for c in changes[:limit]]
    return ", ".join(shown) + (f", and {len(changes) - limit} more" if len(changes) > limit else "")


def _case_list(head: str, changes: Sequence[CaseChange], limit: int) -> str:
    """The changed cases inline, or past `FOLD` of them folded into a `<details>` a reader opens."""
    if len(changes) <= FOLD:
        return f"**{head} ({len(changes)}):** {_ids(changes, limit)}"
    return f"<details><summary>{head} ({len(changes)})</summary>\n\n{_ids(changes, limit)}\n\n</details>\n"


def _markdown_one(x: Comparison, budget: int) -> str:
    """One comparison in about `budget` characters: lists and tables shrink with it, answers fill what is left."""
    p = x.paired
    # about a third of the budget at most for lists and tables, the rest for answers side by side
    listed, rows, keys = max(5, budget // 1200), max(5, budget // 1500), max(5, budget // 2000)
    parts = [
        f"### {_cell(x.task, 80)}: **{x.verdict}** (candidate {_code(x.cand_run)} vs baseline {_code(x.base_run)})",
        "",
        *_differs(x, keys, budget),
        "| | mean [interval] n |\n|---|---|",
        f"| baseline | {x.base.format()} |\n| candidate | {x.cand.format()} |",
        f"| difference | {difference(x)} ({pct(p.interval.level)}) |",
        "",
        f"{reason(x).capitalize()}. {p_text(x)}; margin {x.margin:g}. Tail guard: {tail_text(x)}. "
        f"{p.improved} improved, {p.regressed} regressed, {p.unchanged} unchanged over {x.n} paired cases"
        + (f" (not compared: {only(x)})." if x.only_base or x.only_cand else "."),
    ]
    parts += [f"{note}." for note in (holm_note(x), advice(x).capitalize()) if note]
    if floor_text(x):
        parts.append(f"Floor (the best cheap strategy): {_cell(floor_text(x), None)}.")
    parts.append(f"Minimum detectable effect: {x.detectable.format()}.")
    if x.regressed:
        parts.append(_case_list("Regressed", x.regressed, listed))
    if x.improved:
        parts.append(_case_list("Improved", x.improved, listed))
    parts.append(_markdown_families(x, rows))
    text = "\n".join(parts)
    return text + _markdown_answers(x, budget - len(text))


def _differs(x: Comparison, rows: int, budget: int) -> list[str]:
    """The opening: every recorded difference (values whole up to `VALUE_MD`, cut between words), the prompt diff."""
    lines = [f"**What differs:** {differs_head(x)}", ""]
    lines += [f"**Made equal:** {_cell(note, None)}\n" for note in x.notes]
    if x.what_changed:
        lines += ["| | baseline | candidate |", "|---|---|---|"]
        lines += [
            f"| {_cell(key_words(c.key), 60)} | {_cell(_whole(c.base), None)} | {_cell(_whole(c.cand), None)} |"
            for c in x.what_changed[:rows]
        ]
        if len(x.what_changed) > rows:
            lines.append(f"\n{len(x.what_changed) - rows} more keys differ.")
        lines.append("")
    if x.prompt_diff:
        diff = _fenced("\n".join(x.prompt_diff), max(ANSWER_MD, budget // 4))
        lines += ["<details><summary>System prompts, line by line</summary>", "", diff, "", "</details>", ""]
    return lines


def _whole(value: object) -> str:
    """A provenance value whole, or (past `VALUE_MD` characters) cut at the last space before it."""
    text = value_text(value)
    if len(text) <= VALUE_MD:
        return text
    head = text[:VALUE_MD]
    return (head.rsplit(" ", 1)[0] if " " in head else head) + " …"


def _markdown_families(x: Comparison, rows: int) -> str:
    table = "".join(f"| {_cell(r.family, 60)} | {r.difference.format(signed=True)} |\n" for r in x.families[:rows])
    more = f"\n{len(x.families) - rows} more families.\n" if len(x.families) > rows else ""
    return f"<details><summary>By family</summary>\n\n| family | difference n |\n|---|---|\n{table}{more}\n</details>"


def _fenced(text: str, limit: int | None = ANSWER_MD) -> str:
    if limit is not None:
        text = text[:limit] + ("…" if len(text) > limit else "")
    text = printable(text, multiline=True)
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
            f"\n{_code(c.case_id)} [{_cell(c.family, 40)}] {score(c.base)} → {score(c.cand)}\n\n"
            f"baseline:\n{_fenced(c.base_answer)}\n\ncandidate:\n{_fenced(c.cand_answer)}\n"
        )
        if used + len(block) > room:
            break
        blocks.append(block)
        used += len(block)
    left = len(shown) - len(blocks)
    note = f"\n{left} more not shown: the comment would pass {MARKDOWN_LIMIT:,} characters.\n" if left else ""
    return head + "".join(blocks) + note + tail if blocks or note else ""


def append_summary(text: str, target: str) -> None:
    """Append a markdown comparison to `target` (a step summary gathers every step's; never overwritten)."""
    try:
        with open(target, "a", encoding="utf-8") as out:
            out.write(printable(text, multiline=True) + "\n\n")
    except OSError as exc:
        raise RunError(
            f"--summary {target}: cannot append to it ({exc.strerror or exc}); give a writable file"
        ) from None
