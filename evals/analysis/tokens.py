"""Tokens and cost of a run, from the tokens its answers' servers reported (`usage`, or Ollama's
`prompt_eval_count` / `eval_count`), summed at generation into the report's `generate.tokens`.

A price list maps a model name to its price per million input and output tokens (see
evals/cli/prices.py for the file). The stub and local backends bill nothing, and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["FREE", "Price", "PriceList", "cost_text", "spent_and_saved", "tokens_text"]

FREE = {"stub": "the stub backend calls no model", "local": "the local backend runs on this machine"}


@dataclass(frozen=True)
class Price:
    """Price per million tokens, in whatever currency the price list is in."""

    input: float
    output: float


@dataclass(frozen=True)
class PriceList:
    where: str  # the file it came from
    models: Mapping[str, Price]


def tokens_text(tokens: Mapping[str, int] | None, samples: int) -> str:
    """`in N, out M`, what the cache saved, and how many answers reported no tokens."""
    if not tokens:
        return "not recorded (a run made before tokens were counted)"
    if tokens.get("unreported", 0) >= samples > 0:
        return "none reported by the model server"
    text = f"in {tokens['in']:,}, out {tokens['out']:,}"
    if tokens.get("saved_in") or tokens.get("saved_out"):
        text += f"; the cache saved in {tokens['saved_in']:,}, out {tokens['saved_out']:,}"
    if tokens.get("unreported"):
        text += f" ({tokens['unreported']} answers reported none)"
    return text


def spent_and_saved(tokens: Mapping[str, int], price: Price) -> tuple[float, float]:
    """What the tokens asked of the server this time cost, and what the cache's answers would have."""
    spent_in, spent_out = tokens["in"] - tokens["saved_in"], tokens["out"] - tokens["saved_out"]
    spent = (spent_in * price.input + spent_out * price.output) / 1e6
    saved = (tokens["saved_in"] * price.input + tokens["saved_out"] * price.output) / 1e6
    return spent, saved


def cost_text(backend: str, model: str, tokens: Mapping[str, int] | None, prices: PriceList | None) -> str | None:
    """The cost line's text: free for stub and local, else from the price list; None without one."""
    if backend in FREE:
        return f"free: {FREE[backend]}"
    if prices is None:
        return None
    price = prices.models.get(model)
    if price is None:
        return f"unknown: {prices.where} has no price for model {model!r}"
    if not tokens:
        return "unknown: the run recorded no tokens"
    spent, saved = spent_and_saved(tokens, price)
    return f"{spent:.4f} spent, {saved:.4f} saved by the cache (prices per million tokens from {prices.where})"
