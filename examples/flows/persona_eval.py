"""Run the app's persona simulation over the flows fixture and score it against the labels.

    python examples/flows/persona_eval.py --backend stub     # offline, no model
    python examples/flows/persona_eval.py --backend local    # SmolLM2 in-process

It calls `attest.feed.simulate_ratings` (the production flow, not the eval
pipeline) for both personas over the 40 items and prints precision, recall and
ROC-AUC per persona, computed by `evals.reaction_eval.score_verdicts` (the one
definition).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from attest.backends.registry import make_backend
from attest.backends.stub import reaction_answer
from attest.errors import run_main
from attest.feed import Item, Persona, simulate_ratings
from attest.options import OneLineErrorParser, add_backend_options, settings_from_args
from evals.reaction_eval import score_verdicts

CORPUS = Path(__file__).with_name("corpus")


def _load(name: str) -> list[dict[str, Any]]:
    data = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def _row(label: str, metrics: dict[str, Any]) -> str:
    cells = [
        f"{metrics[k]:.3f}" if metrics[k] is not None else "n/a"
        for k in ("precision", "recall", "auc_verdict", "auc_confidence")
    ]
    return f"{label:<14}" + "".join(f"{c:>12}" for c in cells)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="persona_eval.py", description=__doc__.splitlines()[0] if __doc__ else None)
    add_backend_options(parser, default_backend="stub")
    args = parser.parse_args(argv)
    return run_main("persona_eval", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    items = [Item(i["id"], i["title"], i["summary"]) for i in _load("items.json")]
    personas = [Persona(p["id"], p["persona"], p["interests"]) for p in _load("personas.json")]
    labels = {(lab["persona"], lab["item"]): lab["would_read"] for lab in _load("labels.json")}
    settings = settings_from_args(args, default_backend="stub")
    backend = make_backend(dataclasses.replace(settings, stub_answer=reaction_answer))  # what --backend stub answers
    try:
        print(f"{'persona':<14}" + "".join(f"{h:>12}" for h in ("precision", "recall", "auc", "auc(conf)")))
        for persona in personas:
            ratings = simulate_ratings(persona, items, chat_json=backend.chat_json)
            truth = [labels[(persona.id, r.item_id)] for r in ratings]
            metrics = score_verdicts(
                truth, [r.reaction.verdict for r in ratings], [r.reaction.confidence for r in ratings]
            )
            print(_row(persona.id, metrics))
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
