"""The one bounded reader: every file whose path came from a record, a setting or an option is read here.

A path from outside may name anything: a FIFO (an open for reading waits for a writer
forever), a device (`/dev/zero` never ends), a directory, or a file far larger than what
it claims to be. `open_regular` opens without blocking (O_NONBLOCK) and checks what was
opened with fstat, so what is checked is what is read; `read_bounded` then reads at most
`limit` bytes. Either refuses in one line naming the path and what to do.

`user_cache_dir` is where attest keeps what it remembers for this user across runs
(file digests, drawn plots): `$XDG_CACHE_HOME/attest`, else `~/.cache/attest`.

A leaf module (standard library and attest.errors only), so the app and the harness share it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attest.errors import AttestError

__all__ = ["FileReadError", "MiB", "open_regular", "read_bounded", "read_text_bounded", "user_cache_dir"]

MiB = 1 << 20
_DEFAULT_LIMIT = 64 * MiB
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
)


class FileReadError(AttestError):
    """A file named from outside cannot be read: not a regular file, too big, unreadable, not UTF-8."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | Path, flags: int = os.O_RDONLY, mode: int = 0o600, *, todo: str = "") -> int:
    """An fd on `path`, opened without blocking and checked (fstat) to be a regular file.

    `flags` may add O_CREAT, O_RDWR, O_NOFOLLOW...; O_NONBLOCK is always added (it changes
    nothing for a regular file, and a FIFO opens at once instead of waiting for a writer).
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc.strerror or exc})", todo) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise _error(path, f"cannot stat it ({exc.strerror or exc})", todo) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _error(path, f"is {_kind(st.st_mode)}, not a regular file", todo)
    return fd


def read_bounded(path: str | Path, limit: int = _DEFAULT_LIMIT, *, todo: str = "") -> bytes:
    """The bytes of the regular file `path`, refusing one over `limit` bytes (checked before and while reading)."""
    fd = open_regular(path, todo=todo)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise _too_big(path, size, limit, todo)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc.strerror or exc})", todo) from None
    finally:
        os.close(fd)
    if total > limit:  # it grew while being read
        raise _too_big(path, total, limit, todo)
    return b"".join(chunks)


def read_text_bounded(path: str | Path, limit: int = _DEFAULT_LIMIT, *, todo: str = "") -> str:
    """`read_bounded` decoded as UTF-8, refusing other bytes in one line."""
    data = read_bounded(path, limit, todo=todo)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error(path, f"is not UTF-8 text (byte {exc.start})", todo) from None


def _too_big(path: str | Path, size: int, limit: int, todo: str) -> FileReadError:
    return _error(path, f"is {size} bytes, over the {limit}-byte cap", todo)


def _error(path: str | Path, what: str, todo: str) -> FileReadError:
    return FileReadError(f"{path}: {what}" + (f"; {todo}" if todo else "; check the path"))


def user_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/attest`, else `~/.cache/attest`: what attest remembers for this user across runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attest"
