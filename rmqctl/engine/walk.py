"""The one record walk over a commitlog, in bounded batches of columns.

A batch (`Chunk`) holds at most BATCH_ROWS records or the records up to the first one at or past the next
multiple of BATCH_BYTES of the file (cell_left), whichever comes first (with ~1 KiB messages: ~3700 records,
4 MiB): its columns are int64 numbers and spans into the file's
mapping (43 columns, 2.75 MiB for 8192 rows), so a walk's memory does not grow with the store beyond the
mapped pages it touches. A batch stays in the CPU's caches while its Arrow columns are gathered from it, one
column at a time, each touching every record again: with 32 MiB batches every record was a cache miss per
column (docs/performance.md). Files are walked as
CommitLogScan.entries walks them (the reference): records up to the BLANK; the first bytes that are not a
record end the file, and are damage unless they are the zeros after the last record of the store. A DLedger
data file is walked entry by entry instead (walk_entry_files): each entry's body is one record, so its rows
also carry the entry (S.DLEDGER_DUMP_FIELDS).
"""

from __future__ import annotations

import collections
import concurrent.futures
import errno
import os
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from ..budget import block_sigint_here
from ..errors import FileGone
from .batch import decode, decode_at
from .decode import COLUMN, NCOLUMNS, likely_record_start
from ..rules import BLANK, MAGIC_BLANK, MESSAGE_MAGICS, RECORD as OK
from ..schema import MAGIC_AT, PHYSICAL_OFFSET_AT
from .. import schema as S
from ..record import Blank, RecordError, read_record

BATCH_ROWS = 8192
BATCH_BYTES = 4 << 20
# the Arrow scan's batches (ColumnViews.batches) end at the same 4 MiB: half as many batches as 2 MiB ones halve what
# each costs in Python, and a batch's rows and buffers still fit the caches (docs/performance.md)
ARROW_BATCH_BYTES = BATCH_BYTES


@dataclass
class Chunk:
    """Consecutive records of one commitlog file: `cols[COLUMN[name]]` is a field (or span) per record."""

    file: object  # the store's MappedFile
    u8: np.ndarray  # the file's mapping as bytes
    cols: np.ndarray  # (records, NCOLUMNS) int64: a record's fields side by side, as the kernels read them
    entries: np.ndarray | None = None  # DLedger: (records, len(S.DLEDGER_DUMP_FIELDS)) int64, each record's entry
    filled: object = None  # the Arrow buffers the walk's decode filled with its rows (columns.ArrowDecode), or None
    first: int = 0  # the row of `filled` this chunk's first row is (the walk's `start` and `end` cut batches)

    def __len__(self):
        return len(self.cols)

    def column(self, name: str) -> np.ndarray:
        return self.cols[:, COLUMN[name]]

    @property
    def end(self) -> int:
        """Where its last record ends (a position in its file)."""
        return int(self.cols[-1, COLUMN["position"]] + self.cols[-1, COLUMN["storeSize"]])

    @property
    def buf(self):
        """The file's mapping as the reference reads it, kept alive by this chunk's view (the file's own `buf`
        maps the file again once the walk let it go: on another thread, after the broker deleted it, FileGone)."""
        return self.u8.base if len(self.u8) else b""

    def select(self, rows) -> "Chunk":
        return Chunk(self.file, self.u8, self.cols[rows], None if self.entries is None else self.entries[rows])

    def spans_equal(self, lo: np.ndarray, hi: np.ndarray, want: bytes) -> np.ndarray:
        """Which records' bytes u8[lo:hi] (lo < 0: none) are `want`."""
        target = np.frombuffer(want, np.uint8)
        same = (lo >= 0) & (hi - lo == len(target))
        at = lo[same]
        if len(target) and len(at):
            same[np.flatnonzero(same)] = (self.u8[at[:, None] + np.arange(len(target))] == target).all(axis=1)
        return same


class RowDecode:
    """The walk's decode of a batch: its records' fields into the rows of `cols`, and nothing beside them (Chunk's
    `filled`: None). columns.ArrowDecode also fills the batch's Arrow buffers as it decodes."""

    def decode(self, u8, pos, limit, allow_v2, check_crc, max_bytes, cols, file_start):
        """batch.decode, and what the walk's Chunk carries beside the rows."""
        return (*decode(u8, pos, limit, allow_v2, check_crc, max_bytes, cols), None)

    def decode_at(self, u8, starts, ends, i, allow_v2, check_crc, max_bytes, cols, file_start):
        """batch.decode_at, and what the walk's Chunk carries beside the rows."""
        return (*decode_at(u8, starts, ends, i, allow_v2, check_crc, max_bytes, cols), None)


