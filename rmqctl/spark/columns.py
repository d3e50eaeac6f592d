"""Store rows as Arrow record batches, built column by column from what the library decodes: commitlog
messages through `read_record` + `message_dict` (the `dump commitlog` fields), consumequeue units and index
entries through the store's numpy views. Column names and Spark types are declared once here; the Arrow
schema is derived from them by Spark's own conversion, so a batch always matches what the JVM expects.
"""
from __future__ import annotations

import operator
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from .. import schema as S
from ..dispatch import KEY_SEPARATOR
from ..record import Message, message_dict, property_crc_state
from ..store import CommitLogScan, ConsumeQueue, IndexFile, MappedFile

STRING, INT, LONG = StringType(), IntegerType(), LongType()

# The dump contract's fields keep their names and order; body is the stored bytes.
DUMP_SCALARS: list[tuple[str, DataType]] = [
    ("file", STRING), ("position", INT), ("commitLogOffset", LONG), ("storeSize", INT), ("magicCode", INT),
    ("bodyCRC", INT), ("queueId", INT), ("flag", INT), ("queueOffset", LONG), ("physicalOffset", LONG),
    ("sysFlag", INT), ("bornTimestamp", LONG), ("bornHost", STRING), ("storeTimestamp", LONG), ("storeHost", STRING),
    ("reconsumeTimes", INT), ("preparedTransactionOffset", LONG), ("bodyLength", INT), ("topic", STRING),
    ("msgId", STRING), ("uniqKey", STRING),
]  # fmt: skip
COMMITLOG_COLUMNS = (
    [("store", STRING)] + DUMP_SCALARS
    + [("body", BinaryType()), ("properties", MapType(STRING, STRING)), ("tags", STRING),
       ("keys", ArrayType(STRING))]
)  # fmt: skip
CRC_COLUMN = ("crcOk", BooleanType())
PICK_SCALARS = operator.itemgetter(*(name for name, _ in DUMP_SCALARS))

CONSUMEQUEUE_COLUMNS = [
    ("store", STRING), ("topic", STRING), ("queueId", INT), ("queueOffset", LONG), ("file", STRING),
    ("position", INT), ("commitLogOffset", LONG), ("size", INT), ("tagsCode", LONG),
]  # fmt: skip

INDEX_COLUMNS = [
    ("store", STRING), ("file", STRING), ("index", INT), ("keyHash", INT), ("slot", INT), ("phyOffset", LONG),
    ("timeDiff", INT), ("prevIndex", INT),
]  # fmt: skip

BATCH_ROWS = 4096


