"""The engine's record batch as Arrow: the dump contract's fields under their names and in their order
(record.message_dict), then the stored bytes and what the broker reads from the properties. Built from a
walk's Chunk without a Python object per record; only text that is not well-formed UTF-8 (which Java decodes
with replacement) and IPv6 hosts are rendered by the reference's functions, for the batches that have them.

Columns after the contract's scalars: `body` and `propertiesBytes` (the stored bytes), `properties` (the
map MessageDecoder parses), `tags`, `keys` (the KEYS words the index holds), `tranMsg` and `producerGroup`
(TRAN_MSG, PGROUP), `multiDispatch` / `multiQueueOffset` (the LMQ properties, as stored) and `crcOk` (the
stored CRCs hold; null unless the walk checked them); in a DLedger store, `dledger` (the record's entry).
"""

from __future__ import annotations

import functools
import math
import sys
import threading

import numpy as np
import pyarrow as pa

from .. import schema as S
from ..javacompat import CRC32_PROPERTY, crc31, crc_from_digits, decode_utf8, parse_properties
from . import arrow_kernels as K
from .batch import decode_columns, decode_columns_at
from .decode import COLUMN, CRC_TEXT, CRC_UNCHECKED, PROPERTY_NAMES
from ..record import format_host
from ..rules import key_words
from .walk import BATCH_ROWS, Chunk, RowDecode

SCALARS = [
    ("file", pa.string()), ("position", pa.int32()), ("commitLogOffset", pa.int64()), ("storeSize", pa.int32()),
    ("magicCode", pa.int32()), ("bodyCRC", pa.int32()), ("queueId", pa.int32()), ("flag", pa.int32()),
    ("queueOffset", pa.int64()), ("physicalOffset", pa.int64()), ("sysFlag", pa.int32()),
    ("bornTimestamp", pa.int64()), ("bornHost", pa.string()), ("storeTimestamp", pa.int64()),
    ("storeHost", pa.string()), ("reconsumeTimes", pa.int32()), ("preparedTransactionOffset", pa.int64()),
    ("bodyLength", pa.int32()), ("topic", pa.string()), ("msgId", pa.string()), ("uniqKey", pa.string()),
]  # fmt: skip
RECORD_SCHEMA = pa.schema(SCALARS + [
    ("body", pa.binary()), ("propertiesBytes", pa.binary()), ("properties", pa.map_(pa.string(), pa.string())),
    ("tags", pa.string()), ("keys", pa.list_(pa.string())), ("tranMsg", pa.string()), ("producerGroup", pa.string()),
    ("multiDispatch", pa.string()), ("multiQueueOffset", pa.string()), ("crcOk", pa.bool_()),
])  # fmt: skip
# A DLedger store's rows also carry their entry, as `dump commitlog` shows it (dledger.FileEntries.entry).
DLEDGER_FIELD = pa.field("dledger", pa.struct([(name, pa.int64()) for name in S.DLEDGER_DUMP_FIELDS]))
DLEDGER_RECORD_SCHEMA = RECORD_SCHEMA.append(DLEDGER_FIELD)
PROPERTY_COLUMNS = {
    "uniqKey": "UNIQ_KEY",
    "tags": "TAGS",
    "tranMsg": "TRAN_MSG",
    "producerGroup": "PGROUP",
    "multiDispatch": "INNER_MULTI_DISPATCH",
    "multiQueueOffset": "INNER_MULTI_QUEUE_OFFSET",
}


def record_schema(dledger_entries: bool) -> pa.Schema:
    """The schema of a scan's batches: RECORD_SCHEMA, and the entry of each record in a DLedger store."""
    return DLEDGER_RECORD_SCHEMA if dledger_entries else RECORD_SCHEMA


def _validity(present: np.ndarray) -> pa.Buffer | None:
    return None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))


def span_column(u8: np.ndarray, lo: np.ndarray, hi: np.ndarray, kind: pa.DataType, present=None) -> pa.Array:
    """The bytes u8[lo:hi] of each row as one Arrow string or binary column (null where not `present`)."""
    lo = np.ascontiguousarray(lo, np.int64)
    hi = np.ascontiguousarray(hi, np.int64)
    data = arrow_bytes(int(np.maximum(hi - lo, 0)[lo >= 0].sum()))
    offsets = arrow_bytes(4 * (len(lo) + 1))
    K.gather(u8, lo, hi, np.frombuffer(data, np.uint8), np.frombuffer(offsets, np.int32))
    mask = None if present is None else _validity(present)
    return pa.Array.from_buffers(kind, len(lo), [mask, offsets, data])


