"""The one record walk over a commitlog, in bounded batches of columns.

A batch (`Chunk`) holds at most BATCH_ROWS records or BATCH_BYTES of record bytes, whichever comes first
(with ~1 KiB messages: 32768 records, 32 MiB): its columns are int64 numbers and spans into the file's
mapping (43 columns, 11 MiB for a full batch), so a walk's memory does not grow with the store beyond the
mapped pages it touches. Files are walked as CommitLogScan.entries walks them (the reference): records up to
the BLANK; the first bytes that are not a record end the file, and are damage unless they are the zeros
after the last record of the store.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..native.decode import COLUMN, NCOLUMNS, decode
from ..native.record import BLANK, OK

BATCH_ROWS = 32768
BATCH_BYTES = 32 << 20


@dataclass
class Chunk:
    """Consecutive records of one commitlog file: `cols[COLUMN[name]]` is a field (or span) per record."""

    file: object  # the store's MappedFile
    u8: np.ndarray  # the file's mapping as bytes
    cols: np.ndarray  # (records, NCOLUMNS) int64: a record's fields side by side, as the kernels read them

    def __len__(self):
        return len(self.cols)

    def column(self, name: str) -> np.ndarray:
        return self.cols[:, COLUMN[name]]

    def select(self, rows) -> "Chunk":
        return Chunk(self.file, self.u8, self.cols[rows])

    def spans_equal(self, lo: np.ndarray, hi: np.ndarray, want: bytes) -> np.ndarray:
        """Which records' bytes u8[lo:hi] (lo < 0: none) are `want`."""
        target = np.frombuffer(want, np.uint8)
        same = (lo >= 0) & (hi - lo == len(target))
        at = lo[same]
        if len(target) and len(at):
            same[np.flatnonzero(same)] = (self.u8[at[:, None] + np.arange(len(target))] == target).all(axis=1)
        return same


def file_bytes(buf) -> np.ndarray:
    return np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(0, np.uint8)


def walk_files(files: list, file_size: int, start: int | None, end: int | None, allow_v2: bool,
               refused: Callable[[object, int, int], None], check_crc: bool = False,
               rows: int = BATCH_ROWS, max_bytes: int = BATCH_BYTES) -> Iterator[Chunk]:
    """The records of [start, end) in `files`, a batch at a time. Where a file's records end at bytes that
    are not a record, `refused(file, position, limit)` is told (it tells damage from the end of the data)."""
    for f in files:
        if end is not None and f.start >= end:
            return
        if start is not None and f.start + file_size <= start:
            continue
        u8 = file_bytes(f.buf)
        limit = min(len(u8), file_size)
        pos = 0
        while pos < limit:
            cols = np.empty((rows, NCOLUMNS), np.int64)
            batch_from = pos
            n, pos, outcome = decode(u8, pos, limit, allow_v2, check_crc, max_bytes, cols)
            cols = cols[:n]
            if n:
                offsets = cols[:, COLUMN["position"]] + f.start
                if end is not None and offsets[-1] >= end:
                    cols = cols[: np.searchsorted(offsets, end)]
                    if len(cols):
                        yield Chunk(f, u8, cols)
                    return
                if start is not None and offsets[0] < start:
                    cols = cols[np.searchsorted(offsets, start):]
                if len(cols):
                    yield Chunk(f, u8, cols)
            f.drop_pages(batch_from, pos)  # the next batch is asked for: this one's pages go back
            if outcome == OK:
                continue
            if outcome != BLANK and pos < limit:
                refused(f, pos, limit)
            break
        del u8
        f.release()  # walked: its pages go back (MADV_DONTNEED while a batch still views them)