ROWS = RowDecode()


def file_bytes(buf) -> np.ndarray:
    return np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(0, np.uint8)


GIVE_BACK_STEP = 4 << 20  # pages are given back a few MiB at a time: a madvise per small batch costs more


def give_back(f, lo: int, hi: int, paged: bool = False) -> int:
    """Give back the pages of f's bytes [lo, hi) (read, and no longer viewed by a pending batch) once they
    make a step (on the pager's thread when `paged`); returns where the next give-back starts. The file's
    release gives back the rest."""
    if hi - lo < GIVE_BACK_STEP:
        return lo
    if paged:
        f.pages_behind(lo, hi)
    else:
        f.drop_pages(lo, hi)
    return hi


PAGE_AHEAD = 16 << 20  # with a pager, the pages this far past the walk are asked for, this much at a time


class _Ahead:
    """A walk's pages asked for ahead of it, a step at a time (f.pages_ahead: the store's pager), within the
    file's data: on tmpfs a read of a hole allocates it."""

    def __init__(self, f, limit: int):
        self.f, self.asked, self.requests = f, 0, []
        self.extents = data_extents(f.path, 0, limit)

    def reach(self, pos: int):
        while self.asked < pos + PAGE_AHEAD and self.extents and self.asked < self.extents[-1][1]:
            lo, hi = self.asked, self.asked + PAGE_AHEAD
            self.requests.append(self.f.pages_ahead([(max(a, lo), min(b, hi)) for a, b in self.extents]))
            self.asked = hi
        self.requests = [r for r in self.requests if r is not None and not r.served.is_set()]

    def cancel(self):
        for r in self.requests:
            r.cancelled = True


def _let_go(f, ahead: _Ahead | None, settle):
    """Release a walked file: without a pager at once, else its pending pages are called off and its mapping
    goes on the pager's thread; returns the file whose pager the walk settles at its end (f.pages_settled)."""
    if ahead is None:
        f.release()
        return settle
    ahead.cancel()
    f.release(paged=True)
    return f


def files_in(files: list, file_size: int, start: int | None, end: int | None) -> Iterator:
    """The files (in offset order) that hold offsets of [start, end)."""
    for f in files:
        if end is not None and f.start >= end:
            return
        if start is None or f.start + file_size > start:
            yield f


def file_gone(f, gone: Callable[[object], None] | None):
    """In the handling of a FileGone for file f (deleted since it was listed): let it go and pass it to `gone`,
    or without `gone` raise the FileGone on."""
    f.release()
    if gone is None:
        raise
    gone(f)


