"""The working-memory budget of the commands that walk a whole store (`--memory SIZE`, like `sort -S` or
PostgreSQL's maintenance_work_mem): a design bound on what one batch of records may hold, whatever the
store's size. The interpreter, the compiled kernels and the few files mapped at a time come on top."""

from __future__ import annotations

import contextlib
import ctypes
import re
import signal
import threading

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


def _glibc(name: str):
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # not glibc: its allocator returns memory in its own way
        return None


_TRIM, _MALLOPT = _glibc("malloc_trim"), _glibc("mallopt")
M_ARENA_MAX = -8  # glibc's malloc.h


def one_heap():
    """Make every thread allocate from one heap (glibc's M_ARENA_MAX = 1), for a process about to run
    threads whose arrays another thread frees: by default each thread gets its own arena, the columns a
    walk-ahead thread made stay cached in its arena after the window that used them is freed, and
    release_freed cannot hand back a page in use in any of them. It lowers verify --deep's peak on large
    stores at no cost in speed: the arrays are few and large, so threads hardly
    contend for the heap. Process-wide, so for the command's process (rmqctl.cli.launch), not a library's."""
    if _MALLOPT is not None:
        _MALLOPT(M_ARENA_MAX, 1)


def release_freed():
    """Hand the allocator's free pages back to the system between batches (glibc's malloc_trim). glibc
    raises its mmap threshold to the size of any mapped block freed, after which a batch's column arrays
    come from the heap, and what later batches free stays resident there: without this, verify's peak grew
    with the number of windows."""
    if _TRIM is not None:
        _TRIM(0)


def block_sigint_here():
    """Block SIGINT in the calling thread: the first call of every thread a command starts (a pool's
    initializer, a Thread's target). Ctrl-C must reach the main thread (rmqctl.cli.launch blocks it in the
    threads the imports start); one handed to another thread only sets Python's flag, and a main thread
    blocked in a read would never see it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@contextlib.contextmanager
def sigint_held():
    """Ctrl-C held back while a step that must not stop half-way runs (a writer's commit: its records encoded
    into the files, made durable, dispatched), and delivered when the step is over; an error of the step's own
    ends the command instead. Stopped inside it, a kernel's view of a mapped file would outlive the step in the
    traceback, and the take-back that leaves the store as it was could not unmap the file. (The handler, not
    the signal mask: the signal may reach any thread, and Python runs its handler in the main one.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        signal.raise_signal(signal.SIGINT)
