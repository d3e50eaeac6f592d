"""The broker's own lock: an exclusive fcntl record lock on byte 0 of {store}/lock (FileChannel.tryLock(0, 1,
false) on Linux). Writing commands hold it for their whole run so neither a broker nor another rmqctl can
start underneath them."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from .errors import LockHeldError


@contextlib.contextmanager
def store_lock(root: str | os.PathLike):
    """Take the lock or raise LockHeldError (exit 2). Creates the lock file if the store has none; writes
    nothing into an existing one (the broker writes "lock" there itself). Only locks: a writing command
    takes it through txn.py's `locked_for_writing`, which also finishes an interrupted run."""
    path = Path(root) / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EAGAIN):
                raise LockHeldError("the store is locked: a broker (or another rmqctl) is using it", path) from None
            raise
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the fcntl lock
