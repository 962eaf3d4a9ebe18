"""The one base class for errors attest reports to a user as a single line."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


class AttestError(Exception):
    """An error with a message fit to show a user: what failed, where, and what to do."""


def run_reporting_errors(prog: str, action: Callable[[], int]) -> int:
    """Run an entry point's work; an AttestError becomes one line on stderr and exit code 1.

    `ATTEST_DEBUG=1` re-raises it instead, with the traceback.
    """
    try:
        return action()
    except AttestError as exc:
        if os.environ.get("ATTEST_DEBUG") == "1":
            raise
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c != 0x0A}


def printable(text: str) -> str:
    """`text` with control characters and terminal escapes shown as `\\xNN`, newlines kept."""
    return text.translate(_CONTROL)