def struct(columns: list[tuple[str, DataType]]) -> StructType:
    return StructType([StructField(name, kind) for name, kind in columns])


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for `schema` (it checks batches against exactly this)."""
    return to_arrow_schema(schema, timezone="UTC")


def message_keys(m: Message) -> list[str] | None:
    """The KEYS words the broker indexes (split on the separator, empty words skipped); None without KEYS."""
    keys = m.keys
    return None if keys is None else [k for k in keys.split(KEY_SEPARATOR) if k]


def crc_ok(buf, m: Message) -> bool:
    """The stored CRCs hold: the body CRC, and the property CRC (5.x `__CRC32#`) where the record has one."""
    if not m.body_crc_ok():
        return False
    state = property_crc_state(buf, m.position, m)
    return state is None or state[0] == state[1]


class MessageBatcher:
    """Collects decoded messages column-wise; `batch()` turns what it holds into one RecordBatch."""

    def __init__(self, schema: pa.Schema, store: str, verify_crc: bool):
        self.schema = schema
        self.store = store
        self.verify_crc = verify_crc
        self._reset()

    def _reset(self):
        self.scalar_rows: list[tuple] = []
        self.bodies: list[bytes] = []
        self.prop_offsets = [0]
        self.prop_keys: list[str] = []
        self.prop_values: list[str] = []
        self.tags: list[str | None] = []
        self.key_ends: list[int] = []
        self.key_null: list[bool] = []
        self.key_words: list[str] = []
        self.crc: list[bool] = []

    def __len__(self):
        return len(self.bodies)

    def add(self, f: MappedFile, m: Message):
        row = message_dict(m, f.name, f.start, body="none")
        self.scalar_rows.append(PICK_SCALARS(row))
        self.bodies.append(m.body)
        props = row["properties"]
        self.prop_keys.extend(props)
        self.prop_values.extend(props.values())
        self.prop_offsets.append(len(self.prop_keys))
        self.tags.append(props.get("TAGS"))
        keys = message_keys(m)
        self.key_null.append(keys is None)
        if keys:
            self.key_words.extend(keys)
        self.key_ends.append(len(self.key_words))
        if self.verify_crc:
            self.crc.append(crc_ok(f.buf, m))

    def batch(self) -> pa.RecordBatch:
        fields = {f.name: f.type for f in self.schema}
        n = len(self.bodies)
        arrays = {"store": pa.array([self.store] * n, pa.string())}
        for (name, _), values in zip(DUMP_SCALARS, zip(*self.scalar_rows)):
            arrays[name] = pa.array(values, fields[name])
        arrays["body"] = pa.array(self.bodies, pa.binary())
        arrays["properties"] = pa.MapArray.from_arrays(
            pa.array(self.prop_offsets, pa.int32()), pa.array(self.prop_keys, pa.string()),
            pa.array(self.prop_values, pa.string()), type=fields["properties"])
        arrays["tags"] = pa.array(self.tags, pa.string())
        arrays["keys"] = pa.ListArray.from_arrays(
            pa.array([0] + self.key_ends, pa.int32()), pa.array(self.key_words, pa.string()), type=fields["keys"],
            mask=pa.array(self.key_null, pa.bool_()))
        if self.verify_crc:
            arrays["crcOk"] = pa.array(self.crc, pa.bool_())
        self._reset()
        return pa.RecordBatch.from_arrays([arrays[f.name] for f in self.schema], schema=self.schema)


def message_batches(scan: CommitLogScan, start: int, end: int, schema: pa.Schema, store: str, verify_crc: bool,
                    topics: frozenset[str] | None) -> Iterator[pa.RecordBatch]:
    """The messages of the commitlog range [start, end) (one file, for a partition), BATCH_ROWS at a time.
    Damage ends the file, as it does for `dump commitlog`; it is left in `scan.errors` for the caller."""
    batcher = MessageBatcher(schema, store, verify_crc)
    for f, m in scan.records(start, end):
        if topics is not None and m.topic not in topics:
            continue
        batcher.add(f, m)
        if len(batcher) >= BATCH_ROWS:
            yield batcher.batch()
    if len(batcher):
        yield batcher.batch()


def consumequeue_batches(cq: ConsumeQueue, schema: pa.Schema, store: str) -> Iterator[pa.RecordBatch]:
    """Every written unit of one queue, one batch per file; like ConsumeQueue.entries, reading stops at the
    first unwritten unit."""
    for first, f, written, arr in cq.units():
        units = arr[:written]
        idx = np.arange(written, dtype=np.int64)
        columns = {
            "store": pa.array([store] * written, pa.string()),
            "topic": pa.array([cq.topic] * written, pa.string()),
            "queueId": pa.array(np.full(written, cq.queue_id, dtype=np.int32)),
            "queueOffset": pa.array(first + idx),
            "file": pa.array([f.name] * written, pa.string()),
            "position": pa.array((idx * S.CQ_UNIT_SIZE).astype(np.int32)),
            "commitLogOffset": pa.array(units["commitLogOffset"].astype(np.int64)),
            "size": pa.array(units["size"].astype(np.int32)),
            "tagsCode": pa.array(units["tagsCode"].astype(np.int64)),
        }
        if written:
            yield pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
        if written < len(arr):
            return


def index_batches(ix: IndexFile, schema: pa.Schema, store: str) -> Iterator[pa.RecordBatch]:
    """The used entries 1..indexCount-1 of one index file (entry 0 is never written), as `dump index`."""
    arr = ix.entries()
    used = arr[1 : max(1, min(ix.index_count, len(arr)))]
    n = len(used)
    if not n:
        return
    key_hash = used["keyHash"].astype(np.int64)
    # store.index_slot, vectorised: abs(hash), 0 for Integer.MIN_VALUE; then the slot is hash % slots
    slot = np.where(key_hash == -(1 << 31), 0, np.abs(key_hash)) % ix.slot_num
    columns = {
        "store": pa.array([store] * n, pa.string()),
        "file": pa.array([ix.name] * n, pa.string()),
        "index": pa.array(np.arange(1, n + 1, dtype=np.int32)),
        "keyHash": pa.array(used["keyHash"].astype(np.int32)),
        "slot": pa.array(slot.astype(np.int32)),
        "phyOffset": pa.array(used["phyOffset"].astype(np.int64)),
        "timeDiff": pa.array(used["timeDiff"].astype(np.int32)),
        "prevIndex": pa.array(used["prevIndex"].astype(np.int32)),
    }
    for start in range(0, n, 1 << 20):
        yield pa.RecordBatch.from_arrays([columns[f.name].slice(start, 1 << 20) for f in schema], schema=schema)
