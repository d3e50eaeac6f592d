"""A batch of records decoded: the walk along a commitlog file (TOTALSIZE to TOTALSIZE) or along DLedger entry
bodies, each record into a row of the batch's columns (decode.decode_record), and into its Arrow buffers too
where the batch has them (arrow_kernels.decode_row). One walk serves both: the buffers' kernels are compiled
with the buffers, the plain ones with None, and numba prunes the branch a batch does not take.

A batch ends when its rows are all filled, when `max_bytes` of records are in it, or at the first position
that holds no record, whose outcome (BLANK, or the kind of refusal, in read_record's order of checks) the
caller gets."""

from __future__ import annotations

import numpy as np

from ..rules import RECORD as OK
from .arrow_kernels import decode_row, start_columns
from .decode import NAME_LENGTHS, decode_record
from .kernels import kernel
from .record import prefetch_stream


@kernel(counted=False, inlined=True)
def _record(u8, pos, limit, allow_v2, check_crc, cols, n, file_start, buffers, values):
    """The record at `pos` into row n (and the buffers' row, where there are buffers): (outcome, size)."""
    if buffers is None:
        return decode_record(u8, pos, limit, allow_v2, check_crc, cols, n, values[0], values[1])
    return decode_row(u8, pos, limit, allow_v2, check_crc, cols, n, file_start, buffers)


@kernel(counted=False, inlined=True)
def _along_file(u8, pos, first, limit, allow_v2, check_crc, max_bytes, cols, n, file_start, buffers, values):
    """From row n at `pos` (the batch begun at `first`): (rows, next position, outcome there)."""
    while n < len(cols) and pos - first < max_bytes:
        prefetch_stream(u8, pos, limit)
        outcome, size = _record(u8, pos, limit, allow_v2, check_crc, cols, n, file_start, buffers, values)
        if outcome != OK:
            return n, pos, outcome
        n, pos = n + 1, pos + size
    return n, pos, OK


@kernel(counted=False, inlined=True)
def _along_entries(u8, starts, ends, i, taken, allow_v2, check_crc, max_bytes, cols, n, file_start, buffers, values):
    """From row n, the record at starts[i] (bounded by ends[i]: a DLedger entry's body), then i + 1, ...;
    `taken`: the bytes of records the batch holds. Returns (rows, next i, bytes taken, outcome there: OK when
    the batch is full or the starts ran out)."""
    while i < len(starts) and n < len(cols) and taken < max_bytes:
        outcome, size = _record(u8, starts[i], ends[i], allow_v2, check_crc, cols, n, file_start, buffers, values)
        if outcome != OK:
            return n, i, taken, outcome
        n, i, taken = n + 1, i + 1, taken + size
    return n, i, taken, OK


@kernel
def decode(u8, pos, limit, allow_v2, check_crc, max_bytes, cols):
    """Records from `pos` into the rows of `cols`: (records, next position, outcome there: OK when the batch
    was full, else BLANK or the refusal's kind)."""
    values = np.empty((2, len(NAME_LENGTHS)), np.int64)  # (decode_record's property value spans)
    return _along_file(u8, pos, pos, limit, allow_v2, check_crc, max_bytes, cols, 0, 0, None, values)


@kernel
def decode_at(u8, starts, ends, first, allow_v2, check_crc, max_bytes, cols):
    """The records at starts[first], starts[first + 1], ... into the rows of `cols`: (records, next i, outcome
    there)."""
    values = np.empty((2, len(NAME_LENGTHS)), np.int64)
    n, i, _, outcome = _along_entries(
        u8, starts, ends, first, 0, allow_v2, check_crc, max_bytes, cols, 0, 0, None, values
    )
    return n, i, outcome


@kernel(counted=False)
def decode_columns(u8, pos, first, limit, allow_v2, check_crc, max_bytes, cols, n, file_start, buffers):
    """decode, each record's row of the Arrow buffers written as it is decoded (put_row; a batch's buffers
    begun at its row 0), from row n at `pos`. Returns (records, next position, outcome there): ROOM when the
    record there may not fit the buffers (grown, the batch goes on from there)."""
    if n == 0:
        start_columns(buffers)
    return _along_file(u8, pos, first, limit, allow_v2, check_crc, max_bytes, cols, n, file_start, buffers, buffers[11])


@kernel(counted=False)
def decode_columns_at(u8, starts, ends, i, taken, allow_v2, check_crc, max_bytes, cols, n, file_start, buffers):
    """decode_at, as decode_columns fills a batch's Arrow buffers. Returns (records, next i, bytes taken,
    outcome there)."""
    if n == 0:
        start_columns(buffers)
    return _along_entries(
        u8, starts, ends, i, taken, allow_v2, check_crc, max_bytes, cols, n, file_start, buffers, buffers[11]
    )
