"""Where a run's recorded paths point: the checkout (or, installed, the working directory).

Kept apart from `evals.engine.provenance` (which hashes prompts, scorers and git state) so
that a command that only reads a recorded corpus path back, such as `compare`, imports
nothing else.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHECKOUT", "PROJECT_ROOT", "corpus_ref", "project_root", "resolve_corpus"]

_HERE = Path(__file__).resolve().parents[2]
CHECKOUT: Path | None = _HERE if (_HERE / "pyproject.toml").is_file() and (_HERE / "evals").is_dir() else None
PROJECT_ROOT = CHECKOUT  # None when installed: see project_root()


def project_root() -> Path:
    """The checkout, or (installed) the working directory: what recorded relative paths are relative to."""
    return CHECKOUT if CHECKOUT is not None else Path.cwd()


def corpus_ref(path: Path, root: Path | None = None) -> str:
    """The corpus path as recorded: relative to the project root (`project_root()`) when it lies inside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to((root or project_root()).resolve()).as_posix()
    except ValueError:
        return str(resolved)


def resolve_corpus(recorded: str, root: Path | None = None) -> Path:
    """A recorded corpus path read back against the current checkout (`project_root()`)."""
    path = Path(recorded)
    return path if path.is_absolute() else (root or project_root()) / path
