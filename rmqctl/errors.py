"""Errors that the CLI turns into a one-line message and an exit code (never a traceback)."""
from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_REFUSED = 2


class RmqError(Exception):
    """Base: a problem with the input or the store, reported as one line, exit 2."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str, path=None, offset: int | None = None):
        self.path = path
        self.offset = offset
        where = ""
        if path is not None:
            where = f"{path}" + (f" at offset {offset}" if offset is not None else "") + ": "
        super().__init__(where + message)


class UsageError(RmqError):
    """Bad options or configuration."""


class StoreError(RmqError):
    """The store cannot be read the way asked (missing, inconsistent geometry, unreadable file)."""


class LockHeldError(RmqError):
    """A broker (or another rmqctl) holds the store's lock."""


class DiskFullError(StoreError):
    """The filesystem has no room for what a writer must reserve before it changes anything."""
