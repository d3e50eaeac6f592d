"""The broker's own lock: an exclusive fcntl record lock on byte 0 of {store}/lock (FileChannel.tryLock(0, 1,
false) on Linux). Writing commands hold it for their whole run so neither a broker nor another rmqctl can
start underneath them."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import os
import struct
import time
from pathlib import Path

from .errors import LockHeldError


# the locks this process holds (real path -> descriptor): closing any descriptor of a locked file drops every
# fcntl lock the process has on it, so lock_holder must never open and close such a file
_HELD: dict[str, int] = {}


def lock_holder(path: Path) -> int | None:
    """The pid of another process holding the lock on byte 0 of `path`, or None; F_GETLK takes nothing (and a
    lock this process holds itself does not count)."""
    if os.path.realpath(path) in _HELD:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        l_type, _, _, _, pid = struct.unpack("hhqqi4x", answer)
        return pid if l_type != fcntl.F_UNLCK else None
    finally:
        os.close(fd)


def held_by_rmqctl(pid: int) -> bool:
    """Whether lock holder `pid` is an rmqctl (its console script, or `python -m rmqctl`) rather than a broker,
    from /proc/<pid>/cmdline. False where that cannot be read (a pid from another pid namespace, reported as
    0): such a holder is taken for a broker, whose store may move under a read."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if pid else []
    except OSError:
        return False
    scripts = [os.path.basename(a) for a in argv[:2]]
    modules = [b.split(b".")[0] for a, b in zip(argv, argv[1:]) if a == b"-m"]
    return b"rmqctl" in scripts or b"rmqctl" in modules


# how long a writer waits for a held lock (seconds, as `flock -w`): set for a command's run by waiting_for_lock
_LOCK_WAIT = contextvars.ContextVar("lock_wait", default=0.0)
WAIT_STEP = 0.1  # seconds between two tries while waiting


@contextlib.contextmanager
def waiting_for_lock(seconds: float):
    """Within the block, store_lock waits up to `seconds` for a held lock before it refuses."""
    token = _LOCK_WAIT.set(max(0.0, seconds))
    try:
        yield
    finally:
        _LOCK_WAIT.reset(token)


@contextlib.contextmanager
def store_lock(root: str | os.PathLike):
    """Take the lock or raise LockHeldError (exit 2), after waiting for it as long as waiting_for_lock says.
    Creates the lock file if the store has none; writes nothing into an existing one (the broker writes "lock"
    there itself). Only locks: a writing command takes it through txn.py's `locked_for_writing`, which also
    finishes an interrupted run."""
    path = Path(root) / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    real = os.path.realpath(path)
    try:
        _take(fd, path, _LOCK_WAIT.get())
        _HELD[real] = fd
        yield path
    finally:
        if _HELD.get(real) == fd:
            del _HELD[real]
        os.close(fd)  # closing the descriptor releases the fcntl lock


def _take(fd: int, path: Path, wait: float):
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
            return
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                raise
        left = deadline - time.monotonic()
        if left <= 0:
            waited = f" (waited {wait:g} s)" if wait else ""
            raise LockHeldError(f"the store is locked: a broker (or another rmqctl) is using it{waited}", path)
        time.sleep(min(WAIT_STEP, left))