def arrow_bytes(size: int) -> pa.Buffer:
    """A buffer from Arrow's memory pool, which keeps what earlier batches freed: a batch's columns reuse
    their pages (fresh ones from the system are faulted in and zeroed, page by page, every batch)."""
    return pa.allocate_buffer(max(size, 8))  # (numpy cannot view an empty buffer)


def text_column(chunk: Chunk, lo, hi) -> pa.Array:
    """A string column of spans (null where lo < 0) decoded as Java decodes them, for batches with text that is
    not well-formed UTF-8."""
    return pa.array([decode_utf8(chunk.u8[a:b].tobytes()) if a >= 0 else None for a, b in zip(lo, hi)], pa.string())


def host_column(chunk: Chunk, side: str) -> pa.Array:
    """A host column as the reference writes it (format_host): for batches with an IPv6 host."""
    ip_at, port, v6 = chunk.column(f"{side}.ip"), chunk.column(f"{side}.port"), chunk.column("combo") & V6_BIT[side]
    width = np.where(v6 != 0, 16, 4)
    return pa.array(
        [format_host(chunk.u8[a : a + w].tobytes(), int(p)) for a, w, p in zip(ip_at, width, port)], pa.string()
    )


def msgid_column(chunk: Chunk, store_v6: np.ndarray) -> pa.Array:
    ip_len = np.where(store_v6, 16, 4).astype(np.int64)
    out = np.empty(int((ip_len + 12).sum()) * 2, np.uint8)
    offsets = np.empty(len(chunk) + 1, np.int32)
    K.msgid_texts(
        chunk.u8,
        np.ascontiguousarray(chunk.column("position")),
        np.ascontiguousarray(chunk.column("storeHost.ip")),
        ip_len,
        out,
        offsets,
    )
    return pa.Array.from_buffers(pa.string(), len(chunk), [None, pa.py_buffer(offsets), pa.py_buffer(out)])


def properties_column(chunk: Chunk) -> pa.Array:
    """The properties as the reference parses them, for batches with a property string that is not UTF-8."""
    kind = RECORD_SCHEMA.field("properties").type
    lo, n = chunk.column("propertiesAt"), chunk.column("propertiesLength")
    maps = [
        list(parse_properties(decode_utf8(chunk.u8[a : a + k].tobytes())).items()) if k > 0 else []
        for a, k in zip(lo, n)
    ]
    return pa.array(maps, kind)


def keys_column(chunk: Chunk) -> pa.Array:
    """The KEYS words as the reference splits and decodes them, for batches with a property string that is not UTF-8."""
    kind = RECORD_SCHEMA.field("keys").type
    lo, hi = chunk.column("lo:KEYS"), chunk.column("hi:KEYS")
    return pa.array(
        [None if a < 0 else [decode_utf8(w) for w in key_words(chunk.u8[a:b].tobytes())] for a, b in zip(lo, hi)], kind
    )


def crc_column(chunk: Chunk) -> pa.Array:
    """crcOk, for batches where a __CRC32# value is not ASCII: read as the broker reads it."""
    col = chunk.column
    crc, position = col("crcOk"), col("position")
    ok = crc == 1
    for r in np.flatnonzero(crc == CRC_TEXT):
        lo, hi = col(f"lo:{CRC32_PROPERTY}")[r], col(f"hi:{CRC32_PROPERTY}")[r]
        stored = crc_from_digits(decode_utf8(chunk.u8[lo:hi].tobytes()))
        ok[r] = stored == crc31(chunk.u8[position[r] : position[r] + col("storeSize")[r] - S.CRC32_RESERVED_LEN])
    return pa.array(ok, mask=crc == CRC_UNCHECKED)


