"""Work on threads, results in order. The compiled kernels release the GIL, so `jobs` threads run them side
by side while the caller takes the results in the order of their inputs (a dump's lines stay in commitlog
order). At most 2 * jobs results are pending at once, so memory stays a few batches whatever the store."""

from __future__ import annotations

import collections
import concurrent.futures
from typing import Callable, Iterable, Iterator, TypeVar

from ..budget import block_sigint_here

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> Iterator[R]:
    """fn(item) for each item, in the items' order; with jobs > 1 the calls run on `jobs` threads while the
    caller's thread draws the next items (a walk's decode) and consumes results."""
    if jobs <= 1:
        yield from map(fn, items)
        return
    with concurrent.futures.ThreadPoolExecutor(jobs, initializer=block_sigint_here) as pool:
        pending: collections.deque = collections.deque()
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * jobs:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # the caller stopped early (--limit, a closed pipe): what is queued is not started
            for future in pending:
                future.cancel()
