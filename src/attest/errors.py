"""The one error boundary: `AttestError` for what a user can fix, `run_main` for every entry point.

Library code raises an `AttestError` subclass whose message says what failed, where,
and what to do. An entry point wraps its work in `run_main(prog, work)`:

- an `AttestError` becomes one line on stderr, `PROG: error: MESSAGE`, exit 1;
- any other exception is a bug: one line naming its type and where it was raised,
  with the path of a file the full traceback was written to, exit 1;
- `ATTEST_DEBUG=1` re-raises either, so Python prints the traceback.

Every message is passed through `printable`, so nothing a server, model or file put
in it can drive the terminal. Output piped into a reader that stops early (`| head`)
ends quietly with exit 1, no message. KeyboardInterrupt is not caught here: an entry point
that has something to say on Ctrl-C catches it itself.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from attest.text import printable

__all__ = ["AttestError", "ConfigError", "report_bug", "run_main", "run_reporting_errors"]


class AttestError(Exception):
    """An error with a message fit to show a user: what failed, where, and what to do."""


class ConfigError(AttestError, ValueError):
    """A setting (argument, environment variable, or value passed in code) that cannot be used."""


def run_main(prog: str, work: Callable[[], int], *, stderr: TextIO | None = None) -> int:
    """Run an entry point's `work` and return its exit code; errors become one line and exit code 1."""
    err = stderr or sys.stderr
    try:
        code = work()
        sys.stdout.flush()  # here, so a reader that went away (`| head`) is met inside the boundary
        return code
    except BrokenPipeError:
        _silence_stdout()  # the reader stopped reading: end quietly, as `cat | head` does
        return 1
    except AttestError as exc:
        if _debug():
            raise
        print(f"{prog}: error: {printable(str(exc))}", file=err)
        return 1
    except Exception as exc:
        if _debug():
            raise
        print(report_bug(prog, exc), file=err)
        return 1


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a file descriptor (a test's capture): nothing will flush to the pipe


# The name entry points have used so far; the same boundary.
run_reporting_errors = run_main


def report_bug(prog: str, exc: BaseException) -> str:
    """The one line for an unexpected exception, after writing its traceback to a temp file.

    The line names the exception's type and the innermost frame, not its message,
    which may hold anything (a header value, a path, a key); the file has it all.
    """
    where = _innermost(exc)
    saved = _save_traceback(prog, exc)
    shown = f"the traceback is in {saved}" if saved else "the traceback could not be saved"
    return printable(
        f"{prog}: internal error: {type(exc).__name__} at {where}; this is a bug: {shown} "
        "(rerun with ATTEST_DEBUG=1 to print it)"
    )


def _debug() -> bool:
    return os.environ.get("ATTEST_DEBUG") == "1"


def _innermost(exc: BaseException) -> str:
    import traceback  # here, as in _save_traceback: only a crash needs it, and every command imports this module

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "(no frame)"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno} in {last.name}"


def _save_traceback(prog: str, exc: BaseException) -> str | None:
    import tempfile
    import traceback

    slug = re.sub(r"[^A-Za-z0-9]+", "-", prog).strip("-") or "attest"
    try:
        fd, path = tempfile.mkstemp(prefix=f"{slug}-traceback-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(traceback.format_exception(exc)))
    except OSError:
        return None
    return path
