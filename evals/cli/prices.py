"""`--prices FILE` / ATTEST_PRICES: a TOML price list, one table per model name, price per million tokens:

    ["gpt-4o-mini"]
    input = 0.15
    output = 0.60

A file that cannot be read or holds anything else is one line naming the file, the model and the field.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

from attest.errors import AttestError
from evals.analysis.tokens import Price, PriceList

__all__ = ["PRICES_HELP", "PricesError", "load_prices"]

PRICES_HELP = "a TOML price list (model -> input, output per million tokens) for a cost line (env ATTEST_PRICES)"
_MAX_BYTES = 1 << 20


class PricesError(AttestError):
    """A price list that cannot be read or used."""


def load_prices(arg: str | None, environ: Mapping[str, str] = os.environ) -> PriceList | None:
    """The price list --prices or ATTEST_PRICES names, or None when neither is given."""
    given = arg or environ.get("ATTEST_PRICES")
    if not given:
        return None
    import tomllib  # here: only a command given a price list reads TOML

    path = Path(given)
    try:
        data = path.read_bytes()[:_MAX_BYTES].decode("utf-8")
        parsed = tomllib.loads(data)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PricesError(f"{path}: cannot read the price list ({exc}); give a TOML file of model tables") from None
    return PriceList(str(path), {model: _price(path, model, table) for model, table in parsed.items()})


def _price(path: Path, model: str, table: object) -> Price:
    if not isinstance(table, dict) or set(table) != {"input", "output"}:
        raise PricesError(f'{path}: model {model!r}: give exactly `input = N` and `output = N` under ["{model}"]')
    for field in ("input", "output"):
        value = table[field]
        if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value >= 0):
            raise PricesError(f"{path}: model {model!r}: field {field!r} must be a price per million tokens, 0 or more")
    return Price(float(table["input"]), float(table["output"]))
