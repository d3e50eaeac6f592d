"""Store rows as Arrow record batches: commitlog messages as the engine's batches (rmqctl.engine.columns,
the `dump commitlog` fields), consumequeue units and index entries through the store's numpy views. Column
names and Spark types are declared once here (the commitlog's from the engine's batch); the Arrow schema is
derived from them by Spark's own conversion, so a batch always matches what the JVM expects.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
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
    TimestampType,
)

from .. import schema as S
from ..engine import DLEDGER_FIELD, SCALARS, Chunk, index_slots, record_batch
from ..dledger import DLedgerScan
from ..views.annotate import COMPRESSION_NAMES
from ..views.filters import TRANSACTION_STATES
from ..rocksdbcq import RocksConsumeQueues
from ..store import CommitLogScan, ConsumeQueue, IndexFile

STRING, INT, LONG, BOOL, TIMESTAMP = StringType(), IntegerType(), LongType(), BooleanType(), TimestampType()
SPARK_TYPES = {pa.string(): STRING, pa.int32(): INT, pa.int64(): LONG}
# The store times as Spark timestamps, each beside its raw epoch milliseconds (`<name>Ms`, what dump prints).
TIME_COLUMNS = ("bornTimestamp", "storeTimestamp")
# sysFlag's bits as named columns (MessageSysFlag); the transaction type under the names `dump commitlog
# --sys-flag transaction=...` takes, the compression type (bits 8..10, 0 = legacy zlib) as MessageDecoder names it.
SYSFLAG_COLUMNS = {
    "compressed": (S.COMPRESSED_FLAG, "body is compressed"), "multiTags": (S.MULTI_TAGS_FLAG, "multiple tags"),
    "bornHostV6": (S.BORNHOST_V6_FLAG, "bornHost is IPv6"), "storeHostV6": (S.STOREHOSTADDRESS_V6_FLAG, "storeHost is IPv6"),
    "needUnwrap": (S.NEED_UNWRAP_FLAG, "5.x: needs unwrapping"), "innerBatch": (S.INNER_BATCH_FLAG, "5.x: inner batch"),
}  # fmt: skip
TRANSACTION_TYPES = {bits: name for name, bits in TRANSACTION_STATES.items()}
COMPRESSION_TYPES = {0: "ZLIB", **COMPRESSION_NAMES}
# What each dump field holds (the `rocketmq` source's columns keep the dump contract's names and order).
ABOUT_DUMP = {
    "file": "commitlog file name (its start offset, 20 digits)",
    "position": "record's position in its file",
    "commitLogOffset": "record's offset in the commitlog",
    "storeSize": "record length in bytes",
    "magicCode": "record magic (V1 or V2)",
    "bodyCRC": "stored CRC32 of the body",
    "queueId": "queue id",
    "flag": "message flag",
    "queueOffset": "offset in its consumequeue",
    "physicalOffset": "stored physical offset",
    "sysFlag": "raw sysFlag (decoded in the columns after keys)",
    "bornTimestamp": "producer's send time (UTC)",
    "bornHost": "producer address, host:port (IPv4 or IPv6)",
    "storeTimestamp": "broker's store time (UTC)",
    "storeHost": "broker address, host:port",
    "reconsumeTimes": "redelivery count",
    "preparedTransactionOffset": "offset of the prepared half message",
    "bodyLength": "stored body length",
    "topic": "topic",
    "msgId": "offset msgId (store host and commitLogOffset, hex)",
    "uniqKey": "UNIQ_KEY property: the client's message id",
}


def message_columns() -> list[tuple[str, DataType, str]]:
    """The `rocketmq` source's (and `spark export`'s) columns, in order: name, Spark type, what it holds.
    The one declaration behind the DataFrame schema, the Parquet/ORC files, `rmqctl spark schema` and the
    table in docs/spark.md."""
    out = [("store", STRING, "store root the message was read from (absolute path)")]
    for name, kind in SCALARS:
        if name in TIME_COLUMNS:
            out.append((name, TIMESTAMP, ABOUT_DUMP[name]))
            out.append((f"{name}Ms", LONG, f"{name} as stored: epoch milliseconds"))
        else:
            out.append((name, SPARK_TYPES[kind], ABOUT_DUMP[name]))
    out += [
        ("body", BinaryType(), "body bytes as stored (compressed when `compressed`)"),
        ("properties", MapType(STRING, STRING), "every property, as MessageDecoder parses them"),
        ("tags", STRING, "TAGS property"),
        ("keys", ArrayType(STRING), "KEYS property split into words (what the index holds)"),
        ("transactionType", STRING, f"sysFlag's transaction bits: {', '.join(TRANSACTION_STATES)}"),
    ]
    out += [(name, BOOL, f"sysFlag 0x{bit:x}: {about}") for name, (bit, about) in SYSFLAG_COLUMNS.items()]
    out.append(
        ("compressionType", STRING, f"{'/'.join(sorted(set(COMPRESSION_TYPES.values())))} when compressed, else null")
    )
    return out


MESSAGE_COLUMNS = message_columns()
COMMITLOG_COLUMNS = [(name, kind) for name, kind, _ in MESSAGE_COLUMNS]
CRC_COLUMN = ("crcOk", BOOL)
# a DLedger store's rows carry their entry (the engine's `dledger` column)
DLEDGER_COLUMN = ("dledger", from_arrow_type(DLEDGER_FIELD.type))


def commitlog_columns(stores) -> list[tuple[str, DataType]]:
    """The `rocketmq` source's columns for these stores: COMMITLOG_COLUMNS, and `dledger` when one is in
    DLedger mode."""
    return COMMITLOG_COLUMNS + ([DLEDGER_COLUMN] if any(s.dledger is not None for s in stores) else [])


CONSUMEQUEUE_COLUMNS = [
    ("store", STRING), ("topic", STRING), ("queueId", INT), ("queueOffset", LONG), ("file", STRING),
    ("position", INT), ("commitLogOffset", LONG), ("size", INT), ("tagsCode", LONG),
    ("storeTimestamp", LONG),  # RocksDB units carry it; file units do not (null)
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


# Spark's TimestampType holds microseconds of years 1..9999; a store time outside that is null there (its
# `<name>Ms` column keeps it).
SPARK_TIME_MS = (-62_135_596_800_000, 253_402_300_799_999)


def timestamp_column(ms: pa.Array) -> pa.Array:
    values = ms.to_numpy(zero_copy_only=False)
    outside = (values < SPARK_TIME_MS[0]) | (values > SPARK_TIME_MS[1])
    micros = np.where(outside, 0, values) * 1000
    return pa.array(micros, pa.timestamp("us", tz="UTC"), mask=outside if outside.any() else None)


# each value of sysFlag's transaction bits and of its compression type bits (8..10), by name
TRANSACTION_NAMES = pa.array([TRANSACTION_TYPES.get(bits) for bits in range(S.TRANSACTION_MASK + 1)], pa.string())
COMPRESSION_KINDS = S.COMPRESSION_TYPE_MASK >> 8
COMPRESSION_TYPE_NAMES = pa.array(
    [COMPRESSION_TYPES.get(k, f"UNKNOWN({k})") for k in range(COMPRESSION_KINDS + 1)], pa.string()
)


def sysflag_columns(sys_flag: pa.Array) -> dict[str, pa.Array]:
    """sysFlag decoded into the named columns of MESSAGE_COLUMNS."""
    flags = sys_flag.to_numpy(zero_copy_only=False).astype(np.int64)
    out = {name: pa.array((flags & bit) != 0) for name, (bit, _) in SYSFLAG_COLUMNS.items()}
    out["transactionType"] = pc.take(TRANSACTION_NAMES, pa.array(flags & S.TRANSACTION_MASK))
    if out["compressed"].true_count:
        named = pc.take(COMPRESSION_TYPE_NAMES, pa.array((flags >> 8) & COMPRESSION_KINDS))
        out["compressionType"] = pc.if_else(out["compressed"], named, pa.scalar(None, pa.string()))
    else:
        out["compressionType"] = pa.nulls(len(flags), pa.string())
    return out


def typed_columns(batch: pa.RecordBatch, names: list[str]) -> dict[str, pa.Array]:
    """The columns of MESSAGE_COLUMNS that the engine's batch does not hold as they are."""
    out = {}
    for name in TIME_COLUMNS:
        out[f"{name}Ms"] = batch.column(name)
        out[name] = timestamp_column(batch.column(name))
    if any(name in SYSFLAG_COLUMNS or name in ("transactionType", "compressionType") for name in names):
        out.update(sysflag_columns(batch.column("sysFlag")))
    return out


