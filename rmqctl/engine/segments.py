"""walk_files' walk on several threads at once, for a caller that makes something of each batch (`built`: its
Arrow columns): every core decodes and builds, instead of one thread decoding for the others.

A file is cut into cells of max_bytes; a walk's batches already begin at the first record at or past each
cell's start (walk.cell_left), so a cell's batches depend only on where that record is. A thread guesses it
(decode.likely_record_start), walks the cell's records from there and builds their batches; this thread takes
the cells in order and keeps a cell's batches only when the walk before it ended exactly where the guess
began. Otherwise (damage, a record whose PHYSICALOFFSET is not its offset, a guess inside a record) the cell is
walked again here from where the walk before it ended. So the batches, their order and the damage told
(`refused`, on this thread, when the batches before it are handed out) are walk_files' own.
"""

from __future__ import annotations

import collections
import concurrent.futures
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from ..budget import block_sigint_here
from ..errors import FileGone
from ..rules import BLANK, RECORD as OK
from .decode import NCOLUMNS, decode, likely_record_start
from .walk import BATCH_BYTES, BATCH_ROWS, Chunk, data_extents, file_bytes, files_in, give_back, in_range


@dataclass
class Cell:
    """What a walk of one cell found: where it began (-1: no record seemed to start in it) and ended, the
    outcome there (OK: at the next cell's first record, or the end of the file), the cell's batches as built,
    and whether `end` stopped the walk in it."""

    began: int
    ended: int = -1
    outcome: int = OK
    built: list = field(default_factory=list)
    cut: bool = False


@dataclass
class FileWalk:
    """One file of a segmented walk and how its cells are walked."""

    f: object  # the store's MappedFile
    u8: np.ndarray
    limit: int
    start: int | None
    end: int | None
    allow_v2: bool
    check_crc: bool
    rows: int
    cell_bytes: int
    built: Callable[[Chunk], object]

    def cell(self, lo: int, began: int | None = None, data_end: int = 0) -> Cell:
        """Walk the cell holding `lo` from `began`, else from the first record that seems to start in [lo, data_end)."""
        hi = (lo // self.cell_bytes + 1) * self.cell_bytes
        if began is None:
            began = likely_record_start(self.u8, lo, min(hi, data_end), self.limit, self.f.start, self.allow_v2)
            if began < 0:
                return Cell(-1)
        out = Cell(began, began)
        while out.ended < min(hi, self.limit):
            cols = np.empty((self.rows, NCOLUMNS), np.int64)
            n, out.ended, out.outcome = decode(
                self.u8, out.ended, self.limit, self.allow_v2, self.check_crc, hi - out.ended, cols
            )
            cols, out.cut = in_range(cols[:n], self.f.start, self.start, self.end)
            if len(cols):
                out.built.append(self.built(Chunk(self.f, self.u8, cols)))
            if out.cut or out.outcome != OK:
                break
        return out


def walk_segments(
    files: list,
    file_size: int,
    start: int | None,
    end: int | None,
    allow_v2: bool,
    refused: Callable[[object, int, int], None],
    check_crc: bool = False,
    rows: int = BATCH_ROWS,
    max_bytes: int = BATCH_BYTES,
    gone: Callable[[object], None] | None = None,
    built: Callable[[Chunk], object] = None,
    jobs: int = 2,
) -> Iterator:
    """built(chunk) for each of walk_files' batches of [start, end) (the same arguments), in commitlog order,
    the cells of each file walked and built on `jobs` threads; at most 2 x jobs cells are pending, and the
    pages behind the cell handed out are given back."""
    with concurrent.futures.ThreadPoolExecutor(jobs, initializer=block_sigint_here) as pool:
        for f in files_in(files, file_size, start, end):
            try:
                u8 = file_bytes(f.buf)
                limit = min(len(u8), file_size)
                extents = data_extents(f.path, 0, limit) if limit else []
            except FileGone:  # (as walk_files)
                u8 = None
                f.release()
                if gone is None:
                    raise
                gone(f)
                continue
            walk = FileWalk(f, u8, limit, start, end, allow_v2, check_crc, rows, max_bytes, built)
            del u8
            try:
                if (yield from _walk_cells(pool, walk, extents, 2 * jobs, refused)):
                    return
            finally:
                walk = None  # (its view of the mapping goes first: the release unmaps it)
                f.release()


def _walk_cells(pool, walk: FileWalk, extents: list, most: int, refused) -> Iterator:
    """The batches of one file, its cells walked ahead on the pool (only where the file holds data: on tmpfs
    a read of a hole allocates it); returns True when `end` ended the walk."""
    f, size = walk.f, walk.cell_bytes
    guessed = [(k, hi) for lo, hi in extents for k in range(max(1, -(-lo // size)), -(-hi // size))]
    ahead: collections.OrderedDict = collections.OrderedDict()  # cell -> future, in order
    ahead[0] = pool.submit(walk.cell, 0, 0)
    planned = 0  # the guessed cells submitted so far
    began, kept = 0, 0  # where the next cell's walk begins; pages below `kept` were given back
    try:
        while began < walk.limit:
            k = began // size
            while ahead and next(iter(ahead)) < k:  # no record starts in a cell the walk stepped over
                ahead.popitem(last=False)[1].cancel()
            while planned < len(guessed) and len(ahead) < most:
                cell, data_end = guessed[planned]
                planned += 1
                if cell > k:
                    ahead[cell] = pool.submit(walk.cell, cell * size, None, data_end)
            guess = ahead.pop(k).result() if k in ahead else None
            cell = guess if guess is not None and guess.began == began else walk.cell(began, began)
            yield from cell.built
            if cell.cut:
                return True
            kept = give_back(f, kept, k * size)
            began = cell.ended
            if cell.outcome != OK:
                if cell.outcome != BLANK and began < walk.limit and (walk.end is None or f.start + began < walk.end):
                    refused(f, began, walk.limit)
                break
        return False
    finally:  # the cells still pending are not needed: none outlives the walk of its file
        for future in ahead.values():
            future.cancel()
        concurrent.futures.wait(list(ahead.values()))