def cell_left(pos: int, max_bytes: int) -> int:
    """The bytes from `pos` to the end of its cell: a batch ends at the first record at or past the next multiple
    of max_bytes of its file (or at its rows), so where the batches of a cell begin depends only on where the
    first record at or past the cell's start is (walk_segments walks a file's cells on several threads)."""
    return (pos // max_bytes + 1) * max_bytes - pos


def in_range(f, u8, cols: np.ndarray, filled, start: int | None, end: int | None) -> tuple[Chunk, bool]:
    """The batch of file f's records decoded into `cols` (and `filled`) whose records start in [start, end), and
    whether the walk ends with them (a record at or past `end`)."""
    if not len(cols):
        return Chunk(f, u8, cols), False
    if start is None and end is None:
        return Chunk(f, u8, cols, filled=filled), False
    offsets = cols[:, COLUMN["position"]] + f.start
    cut = end is not None and offsets[-1] >= end
    lo = 0 if start is None or offsets[0] >= start else int(np.searchsorted(offsets, start))
    return Chunk(f, u8, cols[lo : np.searchsorted(offsets, end) if cut else len(cols)], filled=filled, first=lo), cut


def walk_files(
    files: list,
    file_size: int,
    start: int | None,
    end: int | None,
    allow_v2: bool,
    refused: Callable[[object, int, int], None],
    check_crc: bool = False,
    rows: int = BATCH_ROWS,
    max_bytes: int = BATCH_BYTES,
    resident: int = 0,
    gone: Callable[[object], None] | None = None,
    paged: bool = False,
    built: Callable[[Chunk], object] | None = None,
    jobs: int = 1,
    decoder: RowDecode = ROWS,
) -> Iterator:
    """The records of [start, end) in `files`, a batch at a time. Where a file's records end at bytes that
    are not a record, `refused(file, position, limit)` is told (it tells damage from the end of the data).
    A batch may decode past `end` (a record that starts before `end` is read whole, and a batch does not stop
    at it), but no record starting at or past `end` is yielded and no refusal there is told: on a live store
    those bytes may be a record still being written. A file deleted since it was listed (errors.FileGone) is passed
    to `gone` and the walk goes on with the next one (without `gone`, FileGone is raised).
    Read pages go back GIVE_BACK_STEP at a time once the walk is `resident` bytes past them (batches other
    threads still read: giving their pages back early would only fault them in again). `paged`: the files'
    pager (f.pages_ahead / f.pages_behind, a thread of the store's) maps pages in ahead of the walk and gives
    them back, for a walk on one thread with a core to spare; the walk ends once the last file's mapping is gone.
    With `built` (a function of a Chunk): built(batch) of each batch instead, each file's cells walked and built
    on `jobs` threads (walk_segments; `resident` and `paged` are not its business). `decoder`: what decodes a
    batch (columns.ArrowDecode also fills its Arrow buffers)."""
    if built is not None:
        cell = dict(start=start, end=end, allow_v2=allow_v2, check_crc=check_crc, rows=rows, cell_bytes=max_bytes)
        return walk_segments(files, file_size, refused, gone, jobs, built=built, decoder=decoder, **cell)
    walk = (start, end, allow_v2, refused, check_crc, rows, max_bytes, resident, gone, paged, decoder)
    return _walk_chunks(files, file_size, *walk)


def _walk_chunks(
    files, file_size, start, end, allow_v2, refused, check_crc, rows, max_bytes, resident, gone, paged, decoder
):
    """walk_files' batches as Chunks, on this thread."""
    settle = None  # a file given back on the pager's thread: the walk ends once the pager has let go of it
    try:
        for f in files_in(files, file_size, start, end):
            try:
                u8 = file_bytes(f.buf)
                limit = min(len(u8), file_size)
                ahead = _Ahead(f, limit) if paged and limit else None
            except FileGone:  # (deleted since it was listed, or since it was mapped: then it is let go)
                u8 = None  # (a view left here would keep the mapping while the exception lives)
                file_gone(f, gone)
                continue
            try:
                pos = kept = 0
                while pos < limit:
                    if ahead is not None:
                        ahead.reach(pos)
                    cols = np.empty((rows, NCOLUMNS), np.int64)
                    left = cell_left(pos, max_bytes)
                    n, pos, outcome, filled = decoder.decode(u8, pos, limit, allow_v2, check_crc, left, cols, f.start)
                    chunk, cut = in_range(f, u8, cols[:n], filled, start, end)
                    if len(chunk):
                        yield chunk
                    if cut:
                        return
                    kept = give_back(f, kept, pos - resident, paged)
                    if outcome == OK:
                        continue
                    if outcome != BLANK and pos < limit and (end is None or f.start + pos < end):
                        refused(f, pos, limit)
                    break
            finally:  # walked, cut short by `end` or stopped early: its pages go back, its mapping with the last view
                del u8
                settle = _let_go(f, ahead, settle)
    finally:
        if settle is not None:
            settle.pages_settled()


def walk_entry_files(
    files: list,
    file_size: int,
    start: int | None,
    end: int | None,
    allow_v2: bool,
    entries_of: Callable[[object, int], object],
    refused: Callable[[object, int, int], None],
    finished: Callable[[object, object], None],
    check_crc: bool = False,
    rows: int = BATCH_ROWS,
    max_bytes: int = BATCH_BYTES,
    resident: int = 0,
    paged: bool = False,
    decoder: RowDecode = ROWS,
) -> Iterator[Chunk]:
    """The records of [start, end) in DLedger data files, a batch at a time: `entries_of(file, limit)` locates
    the entries, a slice of the file at a time (dledger.entry_slices); the body of each is decoded as a
    record. An entry whose body is not a record (or is a BLANK) is passed to `refused(file, body position,
    entry end)` and skipped, as the broker's reput skips it by the entry's size; `finished(file, entries)` is
    told how a file's entries end (its last slice) unless `end` cut the file short (then the walk is over)."""
    settle = None  # (as walk_files settles it)
    try:
        for f in files_in(files, file_size, start, end):
            u8 = file_bytes(f.buf)
            limit = min(len(u8), file_size)
            ahead = None
            kept, cut = 0, False
            try:
                if paged and limit:  # (as walk_files pages)
                    ahead = _Ahead(f, limit)
                for found in entries_of(f, limit):
                    starts, ends = found.message_starts(), found.message_ends()
                    keep = np.ones(len(starts), bool)
                    if start is not None:
                        keep &= starts + f.start >= start
                    cut = end is not None and bool((starts + f.start >= end).any())
                    if cut:
                        keep &= starts + f.start < end
                    picked = np.flatnonzero(keep)
                    starts, ends = np.ascontiguousarray(starts[picked]), np.ascontiguousarray(ends[picked])
                    entry_cols = found.entry_columns[picked]
                    i = 0
                    while i < len(starts):
                        if ahead is not None:
                            ahead.reach(int(starts[i]))
                        cols = np.empty((rows, NCOLUMNS), np.int64)
                        n, after, outcome, filled = decoder.decode_at(
                            u8, starts, ends, i, allow_v2, check_crc, max_bytes, cols, f.start
                        )
                        if n:
                            yield Chunk(f, u8, cols[:n], entry_cols[i : i + n], filled)
                        # the next batch is asked for: this one's pages go back (as walk_files gives them)
                        if after > i:
                            kept = give_back(f, kept, int(ends[after - 1]) - resident, paged)
                        i = after
                        if outcome != OK:
                            refused(f, int(starts[i]), int(ends[i]))
                            i += 1
                    if cut:
                        break
            finally:  # (as walk_files releases it)
                del u8
                settle = _let_go(f, ahead, settle)
            if cut:
                return
            finished(f, found)
    finally:
        if settle is not None:
            settle.pages_settled()


# walk_files' walk on several threads at once, for a caller that makes something of each batch (`built`: its
# Arrow columns): every core decodes and builds, instead of one thread decoding for the others.
#
# A file is cut into cells of max_bytes; a walk's batches already begin at the first record at or past each
# cell's start (cell_left), so a cell's batches depend only on where that record is. A thread guesses it
# (decode.likely_record_start), walks the cell's records from there and builds their batches; this thread takes
# the cells in order and keeps a cell's batches only when the walk before it ended exactly where the guess
# began. Otherwise (damage, a record whose PHYSICALOFFSET is not its offset, a guess inside a record) the cell is
# walked again here from where the walk before it ended. So the batches, their order and the damage told
# (`refused`, on this thread, when the batches before it are handed out) are walk_files' own.


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
    decoder: RowDecode
    extents: list[tuple[int, int]]  # the file's data (data_extents)

    def cell(self, lo: int, began: int | None = None, data_end: int = 0) -> Cell:
        """Walk the cell holding `lo` from `began`, else from the first record that seems to start in [lo, data_end)."""
        hi = (lo // self.cell_bytes + 1) * self.cell_bytes
        # each walking thread maps its cell's pages in at once: with a walk per core there is none for a pager
        self.f.map_in([(max(a, lo), min(b, hi, self.limit)) for a, b in self.extents if a < hi and b > lo])
        if began is None:
            began = likely_record_start(self.u8, lo, min(hi, data_end), self.limit, self.f.start, self.allow_v2)
            if began < 0:
                return Cell(-1)
        out = Cell(began, began)
        while out.ended < min(hi, self.limit):
            cols = np.empty((self.rows, NCOLUMNS), np.int64)
            n, out.ended, out.outcome, filled = self.decoder.decode(
                self.u8, out.ended, self.limit, self.allow_v2, self.check_crc, hi - out.ended, cols, self.f.start
            )
            chunk, out.cut = in_range(self.f, self.u8, cols[:n], filled, self.start, self.end)
            if len(chunk):
                out.built.append(self.built(chunk))
            if out.cut or out.outcome != OK:
                break
        return out


def walk_segments(files: list, file_size: int, refused, gone, jobs: int, **cell) -> Iterator:
    """walk_files(built=) on `jobs` threads (`cell`: FileWalk's fields, walk_files' arguments of the same
    names): built(chunk) for each of its batches, in commitlog order, with at most 2 x jobs cells (and their
    batches) pending, the pages behind the cell handed out given back. `built` also runs on the records of a
    guess the walk then drops (a record-like header inside a body): it must only build, with no effect beside
    what it returns."""
    with concurrent.futures.ThreadPoolExecutor(jobs, initializer=block_sigint_here) as pool:
        for f in files_in(files, file_size, cell["start"], cell["end"]):
            try:
                u8 = file_bytes(f.buf)
                limit = min(len(u8), file_size)
                extents = data_extents(f.path, 0, limit) if limit else []
            except FileGone:  # (as walk_files)
                u8 = None
                file_gone(f, gone)
                continue
            walk = FileWalk(f, u8, limit, **cell, extents=extents)
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
    last = walk.limit if walk.end is None else min(walk.limit, walk.end - f.start)  # (no record at or past `end`)
    guessed = [(k, hi) for lo, hi in extents for k in range(max(1, -(-lo // size)), -(-min(hi, last) // size))]
    ahead: collections.OrderedDict = collections.OrderedDict()  # cell -> future, in order
    ahead[0] = pool.submit(walk.cell, 0, 0)
    passed: list = []  # the futures of cells the walk stepped over that were running when it did
    planned = 0  # the guessed cells submitted so far
    began, kept = 0, 0  # where the next cell's walk begins; pages below `kept` were given back
    try:
        while began < walk.limit:
            k = began // size
            passed = [future for future in passed if not future.done()]
            while ahead and next(iter(ahead)) < k:  # no record starts in a cell the walk stepped over
                future = ahead.popitem(last=False)[1]
                if not future.cancel():
                    passed.append(future)
            while planned < len(guessed) and len(ahead) < most:
                ahead_k, data_end = guessed[planned]
                planned += 1
                if ahead_k > k:
                    ahead[ahead_k] = pool.submit(walk.cell, ahead_k * size, None, data_end)
            try:
                guess = ahead.pop(k).result() if k in ahead else None
            except Exception:  # a guess may be no record at all: what failed there counts only if it was one,
                guess = None  # and then the walk of the cell here meets it again
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
        concurrent.futures.wait(list(ahead.values()) + passed)


# a record start is searched by its magic: a message's magics (V1 and V2) share their first three bytes
_MAGICS = tuple(S.INT32.pack(magic) for magic in MESSAGE_MAGICS)
SEARCH_PREFIX = _MAGICS[0][:3]
MAGIC_LAST_BYTES = {m[3] for m in _MAGICS}
assert all(m[:3] == SEARCH_PREFIX for m in _MAGICS)
BLANK_BYTES = S.INT32.pack(MAGIC_BLANK)


def next_record_start(
    buf, pos: int, limit: int, searched: int, file_start: int, file_size: int, allow_v2: bool
) -> int | None:
    """The first position >= pos of a commitlog file (at `file_start`, its bytes read to `limit`, searched up
    to `searched`) where a record starts: V1/V2 magic with PHYSICALOFFSET equal to the position and a length
    that adds up, or a BLANK whose size reaches the end of the file."""
    best = _message_start(buf, pos, limit, searched, file_start, allow_v2)
    p = pos + MAGIC_AT
    while True:
        at = buf.find(BLANK_BYTES, p, best + MAGIC_AT if best is not None else searched)
        if at < 0:
            return best
        cand = at - MAGIC_AT
        p = at + 1
        if cand >= pos and S.INT32.unpack_from(buf, cand)[0] == file_size - cand:
            return cand


def _message_start(buf, pos: int, limit: int, searched: int, file_start: int, allow_v2: bool) -> int | None:
    p = pos + MAGIC_AT
    while True:
        at = buf.find(SEARCH_PREFIX, p, searched)
        if at < 0:
            return None
        cand = at - MAGIC_AT
        p = at + 1
        head_end = cand + PHYSICAL_OFFSET_AT + S.INT64.size
        if cand < pos or head_end > limit or buf[at + len(SEARCH_PREFIX)] not in MAGIC_LAST_BYTES:
            continue
        if S.INT64.unpack_from(buf, cand + PHYSICAL_OFFSET_AT)[0] != file_start + cand:
            continue
        try:
            if not isinstance(read_record(buf, cand, limit, allow_v2), Blank):
                return cand
        except RecordError:
            continue


def data_extents(path, start: int, end: int) -> list[tuple[int, int]]:
    """The ranges of [start, end) that may hold data (SEEK_DATA / SEEK_HOLE); all of it where the filesystem
    cannot tell. FileGone when the file was deleted after its caller mapped it (a running broker's expired head):
    the caller's reading of a vanished file, as when mapping it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise FileGone(
            "deleted while rmqctl read the store (a running broker removed this expired file)", path
        ) from None
    try:
        st = os.fstat(fd)
        if st.st_blocks * 512 >= st.st_size:  # every page allocated: no hole (SEEK_DATA on tmpfs walks them all)
            end = min(end, st.st_size)
            return [(start, end)] if end > start else []
        out = []
        pos = start
        while pos < end:
            try:
                lo = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data past pos
                    break
                return [(start, end)]
            if lo >= end:
                break
            hi = min(end, os.lseek(fd, lo, os.SEEK_HOLE))
            out.append((lo, hi))
            pos = hi
        return out
    finally:
        os.close(fd)