# The batch's columns batch_columns writes: int32 and int64 numbers from the decode's columns (then
# commitLogOffset), and the spans gathered as stored: (column, its first byte's, its end's or length's column,
# 1 for a length)
INT32_NAMES = [name for name, kind in SCALARS if kind == pa.int32()]
INT64_NAMES = [name for name, kind in SCALARS if kind == pa.int64() and name != "commitLogOffset"]
FROM32 = np.array([COLUMN[name] for name in INT32_NAMES], np.int64)
FROM64 = np.array([COLUMN[name] for name in INT64_NAMES], np.int64)
SPAN_COLUMNS = [
    ("topic", "topicAt", "topicLength", 1),
    *((name, f"lo:{prop}", f"hi:{prop}", 0) for name, prop in PROPERTY_COLUMNS.items()),
    ("body", "bodyAt", "bodyLength", 1),
    ("propertiesBytes", "propertiesAt", "propertiesLength", 1),
]
SPANS = np.array([(COLUMN[lo], COLUMN[end], is_length) for _, lo, end, is_length in SPAN_COLUMNS], np.int64)
NSPANS = len(SPAN_COLUMNS)
NDATA = NSPANS + K.NDATA_AFTER_SPANS
NROWS = NSPANS + K.NROWS_AFTER_SPANS
NBITS = NSPANS + K.NBITS_AFTER_SPANS
V6_BIT = {"bornHost": K.BORN_V6, "storeHost": K.STORE_V6}
# what record_batch asks of the schemas once per batch, looked up once (a pyarrow lookup or a DataType made
# anew costs microseconds, and a batch made some fifty of them)
SPAN_TYPES = [(name, RECORD_SCHEMA.field(name).type, name in PROPERTY_COLUMNS) for name, *_ in SPAN_COLUMNS]
INT32, INT64 = pa.int32(), pa.int64()
RECORD_NAMES, DLEDGER_RECORD_NAMES = RECORD_SCHEMA.names, DLEDGER_RECORD_SCHEMA.names
MAP_TYPE, KEYS_TYPE = RECORD_SCHEMA.field("properties").type, RECORD_SCHEMA.field("keys").type


def _list_only_count() -> int:
    held = [np.empty(1, np.uint8)]
    return sys.getrefcount(held[0])


LIST_ONLY = _list_only_count()


