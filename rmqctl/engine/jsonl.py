"""`dump commitlog` lines from the engine's batches: the compiled writer (engine/jsonl_kernels.py) for nearly every
record, record.message_dict + orjson (the reference, and the contract's definition) for the few it leaves."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import orjson

from .. import schema as S
from . import arrow_kernels as K
from .batch import decode, decode_at
from .dledger import entry_heads
from .jsonl_kernels import BODY_MODES, MOST_PAIRS, line_bound, write_lines
from ..record import message_dict, read_record
from .walk import Chunk

BLOCK = 4 << 20  # bytes of lines handed on at a time
# A dump decodes and writes a small batch at a time (engine.walk's batches are sized for Arrow): its records
# are still in the CPU's caches when their lines are written (less time per record than 32 MiB batches).
DUMP_ROWS = 1024
DUMP_BYTES = 1 << 20
NO_ENTRIES = np.zeros((0, len(S.DLEDGER_DUMP_FIELDS)), np.int64)  # a plain commitlog's records: no DLedger entry


def dump_kernels(dledger: bool, where=None) -> tuple:
    """The kernels a dump runs (its first run compiles them): the walk of plain commitlog files or of DLedger
    entries, the writer, and the column kernels of the content filters in `where` (views.filters.MessageFilter)."""
    kernels = ((entry_heads, decode_at) if dledger else (decode,)) + (write_lines,)
    if where is not None and where.has_text_terms():
        kernels += (K.property_values,)
    if where is not None and where.key is not None:
        kernels += (K.holds_word,)
    if where is not None and where.msg_id is not None:
        kernels += (K.msgid_texts,)
    return kernels


def reference_line(chunk: Chunk, row: int, body: str, raw_properties: bool, decompress: int | None) -> bytes:
    f = chunk.file
    m = read_record(chunk.buf, int(chunk.column("position")[row]), len(chunk.u8))
    if chunk.entries is not None:
        m.dledger = dict(zip(S.DLEDGER_DUMP_FIELDS, map(int, chunk.entries[row])))
    return (
        orjson.dumps(message_dict(m, f.name, f.start, body, raw_properties, decompress), option=orjson.OPT_NON_STR_KEYS)
        + b"\n"
    )


def chunk_lines(
    chunk: Chunk,
    rows: np.ndarray,
    body: str,
    raw_properties: bool,
    decompress: int | None,
    block: int = BLOCK,
    out: np.ndarray | None = None,
) -> Iterator:
    """The lines of the records `rows` of `chunk`, in blocks: views of `out` (a buffer of `block` bytes when
    not given, which the caller may reuse once it is done with the blocks) one after another, so that every
    block of a call stays valid until `out` is written again; lines that do not fit what is left go to a
    buffer of their own, and the few the kernel leaves to the reference come as bytes. `decompress`: the cap
    for inflating compressed bodies (None: they are not inflated; the kernel hands those records on)."""
    name = np.frombuffer(chunk.file.name.encode(), np.uint8)
    mode = BODY_MODES[body]
    rows = np.ascontiguousarray(rows, np.int64)
    out = np.empty(block, np.uint8) if out is None else out
    entries = chunk.entries if chunk.entries is not None else NO_ENTRIES
    pairs = np.empty((3, MOST_PAIRS), np.int64)
    i = o = 0
    while i < len(rows):
        done, used, needs_reference = write_lines(
            chunk.u8,
            chunk.cols,
            entries,
            rows,
            i,
            name,
            chunk.file.start,
            mode,
            raw_properties,
            decompress is not None,
            out[o:],
            pairs,
        )
        if used:
            yield out[o : o + used]
            o += used
        i += done
        if i == len(rows):
            break
        if needs_reference:
            yield reference_line(chunk, rows[i], body, raw_properties, decompress)
            i += 1
        elif not done:  # the next line does not fit what is left of `out`
            out, o = np.empty(max(block, line_bound(chunk.cols, rows[i], len(name))), np.uint8), 0
