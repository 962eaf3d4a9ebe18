"""The task registry: the three built-in tasks, every task a package names under the entry-point
group `attest.tasks`, and `register` for a test's task.

Every command line looks a task up here by name (`get`, `names`, `all_tasks`); nothing
outside the task modules and this registry names a task. A plug-in package adds a task
with no change here: in its pyproject.toml,

    [project.entry-points."attest.tasks"]
    NAME = "package.module:TASK"

where TASK is an `evals.engine.task.Task` named NAME (see CONTRIBUTING.md, "Adding a task").
Entry points are read on the first look-up, so a command that names no task loads none.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from attest.errors import AttestError
from evals import explanation_eval, reaction_eval, tagging_eval
from evals.engine.task import Task

__all__ = [
    "GROUP",
    "PluginError",
    "UnknownTaskError",
    "all_tasks",
    "get",
    "known",
    "names",
    "register",
    "unregister",
]

GROUP = "attest.tasks"
_TASKS: dict[str, Task[Any]] = {}
_BUILT_IN = ("tagging", "reaction", "explanation")
_discovered = False


class UnknownTaskError(AttestError):
    """A task name that no registered task has."""


class PluginError(AttestError):
    """A package's `attest.tasks` entry point cannot be loaded, or is not a task named as it says."""


def register(task: Task[Any]) -> Task[Any]:
    """Add (or replace) a task under its name; returns it, so a module can write `TASK = register(Task(...))`."""
    _TASKS[task.name] = task
    return task


def unregister(name: str) -> None:
    """Remove a registered task (a test's plug-in, when the test ends)."""
    _TASKS.pop(name, None)


def get(name: str) -> Task[Any]:
    """The task registered as `name`; an unknown name is an error naming the known tasks."""
    _discover()
    try:
        return _TASKS[name]
    except KeyError:
        raise UnknownTaskError(f"unknown task {name!r}: {known()}") from None


def known() -> str:
    """The registered task names in a sentence, for an error message."""
    return f"the known tasks are {', '.join(names())}" if names() else "no task is registered"


def names() -> tuple[str, ...]:
    """The registered task names: the built-in three, then the plug-ins' in the order they were found."""
    _discover()
    return tuple(_TASKS)


def all_tasks() -> tuple[Task[Any], ...]:
    _discover()
    return tuple(_TASKS.values())


def _discover() -> None:
    """Load every `attest.tasks` entry point once."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        register(_load(point))


def _load(point: EntryPoint) -> Task[Any]:
    """The task an entry point names, checked; a broken one is one line naming it and its package."""
    package = point.dist.name if point.dist is not None else "its package"
    todo = f"fix or uninstall {package} (pip uninstall {package})"
    try:
        task = point.load()
    except Exception as exc:  # a plug-in's import error is its own: say which one, never "internal error"
        raise PluginError(f"task plug-in {point.name} = {point.value!r} cannot be loaded ({exc!r}): {todo}") from None
    if not isinstance(task, Task):
        raise PluginError(f"task plug-in {point.name} = {point.value!r} is not an evals.engine.task.Task: {todo}")
    if task.name != point.name:
        raise PluginError(f"task plug-in {point.name} = {point.value!r} builds a task named {task.name!r}: {todo}")
    if task.name in _BUILT_IN:
        raise PluginError(f"task plug-in {point.value!r} is named {task.name!r}, a built-in task: {todo}")
    return task


register(tagging_eval.TASK)
register(reaction_eval.TASK)
register(explanation_eval.TASK)
