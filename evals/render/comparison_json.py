"""A comparison as plain JSON-serialisable data, every case listed.

Every string from a server, a manifest or an answer is escaped as the text output
escapes it (`attest.text.printable`, newlines kept): no control or bidi character
reaches a terminal or a log through the JSON either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attest.text import printable
from evals.analysis.comparison import EXIT_CODES, CaseChange, Comparison
from evals.analysis.stats import Estimate

__all__ = ["to_json"]


def _plain(value: object) -> Any:
    """A JSON-serialisable copy: non-finite floats become None, unknown objects their str(), strings printable."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return printable(value, multiline=True)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {printable(str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return printable(str(value), multiline=True)


def _estimate_json(e: Estimate) -> dict[str, Any]:
    return {"mean": e.mean, "low": e.interval.low, "high": e.interval.high, "level": e.interval.level, "n": e.n}


def _change_json(c: CaseChange) -> dict[str, Any]:
    return {
        "id": c.case_id, "family": c.family, "baseline": c.base, "candidate": c.cand, "delta": c.delta,
        "baseline_answer": c.base_answer, "candidate_answer": c.cand_answer,
    }  # fmt: skip


def to_json(x: Comparison) -> dict[str, Any]:
    """The comparison as plain JSON-serialisable data, every case listed."""
    p, d = x.paired, x.detectable
    plain: dict[str, Any] = _plain(
        {
            "task": x.task,
            "baseline": {"run": x.base_run, **_estimate_json(x.base)},
            "candidate": {"run": x.cand_run, **_estimate_json(x.cand)},
            "difference": _estimate_json(p.difference),
            "p_value": p.p_value,
            "p_ship": p.p_ship(x.margin),
            "p_regress": p.p_regress(),
            "test": p.test,
            "margin": x.margin,
            "verdict": x.verdict,
            "measured_verdict": x.measured,
            "withheld": x.withheld or None,
            "confounded": list(x.confounded),
            "exit_code": EXIT_CODES[x.verdict],
            "holm": None if x.holm_p is None else {"adjusted_p": x.holm_p, "comparisons": x.family_size},
            "tail": {
                "large_losses": p.tail.losses,
                "large_gains": p.tail.gains,
                "p": p.tail.p,
                "alpha": p.tail.alpha,
                "excess": p.tail.excess,
                "test": "exact one-sided binomial: large losses against large gains (each >= half the scale)",
            },
            "made_equal": list(x.notes),
            "floor": [
                None if f is None else {"mean": f.mean, "answer": f.answer, "beaten": f.beaten} for f in x.floors
            ],
            "counts": {"improved": p.improved, "regressed": p.regressed, "unchanged": p.unchanged},
            "regressed": [_change_json(c) for c in x.regressed],
            "improved": [_change_json(c) for c in x.improved],
            "unchanged": list(x.unchanged),
            "families": [{"family": r.family, **_estimate_json(r.difference)} for r in x.families],
            "detectable": {
                "effect": d.effect,
                "power": d.power,
                "n": d.n,
                "spread": d.spread,
                "spread_name": d.spread_name,
            },
            "what_changed": [{"key": c.key, "baseline": c.base, "candidate": c.cand} for c in x.what_changed],
            "prompt_diff": list(x.prompt_diff),
            "only_baseline": list(x.only_base),
            "only_candidate": list(x.only_cand),
        }
    )
    return plain
