"""Store rows as Arrow record batches: commitlog messages as the engine's batches (rmqctl.engine.columns,
the `dump commitlog` fields), consumequeue units and index entries through the store's numpy views. Column
names and Spark types are declared once here (the commitlog's from the engine's batch); the Arrow schema is
derived from them by Spark's own conversion, so a batch always matches what the JVM expects.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
from ..engine.columns import SCALARS, record_batch
from ..native.record import index_slots
from ..errors import StoreError
from ..store import CommitLogScan, ConsumeQueue, IndexFile

STRING, INT, LONG = StringType(), IntegerType(), LongType()

# The dump contract's fields keep their names and order (the engine's batch declares them); body is the
# stored bytes.
SPARK_TYPES = {pa.string(): STRING, pa.int32(): INT, pa.int64(): LONG}
DUMP_SCALARS: list[tuple[str, DataType]] = [(name, SPARK_TYPES[kind]) for name, kind in SCALARS]
COMMITLOG_COLUMNS = (
    [("store", STRING)] + DUMP_SCALARS
    + [("body", BinaryType()), ("properties", MapType(STRING, STRING)), ("tags", STRING),
       ("keys", ArrayType(STRING))]
)  # fmt: skip
CRC_COLUMN = ("crcOk", BooleanType())

CONSUMEQUEUE_COLUMNS = [
    ("store", STRING), ("topic", STRING), ("queueId", INT), ("queueOffset", LONG), ("file", STRING),
    ("position", INT), ("commitLogOffset", LONG), ("size", INT), ("tagsCode", LONG),
]  # fmt: skip

INDEX_COLUMNS = [
    ("store", STRING), ("file", STRING), ("index", INT), ("keyHash", INT), ("slot", INT), ("phyOffset", LONG),
    ("timeDiff", INT), ("prevIndex", INT),
]  # fmt: skip


def struct(columns: list[tuple[str, DataType]]) -> StructType:
    return StructType([StructField(name, kind) for name, kind in columns])


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for `schema` (it checks batches against exactly this)."""
    return to_arrow_schema(schema, timezone="UTC")


def message_batches(scan: CommitLogScan, start: int, end: int, schema: pa.Schema, store: str, verify_crc: bool,
                    topics: frozenset[str] | None) -> Iterator[pa.RecordBatch]:
    """The messages of the commitlog range [start, end) (one file, for a partition), as the engine decodes
    them (its bounded batches, taken column by column). Damage ends the file, as it does for `dump
    commitlog`; it is left in `scan.errors` for the caller."""
    if not hasattr(scan, "chunks"):
        raise StoreError("a DLedger-mode store: the `rocketmq` source reads plain commitlog files only (its entries "
                         "wrap the records); `rmqctl dump commitlog` reads it", store)
    wanted = None if topics is None else pa.array(sorted(topics), pa.string())
    for chunk in scan.chunks(start, end, verify_crc):
        batch = record_batch(chunk)
        if wanted is not None:
            batch = batch.filter(pc.is_in(batch.column("topic"), wanted))
        columns = [pa.repeat(store, len(batch)) if field.name == "store" else batch.column(field.name)
                   for field in schema]
        columns = [c if c.type == field.type else c.cast(field.type) for c, field in zip(columns, schema)]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


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
        del units, columns
        f.release()  # a task reads many queues: only the file at hand stays mapped
        if written < len(arr):
            return


INDEX_BATCH_ENTRIES = 1 << 20  # entries decoded per batch: a task's memory is one batch, not one file


def index_batches(ix: IndexFile, schema: pa.Schema, store: str) -> Iterator[pa.RecordBatch]:
    """The used entries 1..indexCount-1 of one index file (entry 0 is never written), as `dump index`, a
    batch of entries at a time."""
    arr = ix.entries()
    used = arr[1 : max(1, min(ix.index_count, len(arr)))]
    for start in range(0, len(used), INDEX_BATCH_ENTRIES):
        part = used[start : start + INDEX_BATCH_ENTRIES]
        n = len(part)
        key_hash = part["keyHash"].astype(np.int64)
        columns = {
            "store": pa.repeat(store, n),
            "file": pa.repeat(ix.name, n),
            "index": pa.array(np.arange(start + 1, start + n + 1, dtype=np.int32)),
            "keyHash": pa.array(part["keyHash"].astype(np.int32)),
            "slot": pa.array(index_slots(key_hash, ix.slot_num).astype(np.int32)),
            "phyOffset": pa.array(part["phyOffset"].astype(np.int64)),
            "timeDiff": pa.array(part["timeDiff"].astype(np.int32)),
            "prevIndex": pa.array(part["prevIndex"].astype(np.int32)),
        }
        yield pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
