"""verify's record table in windows of commitlog offsets, so that its memory does not grow with the store.

The commitlog scan (checks/commitlog.py) keeps each chunk's findings and how many records it checked; the
record columns the cross-checks need come here, a window at a time: the chunks are walked again in commitlog
order (or their columns taken from the scan when it kept them) and cut into windows of at most
`window_records` records. A window stands for the commitlog offsets [lo, hi): lo is its first record's offset
(minus infinity for the first window), hi the next window's lo (infinity for the last), and every record of
the window lies inside it. So a consumequeue unit or an index entry pointing at offset o is checked against
the one window whose range holds o, exactly as against the whole table; `window_records=None` is the whole
table in one window. The checks keep only what crosses windows: per queue or per index file.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
from typing import Iterator

import numpy as np

from ..budget import block_sigint_here
from .context import Context, Records, RecordsBuilder
from .commitlog import walker, without_records
from .scan import ChunkResult

LOWEST = -(1 << 62)
HIGHEST = 1 << 62
# anonymous bytes a window costs per record: its columns (8 int64), about three index keys (2 int64 each),
# and the copies the checks make (dispatch targets, sort orders, per-queue groups), measured with
# benchmarks/bench_verify_memory.py
BYTES_PER_RECORD = 400
# what a run needs besides its window: the chunk being cut (a 64 MiB chunk of small records), index slots
FIXED_BYTES = 96 << 20


# the fewest records a window holds: each window costs a pass over every queue and index file, so a budget
# below FIXED_BYTES + this many records' bytes (about 121M) is taken as that (windows of a record or a few
# made a verify 150 times slower)
MIN_WINDOW_RECORDS = 1 << 16


def window_records(memory: int) -> int:
    """Records per window within a budget of `memory` bytes (MIN_WINDOW_RECORDS at least)."""
    return max(MIN_WINDOW_RECORDS, (memory - FIXED_BYTES) // BYTES_PER_RECORD)


@dataclasses.dataclass
class Window:
    rec: Records
    lo: int  # the commitlog offsets this window stands for: [lo, hi)
    hi: int

    def holds(self, offsets: np.ndarray) -> np.ndarray:
        return (offsets >= self.lo) & (offsets < self.hi)


def windows(ctx: Context, results: list[list[ChunkResult]], size: int | None) -> Iterator[Window]:
    """The records of `results` (per file, its chunks), in windows of at most `size` records (None: one).
    A chunk whose result lost its columns is walked again; a window, the chunk being cut and the chunks
    walked ahead are held at a time (each slice of a chunk is copied into the window being assembled)."""
    walk = walker(ctx)
    chunks = [(ctx.files[i].start, r) for i, rs in enumerate(results) for r in rs if r.count]
    where = {id(r): (i, k) for i, rs in enumerate(results) for k, r in enumerate(rs)}
    window, lo = RecordsBuilder(), LOWEST
    for c, ((start, r), full) in enumerate(zip(chunks, _walked(walk, [r for _, r in chunks], ctx.jobs))):
        if len(r.pos):  # the scan kept its columns: from here on only the windows' copies hold them
            i, k = where[id(r)]
            results[i][k] = without_records(r)
            chunks[c] = (start, results[i][k])
        del r
        a = 0
        while a < full.count:
            b = full.count if size is None else min(full.count, a + size - window.count)
            window.add(full, start, a, b)
            a = b
            if window.count == size:
                # the window ends where the next record starts
                hi = (
                    start + int(full.pos[b])
                    if b < full.count
                    else chunks[c + 1][0] + chunks[c + 1][1].start
                    if c + 1 < len(chunks)
                    else HIGHEST
                )
                ctx.head_moved()  # (a running broker's cleaner may have taken head files since the last window)
                yield Window(window.build(), lo, hi)
                lo = hi
        del full
    if window.count or lo == LOWEST:
        ctx.head_moved()
        yield Window(window.build(), lo, HIGHEST)


def records_past(ctx: Context, results: list[list[ChunkResult]], offset: int) -> tuple[int, int]:
    """How many records of `results` start past commitlog offset `offset`, and their bytes: a chunk wholly past
    it counts whole, the one it falls in is walked again if it lost its columns."""
    walk = walker(ctx)
    records = size = 0
    for i, rs in enumerate(results):
        start = ctx.files[i].start
        for r in rs:
            if not r.count or start + r.end <= offset + 1:  # (every record starts before its end)
                continue
            if start + r.start > offset:
                records, size = records + r.count, size + r.record_bytes
                continue
            full = with_columns(walk, r)
            past = full.pos + start > offset
            records, size = records + int(past.sum()), size + int(full.size[past].sum())
    return records, size


def with_columns(walk, r: ChunkResult) -> ChunkResult:
    """`r` with its record columns: itself, or its chunk walked again for them alone (no CRCs, no findings:
    the first walk reported those; the columns do not depend on them), in arrays the size of its records
    (a first walk sizes them for 512-byte records: a chunk walked ahead would hold twice its columns or more)."""
    if len(r.pos) == r.count:
        return r
    # (not paged: the caller checks windows meanwhile on the core the pager would take)
    return walk(dataclasses.replace(r.task, check_crc=False, columns_only=True, records=r.count, paged=False))


def _walked(walk, results: list[ChunkResult], jobs: int) -> Iterator[ChunkResult]:
    """Each result with its record columns (walked again when it lost them), the next `jobs` walked on threads
    meanwhile (the kernel releases the GIL) while the caller checks this one's windows."""
    results = list(results)
    with concurrent.futures.ThreadPoolExecutor(jobs, initializer=block_sigint_here) as pool:
        ahead = collections.deque(pool.submit(with_columns, walk, r) for r in results[:jobs])
        for k in range(len(results)):
            current = ahead.popleft().result()
            results[k] = None  # (the caller drops its own reference: the columns go with the last window using them)
            if k + jobs < len(results):
                ahead.append(pool.submit(with_columns, walk, results[k + jobs]))
            yield current
            del current
