"""Lease holders: a random token per open cache, alive exactly as long as its process holds an OS lock.

A run that takes a lease in the cache writes its holder token (32 random hex digits,
never a pid: two evals in two containers are both pid 1) into the lease row, and
holds an exclusive `flock` on `<cache>/holders/<token>.lock` for as long as its cache
is open. The kernel drops the lock when the process ends, however it ends (SIGKILL
too), so another run tells a dead holder from a live one by trying to take a shared
lock on that file: if it can, or the file is missing, nobody holds the lease. The file
also says which pid and host the holder is, for a person waiting on it; that is
shown, never used to decide.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from contextlib import suppress
from pathlib import Path

__all__ = ["TOKEN", "Holder", "alive", "describe"]

TOKEN = re.compile(r"[0-9a-f]{32}")
_SWEEP = 64  # dead holders' files tidied per open, at most
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC


def _path(directory: Path, token: str) -> Path:
    return directory / f"{token}.lock"


class Holder:
    """This process's holder token and the lock that keeps it alive; the file is made on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.token = os.urandom(16).hex()  # what secrets.token_hex does, without importing hmac
        self._fd: int | None = None
        self._lock = threading.Lock()

    def acquire(self) -> str:
        """The token, with its lock file created and locked (once); OSError if the directory will not have it."""
        with self._lock:
            if self._fd is None:
                self._fd = _create_locked(self.directory, self.token)
                _sweep(self.directory)
        return self.token

    def release(self) -> None:
        """Give the token up: its file goes, and a lease still naming it is dead to every other run."""
        with self._lock:
            if self._fd is not None:
                with suppress(OSError):
                    _path(self.directory, self.token).unlink()
                os.close(self._fd)
                self._fd = None


def _create_locked(directory: Path, token: str) -> int:
    """Create the lock file under a temporary name, lock it, then rename it into place.

    The rename makes the visible name point at a locked file from its first instant, so
    a run sweeping dead holders can never take it for one.
    """
    directory.mkdir(exist_ok=True)
    if directory.is_symlink() or not directory.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    tmp = directory / f".{token}.tmp"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": os.uname().nodename}).encode("utf-8"))
        os.replace(tmp, _path(directory, token))
    except BaseException:
        os.close(fd)
        with suppress(OSError):
            tmp.unlink()
        raise
    return fd


def alive(directory: Path, token: str) -> bool:
    """Whether a live process holds `token`'s lock; a dead holder's file is removed on the way."""
    if not TOKEN.fullmatch(token):
        return False
    path = _path(directory, token)
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN)
    except OSError:  # missing, or not a plain file (a planted symlink): nobody holds it
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        with suppress(OSError):
            path.unlink()
        return False
    finally:
        os.close(fd)


def _sweep(directory: Path) -> None:
    """Remove the files of a few holders that died without releasing (SIGKILL, power loss)."""
    with suppress(OSError):
        for n, path in enumerate(directory.glob("*.lock")):
            if n >= _SWEEP:
                return
            alive(directory, path.stem)


def describe(directory: Path, token: str) -> str:
    """`holder 0123abcd (pid 42 on host h)`: what a person needs to find the process; never trusted."""
    info: object = None
    with suppress(OSError, ValueError):
        fd = os.open(_path(directory, token), os.O_RDONLY | _OPEN)
        try:
            info = json.loads(os.read(fd, 512))
        finally:
            os.close(fd)
    shown = f"holder {token[:8]}"
    if not isinstance(info, dict):
        return shown
    pid, host = info.get("pid"), info.get("host")
    if isinstance(pid, int) and not isinstance(pid, bool) and isinstance(host, str):
        return f"{shown} (pid {pid} on host {re.sub(r'[^A-Za-z0-9._-]', '?', host[:64])})"
    return shown