class Arenas:
    """Memory one scan's batches reuse: each batch's buffers are carved out of one block, and a block is used
    again once nothing holds the batch made of it (Arrow's buffers hold their block, through the buffer protocol,
    while any array or view of them lives: its reference count is back to the pool's own). A block allocated anew
    for each batch is a fresh mapping from the system, which waits for the address space's lock while the pager
    thread maps pages in (docs/performance.md)."""

    MOST = 16  # blocks kept (free or in use); past it, a new block is not kept

    def __init__(self):
        self._blocks: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> np.ndarray:
        """`size` bytes, 64-byte aligned (a view of a block: the block is in use while it lives)."""
        with self._lock:
            for i in range(len(self._blocks)):
                if self._free(i) and len(self._blocks[i]) >= size + 64:
                    return self._aligned(self._blocks[i], size)
            block = np.empty(size + size // 8 + 64, np.uint8)  # (room for the next batches' estimates to grow)
            free = [i for i in range(len(self._blocks)) if self._free(i)]
            if free:
                self._blocks[free[0]] = block  # a smaller free block makes way
            elif len(self._blocks) < self.MOST:
                self._blocks.append(block)
            return self._aligned(block, size)

    def _free(self, i: int) -> bool:
        """Block i has no reference but the list's (the count is compared with that of a block only a list
        holds, measured once: how getrefcount counts its own argument differs between Pythons)."""
        return sys.getrefcount(self._blocks[i]) == LIST_ONLY

    @staticmethod
    def _aligned(block: np.ndarray, size: int) -> np.ndarray:
        skip = -block.ctypes.data % 64
        return block[skip : skip + size]


def carve(arenas: Arenas, shapes: list[tuple]) -> list[tuple[pa.Buffer, np.ndarray]]:
    """Buffers of these (dtype, shape)s, each 64-byte aligned, out of one block of `arenas`: each as Arrow's
    buffer and as the kernels' array (both views of the block)."""
    sizes = [math.prod(shape) * np.dtype(dtype).itemsize for dtype, shape in shapes]
    room = [(size + 63) & ~63 for size in sizes]
    memory = arenas.take(sum(room))
    out, at = [], 0
    for (dtype, shape), size, step in zip(shapes, sizes, room):
        view = memory[at : at + size].view(dtype).reshape(shape)
        out.append((pa.py_buffer(view), view))
        at += step
    return out


class BatchBuffers:
    """A batch's Arrow buffers, allocated from Arrow's pool for up to `rows` rows, with `room` bytes for each data
    section, room for `items` map entries and KEYS words, and a scratch for `most` entries of one record; filled
    row by row by put_row (as the walk decodes, or from a chunk's decoded rows), then wrapped (`done`)."""

    def __init__(self, rows: int, room: np.ndarray, items: int, most: int, arenas: Arenas | None = None):
        self.rows = rows
        self.bytes_per_bits = (rows + 7) // 8
        self.counts = np.zeros(NDATA + NBITS + 3, np.int64)
        self.values = np.empty((2, len(PROPERTY_NAMES)), np.int64)
        self.at, self.item_row = self.sections(room), items + 1
        shapes = [
            (np.int32, (len(FROM32), rows)),
            (np.int64, (len(FROM64) + 1, rows)),
            (np.int32, (NROWS, rows + 1)),
            (np.uint8, (NBITS, self.bytes_per_bits)),
            (np.int32, (3, self.item_row)),
            (np.uint8, (int(self.at[-1]),)),
        ]
        made = carve(arenas, shapes) if arenas is not None else [self.buffer(*shape) for shape in shapes]
        (self.ints32, self.i32), (self.ints64, self.i64), (self.offsets, self.row_offsets) = made[:3]
        (self.bits, self.row_bits), (self.items, self.item_offsets), (self.data, self.bytes) = made[3:]
        self.scratch = np.empty((4, most), np.int64)

    @staticmethod
    def sections(room: np.ndarray) -> np.ndarray:
        """Where each data section of `room` bytes starts (64-byte aligned), and their end."""
        at = np.zeros(NDATA + 1, np.int64)
        np.cumsum((np.asarray(room, np.int64) + 63) & ~63, out=at[1:])
        return at

    def lay_out(self, room: np.ndarray, items: int, most: int):
        """Data sections of `room` bytes, `items` entries and words, a scratch for `most`."""
        self.at, self.item_row = self.sections(room), items + 1
        self.items, self.item_offsets = self.buffer(np.int32, (3, self.item_row))
        self.data, self.bytes = self.buffer(np.uint8, (int(self.at[-1]),))
        self.scratch = np.empty((4, most), np.int64)

    def grow(self, room: np.ndarray, items: int, most: int):
        """Lay the sections out anew (at least as large), what the rows so far wrote kept."""
        at, data, item_offsets, used = self.at, self.bytes, self.item_offsets, self.counts[:NDATA]
        self.lay_out(room, items, most)
        for k in range(NDATA):
            self.bytes[self.at[k] : self.at[k] + used[k]] = data[at[k] : at[k] + used[k]]
        self.item_offsets[:, : item_offsets.shape[1]] = item_offsets

    @classmethod
    def gathered(cls, chunk: Chunk) -> "BatchBuffers":
        """The buffers of a chunk's rows (taken out of a walk's order: Chunk.select), from its decoded columns."""
        at = np.empty(NDATA + 1, np.int64)
        entries, words, most = K.batch_layout(chunk.cols, SPANS, at)
        b = cls(len(chunk), np.diff(at), max(entries, words), most)
        K.batch_columns(chunk.u8, chunk.cols, chunk.file.start, b.kernel_buffers())
        return b.done(len(chunk))

    def kernel_buffers(self) -> tuple:
        """The buffers as the kernels that fill them take them (arrow_kernels.BUFFERS)."""
        return (
            FROM32, FROM64, SPANS, self.i32, self.i64, self.row_offsets, self.row_bits, self.item_offsets,
            self.bytes, self.at, self.scratch, self.values, self.counts,
        )  # fmt: skip

    def done(self, n: int) -> "BatchBuffers":
        """Its first n rows, as filled."""
        self.n = n
        self.used = self.counts[:NDATA]
        self.present = self.counts[NDATA : NDATA + NBITS]
        self.entries, self.words, self.flags = (int(v) for v in self.counts[NDATA + NBITS :])
        return self

    @staticmethod
    def buffer(dtype, shape: tuple) -> tuple[pa.Buffer, np.ndarray]:
        count = math.prod(shape)  # (np.prod of a tuple: some 5 us)
        buf = arrow_bytes(count * np.dtype(dtype).itemsize)
        return buf, np.frombuffer(buf, dtype, count).reshape(shape)

    def number(self, kind: pa.DataType, k: int) -> pa.Array:
        """Number column k of kind INT32 or INT64."""
        buf, width = (self.ints32, 4) if kind is INT32 else (self.ints64, 8)
        return pa.Array.from_buffers(kind, self.n, [None, buf.slice(k * self.rows * width, self.n * width)])

    def offsets_of(self, k: int) -> pa.Buffer:
        return self.offsets.slice(k * 4 * (self.rows + 1), 4 * (self.n + 1))

    def bits_of(self, k: int) -> pa.Buffer:
        return self.bits.slice(k * self.bytes_per_bits, (self.n + 7) // 8)

    def validity(self, k: int) -> tuple[pa.Buffer | None, int]:
        nulls = self.n - int(self.present[k])
        return (self.bits_of(k) if nulls else None), nulls

    def texts(self, kind: pa.DataType, k: int, nullable: bool = False) -> pa.Array:
        """Text or bytes column k (a span column, then the hosts' and msgId's)."""
        mask, nulls = self.validity(k) if nullable else (None, 0)
        offsets = self.offsets_of(k)
        data = self.data.slice(int(self.at[k]), int(self.used[k]))
        return pa.Array.from_buffers(kind, self.n, [mask, offsets, data], null_count=nulls)

    def items_texts(self, row: int, count: int, section: int) -> pa.Array:
        offsets = self.items.slice(row * 4 * self.item_row, 4 * (count + 1))
        data = self.data.slice(int(self.at[section]), int(self.used[section]))
        return pa.Array.from_buffers(pa.string(), count, [None, offsets, data])

    def properties(self) -> pa.Array:
        kind = MAP_TYPE
        names = self.items_texts(0, self.entries, NSPANS + K.ENTRY_NAMES)
        values = self.items_texts(1, self.entries, NSPANS + K.ENTRY_VALUES)
        entries = pa.StructArray.from_arrays([names, values], fields=[kind.key_field, kind.item_field])
        offsets = self.offsets_of(NSPANS + K.PROPERTY_MAP)
        return pa.Array.from_buffers(kind, self.n, [None, offsets], children=[entries])

    def keys(self) -> pa.Array:
        kind = KEYS_TYPE
        words = self.items_texts(2, self.words, NSPANS + K.KEY_WORDS)
        mask, nulls = self.validity(NSPANS + K.KEY_LIST)
        offsets = self.offsets_of(NSPANS + K.KEY_LIST)
        return pa.Array.from_buffers(kind, self.n, [mask, offsets], null_count=nulls, children=[words])

    def crc_ok(self) -> pa.Array:
        mask, nulls = self.validity(NSPANS + K.CRC_VALID)
        values = self.bits_of(NSPANS + K.CRC_VALUE)
        return pa.Array.from_buffers(pa.bool_(), self.n, [mask, values], null_count=nulls)


@functools.lru_cache(maxsize=4)
def _repeated(text: str, n: int) -> pa.Array:
    word = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(word))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(word * n)])


