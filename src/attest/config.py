"""One validation step per setting, at the entry point that resolves it.

`checked(setting, valid, parse)` runs everything the program will later do with a
setting's value (parse it, build the request, encode the host) and turns whatever
that raises into one `ConfigError` line naming the setting and what a valid value
looks like. The line never repeats the value or the exception's message, either of
which may hold a password: only the type of what refused it. `whole_number` reads
the numeric settings (ASCII digits only, so `²` or a 5,000-digit string is refused
in one line, not by `int`).

A leaf module (standard library and attest.errors only).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from attest.errors import AttestError, ConfigError

__all__ = ["checked", "refusal", "shown_value", "whole_number"]

T = TypeVar("T")
_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII only: str.isdigit() also accepts '²', which int() refuses
_SPACE = " \t\r\n"  # what a shell or a CRLF .env file leaves around a value
_SHOWN = 40  # characters of a (secret-free) bad value a message repeats


def checked(setting: str, valid: str, parse: Callable[[], T]) -> T:
    """`parse()`, or one ConfigError naming `setting` and `valid` for anything it raises.

    An AttestError from `parse` is already one line and passes through unchanged.
    """
    try:
        return parse()
    except AttestError:
        raise
    except Exception as exc:  # the one step where any parser's exception is a bad setting, not a bug
        raise ConfigError(f"{setting} cannot be used ({refusal(exc)}): {valid}") from None


def refusal(exc: BaseException) -> str:
    """Which library refused a value and how, without its message (which may repeat the value)."""
    kind = type(exc)
    library = kind.__module__.partition(".")[0]
    if isinstance(exc, UnicodeEncodeError | UnicodeDecodeError):
        return f"it holds a character that cannot be encoded as {exc.encoding}"
    if isinstance(exc, OSError) and exc.strerror:  # the system's words, not the path it was given
        return exc.strerror
    if kind is UnicodeError:  # the standard IDNA codec's refusal, as the resolver would meet it
        return "a host name label that is empty or over 63 characters"
    return f"{kind.__name__}" if library == "builtins" else f"{library} refused it: {kind.__name__}"


def shown_value(text: str) -> str:
    """A bad value as a message repeats it: repr, cut to a few dozen characters. Only for values without secrets."""
    return repr(text) if len(text) <= _SHOWN else repr(text[:_SHOWN]) + f"... ({len(text)} characters)"


def whole_number(
    setting: str,
    text: str | None,
    default: int,
    *,
    maximum: int | None = None,
    error: type[AttestError] = ConfigError,
) -> int:
    """A whole number from 1 to `maximum` (ASCII digits, spaces around allowed), `default` when unset."""
    if text is None:
        return default
    digits = text.strip(_SPACE)
    value = int(digits) if _DIGITS.fullmatch(digits) else 0
    if value < 1 or (maximum is not None and value > maximum):
        span = f"from 1 to {maximum}" if maximum is not None else "of 1 or more"
        raise error(
            f"{setting}={shown_value(text)} is not a whole number {span}: e.g. {setting}={default}, or unset it"
        )
    return value
