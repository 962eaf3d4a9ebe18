"""What a run records about its inputs: prompt and scorer fingerprints, the tagging
prompt artifact, the git commit, and the corpus path relative to the project root.

The project root is the checkout this module sits in (evals/ beside a pyproject.toml).
Installed from a wheel there is no checkout: the commit is recorded as unknown (None),
not taken from whatever repository the working directory is in, and corpus paths are
recorded relative to the working directory when inside it, else absolute.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attest
from attest import __version__
from attest.errors import AttestError
from attest.files import read_bounded
from evals.corpus import paths
from evals.store.keys import canonical_json

__all__ = [
    "case_sha256",
    "git_branch",
    "git_state",
    "prompt_fingerprint",
    "scorer_fingerprint",
    "sha256_text",
    "system_prompts",
    "tag_prompt_ref",
    "version",
]


# What every scorer runs besides its own module: the shared helpers and the answer parser.
_SHARED_SCORING = (
    Path(__file__).with_name("scoring.py"),
    Path(__file__).parent.parent / "corpus" / "words.py",
    Path(str(attest.__file__)).with_name("answers.py"),  # by path: importing it costs `compare` its start-up
)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_fingerprint(requests: Sequence[tuple[Sequence[Mapping[str, str]], Mapping[str, Any]]]) -> str:
    """sha256 of the canonical JSON of every rendered request (messages, schema) in plan order.

    It changes exactly when any prompt the run sent changes; the model, options and
    sample count are recorded beside it, not in it.
    """
    return sha256_text(canonical_json([{"messages": list(m), "schema": s} for m, s in requests]))


def case_sha256(case: Any) -> str:
    """sha256 of a case's inputs and expectation (not its note, split or family): two runs pair on it."""
    data = case.model_dump(mode="json", exclude={"note", "split", "family"})
    return sha256_text(canonical_json(data))


def system_prompts(requests: Sequence[Sequence[Mapping[str, str]]]) -> dict[str, str]:
    """The distinct system prompts, by sha256, in first-seen order."""
    found: dict[str, str] = {}
    for messages in requests:
        for message in messages:
            if message.get("role") == "system":
                found.setdefault(sha256_text(message["content"]), message["content"])
    return found


def scorer_fingerprint(score_one: object) -> str:
    """sha256 of the source of the module defining `score_one`, plus the shared scoring helpers and
    `attest.answers` (which parses every answer before it is scored).

    Not covered: the task's output model (in the feature module beside its prompt), whose
    validation also decides what parses; a change there shows in the prompt fingerprint.
    """
    module = inspect.getmodule(score_one)
    files = [Path(module.__file__)] if module is not None and module.__file__ else []
    digest = hashlib.sha256()
    for path in [*files, *_SHARED_SCORING]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def tag_prompt_ref(environ: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """ATTEST_TAG_PROMPT's path (made absolute: a relative one means nothing from another directory)
    and the sha256 of its content, when set."""
    given = environ.get("ATTEST_TAG_PROMPT")
    if not given:
        return None, None
    path = os.path.abspath(given)
    from attest.features import MAX_TAG_PROMPT_BYTES  # here: the app's models cost a command line's start-up

    try:
        return path, hashlib.sha256(read_bounded(path, MAX_TAG_PROMPT_BYTES)).hexdigest()
    except AttestError:
        return path, None  # the renderer reports the unreadable file; this only records it


def git_state(root: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout at `root` (default: this one); (None, None) outside one, without git, or
    installed from a wheel, whatever repository the working directory is in."""
    root = root or paths.CHECKOUT
    if root is None:
        return None, None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head or None, bool(status.strip())


def git_branch(root: Path | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The branch checked out at `root` (default: this one); None when detached, outside a checkout or without git.

    In GitHub Actions (GITHUB_ACTIONS=true) the checkout is detached or a merge ref, so the branch is
    GITHUB_HEAD_REF (a pull request's own branch) or else GITHUB_REF_NAME (the branch pushed to).
    """
    if environ.get("GITHUB_ACTIONS") == "true":
        named = environ.get("GITHUB_HEAD_REF") or environ.get("GITHUB_REF_NAME")
        if named:
            return named
    root = root or paths.CHECKOUT
    if root is None:
        return None
    try:
        name = subprocess.run(
            ["git", "-C", str(root), "symbolic-ref", "--quiet", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return name or None


def version() -> str:
    return __version__
