"""Both runs' tokens and cost beside a comparison: what each asked of its server, and what that cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.analysis.comparison import Comparison
from evals.analysis.pairing import Run
from evals.analysis.tokens import PriceList, cost_text, tokens_text
from evals.render.comparison_markdown import text_md, to_markdown

__all__ = ["markdown_with_tokens", "token_json", "token_lines", "token_markdown"]


def _tokens(run: Run) -> dict[str, int] | None:
    found = run.report.generate.get("tokens")
    return found if isinstance(found, dict) else None


def _samples(run: Run) -> int:
    return int(run.report.generate.get("samples", len(run.manifest.samples)))


def token_lines(base: Run, cand: Run, prices: PriceList | None) -> list[str]:
    """`tokens` and (free, or with a price list) `cost` lines for the text comparison."""
    lines = [
        f"tokens      baseline {tokens_text(_tokens(base), _samples(base))}",
        f"            candidate {tokens_text(_tokens(cand), _samples(cand))}",
    ]
    costs = [cost_text(r.manifest.backend, r.manifest.model, _tokens(r), prices) for r in (base, cand)]
    if any(c is not None for c in costs):
        lines.append(f"cost        baseline {costs[0] or 'unknown: give --prices FILE'}")
        lines.append(f"            candidate {costs[1] or 'unknown: give --prices FILE'}")
    return lines


def token_json(base: Run, cand: Run, prices: PriceList | None) -> dict[str, Any]:
    """The same as data: each run's recorded token counts and cost text (None when unknown)."""
    return {
        name: {"tokens": _tokens(r), "cost": cost_text(r.manifest.backend, r.manifest.model, _tokens(r), prices)}
        for name, r in (("baseline", base), ("candidate", cand))
    }


def token_markdown(pairs: Sequence[tuple[Run, Run]], prices: PriceList | None) -> str:
    """Each compared pair's tokens and cost as a markdown table (the `--markdown` and `--summary` output)."""
    rows = ["| task | run | tokens | cost |", "|---|---|---|---|"]
    for base, cand in pairs:
        for name, run in (("baseline", base), ("candidate", cand)):
            cost = cost_text(run.manifest.backend, run.manifest.model, _tokens(run), prices)
            cells = [
                run.manifest.task,
                name,
                tokens_text(_tokens(run), _samples(run)),
                cost or "unknown: give --prices FILE",
            ]
            rows.append("| " + " | ".join(text_md(c, None) for c in cells) + " |")
    return "\n".join(rows)


def markdown_with_tokens(
    found: Sequence[Comparison], pairs: Sequence[tuple[Run, Run]], prices: PriceList | None
) -> str:
    """The markdown comparison followed by both runs' tokens and cost (`--markdown`, `--summary`)."""
    return to_markdown(found) + "\n\n" + token_markdown(pairs, prices)
