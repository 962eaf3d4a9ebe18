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
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.errors import AttestError
from attest.feed import Item, Persona, simulate_ratings
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", default="stub", help="stub (default), local, ollama, openai or auto")
    parser.add_argument("--model", help="model name for the backend")
    args = parser.parse_args(argv)
    items = [Item(i["id"], i["title"], i["summary"]) for i in _load("items.json")]
    personas = [Persona(p["id"], p["persona"], p["interests"]) for p in _load("personas.json")]
    labels = {(lab["persona"], lab["item"]): lab["would_read"] for lab in _load("labels.json")}
    try:
        chat = make_backend(Settings.resolve(backend=args.backend, model=args.model)).chat_json
        print(f"{'persona':<14}" + "".join(f"{h:>12}" for h in ("precision", "recall", "auc", "auc(conf)")))
        for persona in personas:
            ratings = simulate_ratings(persona, items, chat_json=chat)
            truth = [labels[(persona.id, r.item_id)] for r in ratings]
            metrics = score_verdicts(
                truth, [r.reaction.verdict for r in ratings], [r.reaction.confidence for r in ratings]
            )
            print(_row(persona.id, metrics))
    except AttestError as exc:
        print(f"persona_eval: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
