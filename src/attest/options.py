"""The command-line options every entry point shares for choosing and tuning a backend.

`add_backend_options` adds `--backend` (choices from the registry), `--model`,
`--retries` and `--timeout`, each with help text and a type that refuses nonsense
(a timeout that is not a positive finite number of seconds, fewer than one attempt)
before any work starts. `settings_from_args` turns them into `Settings`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:  # the backends are imported when used: `compare` and `runs` never need them
    from attest.backends.settings import Settings

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "OneLineErrorParser",
    "add_backend_options",
    "add_transport_options",
    "at_least",
    "attempts",
    "positive_seconds",
    "settings_from_args",
]

DEFAULT_RETRIES = 3
DEFAULT_TIMEOUT_S = 120.0


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds greater than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive, finite number of seconds")
    return value


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number, `minimum` or more (`--repeat`, `--worst`, `--show`, ...)."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: give {minimum} or more")
        return value

    return whole_number


def attempts(text: str) -> int:
    """An argparse type: a whole number of attempts, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 1 attempt")
    return value


def _kinds() -> tuple[str, ...]:
    from attest.backends.registry import KINDS

    return tuple(KINDS)


def add_backend_options(parser: argparse.ArgumentParser, *, default_backend: str = "ollama") -> None:
    """The options every entry point shares for choosing and tuning a backend."""
    parser.add_argument(
        "--backend",
        choices=_kinds(),
        help=f"model backend (env ATTEST_BACKEND; default {default_backend})",
    )
    parser.add_argument("--model", help="model name (env ATTEST_MODEL; Ollama default gemma4:e2b)")
    add_transport_options(parser)


def add_transport_options(parser: argparse.ArgumentParser) -> None:
    """--retries and --timeout: how hard to try one request (every entry point that calls a model has them)."""
    parser.add_argument(
        "--retries",
        type=attempts,
        default=DEFAULT_RETRIES,
        help=f"attempts per request on transport faults, at least 1 (default {DEFAULT_RETRIES})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds to wait for one whole answer, more than 0 (default {DEFAULT_TIMEOUT_S:g})",
    )


def settings_from_args(
    args: argparse.Namespace, *, default_backend: str = "ollama", backend: str | None = None
) -> Settings:
    """`Settings` from the shared options (`backend`, if given, overrides `--backend`), then the environment."""
    from attest.backends.retry import RetryPolicy
    from attest.backends.settings import Settings

    retry = RetryPolicy(attempts=args.retries, timeout_s=args.timeout)
    kind = backend or args.backend
    return Settings.resolve(backend=kind, model=args.model, default_backend=default_backend, retry=retry)


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (`PROG: error: ...; see PROG --help`), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
