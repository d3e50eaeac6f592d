"""The working-memory budget of the commands that walk a whole store (`--memory SIZE`, like `sort -S` or
PostgreSQL's maintenance_work_mem): a design bound on what one batch of records may hold, whatever the
store's size. The interpreter, the compiled kernels and the few files mapped at a time come on top."""
from __future__ import annotations

import ctypes
import re

DEFAULT_MEMORY = 256 << 20
MIN_BATCH_RECORDS = 16  # below this a batch costs more in calls than it saves in memory
MIN_CLI_MEMORY = 1 << 20  # what --memory takes at least: less would only make batches of a few records
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """A byte count as `sort -S` takes it: a number with an optional K, M, G or T suffix (powers of 1024;
    KiB/KB spellings too), e.g. 256M, 1.5G, 65536. ValueError for anything else or zero."""
    m = _SIZE.fullmatch(text.strip())
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()]) if m else 0
    if value <= 0:
        raise ValueError(f"{text!r} is not a memory size (e.g. 256M, 2G)")
    return value


def batch_records(memory: int, bytes_per_record: int) -> int:
    """How many records one batch may hold when each costs `bytes_per_record` of working memory."""
    return max(MIN_BATCH_RECORDS, memory // bytes_per_record)


def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator returns memory in its own way
        return None


_TRIM = _malloc_trim()


def release_freed():
    """Hand the allocator's free pages back to the system between batches (glibc's malloc_trim). glibc
    raises its mmap threshold to the size of any mapped block freed, after which a batch's column arrays
    come from the heap, and what later batches free stays resident there: verify's peak grew by about
    35 MiB between a 1 GiB and a 16 GiB store (34 windows against 3) until each window gave it back."""
    if _TRIM is not None:
        _TRIM(0)
