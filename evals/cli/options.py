"""Option types the harness's command lines share (the app's own are in attest.options)."""

from __future__ import annotations

import argparse
import math

__all__ = ["label_type", "margin_type"]


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
