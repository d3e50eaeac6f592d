"""Errors that the CLI turns into a one-line message and an exit code (never a traceback)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_REFUSED = 2


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


def where(path, offset: int | None = None, position: int | None = None) -> str:
    """How every message says where something is: a commitlog offset is `commitlog offset N`, a byte inside a
    file `position N in FILE`."""
    if position is not None:
        return f"position {position} in {path}"
    if offset is not None:
        return f"{path} at commitlog offset {offset}"
    return f"{path}"


class RmqError(Exception):
    """Base: a problem with the input or the store, reported as one line, exit 2. `offset` is a commitlog
    offset, `position` a byte position inside `path`."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str, path=None, offset: int | None = None, position: int | None = None):
        self.path = path
        self.offset = offset
        self.position = position
        self.detail = message  # the message without its place
        super().__init__((where(path, offset, position) + ": " if path is not None else "") + message)


class UsageError(RmqError):
    """Bad options or configuration."""


class StoreError(RmqError):
    """The store cannot be read the way asked (missing, inconsistent geometry, unreadable file)."""


class ConfigNotRead(StoreError):
    """A config table the broker keeps where this version does not read it: no answer from it, and no finding
    about it."""


class FileGone(StoreError):
    """A file listed a moment ago is gone: a running broker deleted it (the log's expired head) while rmqctl
    read the store."""


class LockHeldError(RmqError):
    """A broker (or another rmqctl) holds the store's lock."""


class DiskFullError(StoreError):
    """The filesystem has no room for what a writer must reserve before it changes anything."""