def repeated_text(text: str, n: int) -> pa.Array:
    """`text` n times as a string column (pa.repeat of a Python str imports pandas, ~0.5 s, to look at it): a
    slice of one column per text made for a batch's most rows, so a file's batches share it."""
    return _repeated(text, max(n, BATCH_ROWS)).slice(0, n)


def record_batch(chunk: Chunk) -> pa.RecordBatch:
    """The records of one chunk as a RecordBatch of RECORD_SCHEMA: every column from the buffers the walk filled
    as it decoded them (ArrowDecode), or from one compiled pass over its rows (BatchBuffers.gathered); the
    reference's Python renders what that pass leaves to it (IPv6 hosts, text that is not well-formed UTF-8, a
    __CRC32# value that is not ASCII) for the batches that have it."""
    b = chunk.filled if chunk.filled is not None else BatchBuffers.gathered(chunk)
    arrays = {"commitLogOffset": b.number(INT64, len(FROM64))}
    arrays.update((name, b.number(INT32, k)) for k, name in enumerate(INT32_NAMES))
    arrays.update((name, b.number(INT64, k)) for k, name in enumerate(INT64_NAMES))
    for k, (name, kind, nullable) in enumerate(SPAN_TYPES):
        arrays[name] = b.texts(kind, k, nullable)
    for k, name in enumerate(("bornHost", "storeHost", "msgId")):
        arrays[name] = b.texts(pa.string(), NSPANS + k)
    arrays["properties"], arrays["keys"], arrays["crcOk"] = b.properties(), b.keys(), b.crc_ok()
    if len(chunk) != b.n:  # the walk's `start` or `end` cut the batch it decoded
        arrays = {name: column.slice(chunk.first, len(chunk)) for name, column in arrays.items()}
    arrays["file"] = repeated_text(chunk.file.name, len(chunk))
    if b.flags:
        render_the_rest(chunk, b.flags, arrays)
    schema = record_schema(chunk.entries is not None)
    if chunk.entries is not None:
        arrays["dledger"] = pa.StructArray.from_arrays(
            [pa.array(column) for column in chunk.entries.T], fields=list(DLEDGER_FIELD.type)
        )
    names = RECORD_NAMES if chunk.entries is None else DLEDGER_RECORD_NAMES
    return pa.RecordBatch.from_arrays([arrays[name] for name in names], schema=schema)


