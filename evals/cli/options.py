"""Option types the harness's command lines share (the app's own are in attest.options)."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from attest.config import shown_value
from attest.errors import ConfigError

if TYPE_CHECKING:
    from attest.backends.settings import Settings

__all__ = ["add_judge_options", "judge_settings", "label_type", "margin_type", "temperature_type"]

_JUDGE_MODEL = "--judge-model/ATTEST_JUDGE_MODEL"


def margin_type(text: str) -> float:
    """An argparse type: a margin fixed before looking, a gain in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise argparse.ArgumentTypeError(f"{text!r}: the margin is a gain in [0, 1) fixed before looking")
    return value


def label_type(text: str) -> str:
    """An argparse type: a run's label, one printable line of at most 200 characters."""
    if len(text) > 200 or not text.isprintable():
        raise argparse.ArgumentTypeError(f"{text[:40]!r}...: a label is one printable line of at most 200 characters")
    return text


def temperature_type(text: str) -> float:
    """An argparse type: a sampling temperature from 0 to 2."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value <= 2.0):
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 2, not {text}")
    return value


JUDGE_HELP = (
    "judge every answer with this backend too (env ATTEST_JUDGE_BACKEND; default: no judge); "
    "the report gains a `judged` line beside the rule score"
)


def add_judge_options(parser: argparse.ArgumentParser, *, what: str = JUDGE_HELP) -> None:
    """--judge-backend and --judge-model (env ATTEST_JUDGE_BACKEND, ATTEST_JUDGE_MODEL): the judge stage's model."""
    from attest.backends.registry import KINDS

    parser.add_argument("--judge-backend", choices=tuple(KINDS), help=what)
    parser.add_argument("--judge-model", help="the judge's model name (env ATTEST_JUDGE_MODEL)")


def judge_settings(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings | None:
    """The judge's backend settings from --judge-backend / --judge-model or the environment; None: no judge."""
    from attest.backends.registry import KINDS
    from attest.backends.retry import RetryPolicy
    from attest.backends.settings import Settings

    env = os.environ if environ is None else environ
    kind = getattr(args, "judge_backend", None) or env.get("ATTEST_JUDGE_BACKEND", "").strip()
    if not kind:
        return None
    if kind not in KINDS:  # --judge-backend has argparse's choices; the variable is checked here
        known = ", ".join(KINDS)
        raise ConfigError(f"ATTEST_JUDGE_BACKEND={shown_value(kind)} is not a backend: choose one of {known}")
    model = getattr(args, "judge_model", None) or env.get("ATTEST_JUDGE_MODEL", "")
    retry = RetryPolicy(attempts=args.retries, timeout_s=args.timeout) if hasattr(args, "retries") else None
    # ATTEST_MODEL names the answering model, never the judge: the judge's model is its own or its backend's default
    env = {**env, "ATTEST_MODEL": ""}
    return Settings.resolve(backend=kind, model=model, env=env, retry=retry, model_setting=_JUDGE_MODEL)
