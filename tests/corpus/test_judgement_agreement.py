"""The judgement corpus's second reading: the kappa CONTRIBUTING.md reports is the kappa of the two files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "explanation_judgements.json"
SECOND = ROOT / "docs" / "agreement" / "explanation_judgements_second_reader.json"


def _kappa(first: np.ndarray, second: np.ndarray) -> float:
    """Cohen's kappa of two boolean gradings of the same entries."""
    observed = float((first == second).mean())
    p, q = float(first.mean()), float(second.mean())
    chance = p * q + (1 - p) * (1 - q)
    return (observed - chance) / (1 - chance)


def _gradings() -> tuple[np.ndarray, np.ndarray]:
    first = {e["id"]: e["grade"] for e in json.loads(CORPUS.read_text(encoding="utf-8"))}
    second = {k: v["grade"] for k, v in json.loads(SECOND.read_text(encoding="utf-8")).items()}
    assert set(first) == set(second), f"ids read once only: {sorted(set(first) ^ set(second))}"
    ids = sorted(first)
    return np.array([first[i] == "pass" for i in ids]), np.array([second[i] == "pass" for i in ids])


def test_the_kappa_in_contributing_is_the_kappa_of_the_two_readings() -> None:
    first, second = _gradings()
    row = re.search(
        r"^\| judgements \(`grade`\) \| (\d+) .*? \| (\d+) / (\d+) \| ([\d.]+) \[",
        (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"),
        re.M,
    )
    assert row, "CONTRIBUTING.md has no judgements row in its agreement table"
    entries, agree, of, kappa = int(row[1]), int(row[2]), int(row[3]), float(row[4])
    assert (entries, of) == (len(first), len(first))
    assert agree == int((first == second).sum())
    assert kappa == round(_kappa(first, second), 2)


def test_kappa_is_one_for_identical_readings_and_zero_for_a_reader_who_always_passes() -> None:
    first, _ = _gradings()
    assert _kappa(first, first) == 1.0
    assert _kappa(first, np.ones_like(first)) == 0.0
