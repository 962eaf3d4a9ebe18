"""A comparison for a terminal: figures, verdict, changed cases, families, provenance, answers."""

from __future__ import annotations

from evals.analysis.comparison import Comparison
from evals.render.comparison_words import (
    SHORT,
    TEXT_LIST,
    advice,
    change_text,
    cut,
    difference,
    differs_head,
    floor_text,
    holm_note,
    ids,
    only,
    p_text,
    pct,
    reason,
    score,
    side_by_side,
    tail_text,
)

__all__ = ["to_text"]


def to_text(x: Comparison) -> str:
    """The comparison for a terminal: figures, verdict, changed cases, families, provenance, answers."""
    p = x.paired
    lines = [f"{x.task}: candidate {x.cand_run} vs baseline {x.base_run}, {x.n} cases paired", *_differs(x)]
    if x.only_base or x.only_cand:
        lines.append(f"  not compared: {only(x)}")
    lines += [
        f"baseline    {x.base.format()}",
        f"candidate   {x.cand.format()}",
        *([f"floor       {floor_text(x)}"] if floor_text(x) else []),
        f"difference  {difference(x)}  ({pct(p.interval.level)} interval); {p_text(x)}",
        f"tail        {tail_text(x)}",
        f"verdict     {x.verdict.upper()}: {reason(x)}",
    ]
    lines += [f"            {note}" for note in (holm_note(x), advice(x)) if note]
    lines.append(f"changes     {p.improved} improved, {p.regressed} regressed, {p.unchanged} unchanged")
    if x.regressed:
        lines.append(f"regressed   {ids(x.regressed, TEXT_LIST)}")
    if x.improved:
        lines.append(f"improved    {ids(x.improved, TEXT_LIST)}")
    lines.append("by family")
    lines += [f"  {row.family:<14} {row.difference.format(signed=True)}" for row in x.families]
    lines.append(f"detectable  {x.detectable.format()}")
    shown = side_by_side(x)
    if shown:
        lines.append(f"side by side ({len(shown)} of {len(x.regressed) + len(x.improved)} changed cases, losses first)")
        for c in shown:
            lines += [
                f"  {c.case_id} [{c.family}] {score(c.base)} -> {score(c.cand)}",
                f"    baseline:  {cut(c.base_answer, SHORT)}",
                f"    candidate: {cut(c.cand_answer, SHORT)}",
            ]
    return "\n".join(lines) + "\n"


def _differs(x: Comparison) -> list[str]:
    """The opening: every recorded difference in full, then the system prompts' line diff."""
    lines = [f"differs     {differs_head(x)}"]
    lines += [f"  {change_text(c)}" for c in x.what_changed]
    lines += [f"made equal  {note}" for note in x.notes]
    if x.prompt_diff:
        lines.append("  system prompts, line by line:")
        lines += [f"    {line}" for line in x.prompt_diff]
    return lines