class ArrowDecode(RowDecode):
    """The walk's decode that fills each batch's Arrow buffers as it decodes its records (decode_columns): the
    Chunks it makes carry them (`filled`) for record_batch. The buffers are sized ahead from the bytes a batch may
    take, at the most each section took per byte of records in the batches before (one scan's batches are alike);
    a batch they turn out too small for is grown where it stopped (ROOM) and goes on."""

    MARGIN = 1.125  # of the estimate: a batch's last record goes past its bytes
    SLACK = 4096  # bytes of each section beyond the estimate

    def __init__(self):
        self.arenas = Arenas()
        self.ratio = np.zeros(NDATA)  # the most bytes each data section took per byte of records
        self.items_ratio = 0.0  # the most map entries or KEYS words per byte of records
        self.most = 64  # the most map entries of one record seen

    def decode(self, u8, pos, limit, allow_v2, check_crc, max_bytes, cols, file_start):
        b, first, n = self.buffers(len(cols), min(max_bytes, limit - pos)), pos, 0
        while True:
            n, pos, outcome = decode_columns(
                u8, pos, first, limit, allow_v2, check_crc, max_bytes, cols, n, file_start, b.kernel_buffers()
            )
            if outcome != K.ROOM:
                return n, pos, outcome, self.learned(b.done(n), pos - first)
            self.grow(b, pos - first, min(max_bytes, limit - first), int.from_bytes(u8[pos : pos + 4], "big"))

    def decode_at(self, u8, starts, ends, i, allow_v2, check_crc, max_bytes, cols, file_start):
        budget = min(max_bytes, int(ends[-1] - starts[i])) if i < len(starts) else 0
        b, n, taken = self.buffers(len(cols), budget), 0, 0
        while True:
            n, i, taken, outcome = decode_columns_at(
                u8, starts, ends, i, taken, allow_v2, check_crc, max_bytes, cols, n, file_start, b.kernel_buffers()
            )
            if outcome != K.ROOM:
                return n, i, outcome, self.learned(b.done(n), taken)
            self.grow(b, taken, budget, int(ends[i] - starts[i]))

    def buffers(self, rows: int, budget: int) -> BatchBuffers:
        room = (self.ratio * (budget * self.MARGIN)).astype(np.int64) + self.SLACK
        return BatchBuffers(rows, room, int(self.items_ratio * budget * self.MARGIN) + 64, self.most, self.arenas)

    def grow(self, b: BatchBuffers, taken: int, budget: int, size: int):
        """Room for the record of `size` bytes the batch stopped at, and for the rest of its `budget` bytes at
        the rate of the `taken` bytes so far."""
        rate = budget * self.MARGIN / max(taken, 1)
        used, entries, words = b.counts[:NDATA], *b.counts[NDATA + NBITS : NDATA + NBITS + 2]
        room = np.maximum(2 * np.diff(b.at), (used * rate).astype(np.int64)) + size + self.SLACK
        items = max(2 * b.item_row, int(max(entries, words) * rate)) + size
        self.most = max(self.most, b.scratch.shape[1], size // 3 + 2)
        b.grow(room, items, self.most)

    def learned(self, b: BatchBuffers, taken: int) -> BatchBuffers:
        if taken > 0:
            np.maximum(self.ratio, b.used / taken, out=self.ratio)
            self.items_ratio = max(self.items_ratio, max(b.entries, b.words) / taken)
        return b


def render_the_rest(chunk: Chunk, flags: int, arrays: dict):
    """The columns batch_columns leaves to the reference in this batch (its flags), rendered by it."""
    for side in ("bornHost", "storeHost"):
        if flags & V6_BIT[side]:
            arrays[side] = host_column(chunk, side)
    if flags & K.TOPIC_TEXT:
        lo = chunk.column("topicAt")
        arrays["topic"] = text_column(chunk, lo, lo + chunk.column("topicLength"))
    if flags & K.PROPERTIES_TEXT:
        for name, prop in PROPERTY_COLUMNS.items():
            arrays[name] = text_column(chunk, chunk.column(f"lo:{prop}"), chunk.column(f"hi:{prop}"))
        arrays["properties"], arrays["keys"] = properties_column(chunk), keys_column(chunk)
    if flags & K.CRC_AS_TEXT:
        arrays["crcOk"] = crc_column(chunk)
