"""`dspy_fields()` and `to_dspy_example(case)` of every task, as the design note requires of every eval module.

Each task names its input and output fields; every case of its corpus becomes a DSPy
example with exactly those fields (plus the case itself, for a metric), whose inputs
are the input fields and whose labels are the outputs.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from evals import tasks
from evals.engine.pipeline import load_cases

dspy = pytest.importorskip("dspy", reason="dspy is not installed: the `optimize` extra")

NAMES = tasks.names()


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


@pytest.mark.parametrize("name", NAMES)
def test_the_eval_module_exposes_the_tasks_dspy_fields(name: str) -> None:
    task = tasks.get(name)
    module = importlib.import_module(f"evals.{name}_eval")
    assert module.dspy_fields() == task.dspy_fields
    assert module.to_dspy_example is task.to_dspy_example


@pytest.mark.parametrize("name", NAMES)
def test_fields_are_case_fields_inputs_and_outputs_apart(name: str) -> None:
    inputs, outputs = tasks.get(name).dspy_fields
    fields = set(tasks.get(name).case_model.model_fields)
    assert inputs and outputs and not set(inputs) & set(outputs)
    assert set(inputs) | set(outputs) <= fields
    assert not {"id", "split", "family", "note"} & (set(inputs) | set(outputs))  # bookkeeping is never a field


@pytest.mark.parametrize("name", NAMES)
def test_every_case_becomes_an_example_with_its_inputs_and_labels(name: str) -> None:
    task = tasks.get(name)
    inputs, outputs = task.dspy_fields
    assert task.to_dspy_example is not None
    cases = load_cases(task)
    assert cases
    for case in cases:
        found = task.to_dspy_example(case)
        assert set(found) == {*inputs, *outputs, "case"} and found["case"] is case
        assert all(_plain(found[f]) == _plain(getattr(case, f)) for f in (*inputs, *outputs))
    example = dspy.Example(**task.to_dspy_example(cases[0])).with_inputs(*inputs)
    assert set(example.inputs().keys()) == set(inputs)
    assert set(outputs) <= set(example.labels().keys())
