"""The task registry: one line per task, and `register` for a plug-in.

Every command line looks a task up here by name (`get`, `names`, `all_tasks`);
nothing outside the task modules and this registry names a task. A fourth task
is a module that builds an `evals.engine.task.Task`, its corpus, and either a line
below or one `register(TASK)` call (see CONTRIBUTING.md, "Adding a task").
"""

from __future__ import annotations

from typing import Any

from attest.errors import AttestError
from evals import explanation_eval, reaction_eval, tagging_eval
from evals.engine.task import Task

__all__ = ["UnknownTaskError", "all_tasks", "get", "known", "names", "register", "unregister"]

_TASKS: dict[str, Task[Any]] = {}


class UnknownTaskError(AttestError):
    """A task name that no registered task has."""


def register(task: Task[Any]) -> Task[Any]:
    """Add (or replace) a task under its name; returns it, so a module can write `TASK = register(Task(...))`."""
    _TASKS[task.name] = task
    return task


def unregister(name: str) -> None:
    """Remove a registered task (a test's plug-in, when the test ends)."""
    _TASKS.pop(name, None)


def get(name: str) -> Task[Any]:
    """The task registered as `name`; an unknown name is an error naming the known tasks."""
    try:
        return _TASKS[name]
    except KeyError:
        raise UnknownTaskError(f"unknown task {name!r}: {known()}") from None


def known() -> str:
    """The registered task names in a sentence, for an error message."""
    return f"the known tasks are {', '.join(names())}" if _TASKS else "no task is registered"


def names() -> tuple[str, ...]:
    """The registered task names, in registration order."""
    return tuple(_TASKS)


def all_tasks() -> tuple[Task[Any], ...]:
    return tuple(_TASKS.values())


register(tagging_eval.TASK)
register(reaction_eval.TASK)
register(explanation_eval.TASK)