def message_batches(
    scan: CommitLogScan | DLedgerScan,
    start: int,
    end: int,
    schema: pa.Schema,
    store: str,
    verify_crc: bool,
    topics: frozenset[str] | None,
    since: int | None = None,
    until: int | None = None,
    group_by: Callable[[Chunk], np.ndarray] | None = None,
    batch: dict[str, int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The messages of the commitlog range [start, end) (one file, for a partition), as the engine decodes
    them (its bounded batches, taken column by column), with the typed columns of MESSAGE_COLUMNS; only
    `topics`, and only those stored in [since, until] (epoch ms, inclusive) when given. Damage ends the
    file, as it does for `dump commitlog`; it is left in `scan.errors` for the caller. `group_by` (a key
    per row of a batch) puts each batch's rows with equal keys together, in commitlog order among them,
    before its columns are gathered: a partitioned writer then takes runs, not a reordered copy. `batch`:
    the engine's batch bounds (rows=, max_bytes=) when not its defaults."""
    wanted = None if topics is None else pa.array(sorted(topics), pa.string())
    fields = list(schema)
    for chunk in scan.chunks(start, end, verify_crc, **(batch or {})):
        if group_by is not None:
            chunk = chunk.select(np.argsort(group_by(chunk), kind="stable"))
        batch = record_batch(chunk)
        keep = []
        if wanted is not None:
            keep.append(pc.is_in(batch.column("topic"), wanted))
        if since is not None:
            keep.append(pc.greater_equal(batch.column("storeTimestamp"), since))
        if until is not None:
            keep.append(pc.less_equal(batch.column("storeTimestamp"), until))
        if keep:
            batch = batch.filter(functools.reduce(pc.and_, keep))
        typed = typed_columns(batch, schema.names)
        present = set(batch.schema.names)
        columns = [
            pa.repeat(store, len(batch))
            if field.name == "store"
            else typed[field.name]
            if field.name in typed
            else batch.column(field.name)
            if field.name in present
            else pa.nulls(len(batch), field.type)  # `dledger` of a plain store's rows beside a DLedger store's
            for field in fields
        ]
        columns = [c if c.type == field.type else c.cast(field.type) for c, field in zip(columns, fields)]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def rocks_consumequeue_batches(
    rocks: RocksConsumeQueues, topic: str, queue_id: int, schema: pa.Schema, store: str
) -> Iterator[pa.RecordBatch]:
    """Every unit of one queue of a RocksDB consume queue, a bounded batch at a time (no file, no position)."""
    for qoffs, units in rocks.units(topic, queue_id):
        n = len(qoffs)
        columns = {
            "store": pa.array([store] * n, pa.string()),
            "topic": pa.array([topic] * n, pa.string()),
            "queueId": pa.array(np.full(n, queue_id, dtype=np.int32)),
            "queueOffset": pa.array(qoffs),
            "file": pa.nulls(n, pa.string()),
            "position": pa.nulls(n, pa.int32()),
            "commitLogOffset": pa.array(units["commitLogOffset"].astype(np.int64)),
            "size": pa.array(units["size"].astype(np.int32)),
            "tagsCode": pa.array(units["tagsCode"].astype(np.int64)),
            "storeTimestamp": pa.array(units["storeTimestamp"].astype(np.int64)),
        }
        yield pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


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
            "storeTimestamp": pa.nulls(written, pa.int64()),
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
