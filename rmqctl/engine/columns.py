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

import numpy as np
import pyarrow as pa

from .. import schema as S
from ..javacompat import CRC32_PROPERTY, crc31, crc_from_digits, decode_utf8, parse_properties
from . import arrow_kernels as K
from .decode import CRC_TEXT, CRC_UNCHECKED, PROPERTIES_NOT_UTF8, TOPIC_NOT_UTF8
from ..record import format_host
from ..rules import key_words
from .walk import Chunk

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


def text_column(chunk: Chunk, lo, hi, bad: np.ndarray, present=None) -> pa.Array:
    """A string column of spans; rows in `bad` (not well-formed UTF-8) decoded as Java decodes them."""
    if not bad.any():
        return span_column(chunk.u8, lo, hi, pa.string(), present)
    present = np.ones(len(lo), bool) if present is None else present
    return pa.array(
        [decode_utf8(chunk.u8[a:b].tobytes()) if p else None for a, b, p in zip(lo, hi, present)], pa.string()
    )


def host_column(chunk: Chunk, side: str, v6: np.ndarray) -> pa.Array:
    ip_at, port = chunk.column(f"{side}.ip"), chunk.column(f"{side}.port")
    if v6.any():
        width = np.where(v6, 16, 4)
        return pa.array(
            [format_host(chunk.u8[a : a + w].tobytes(), int(p)) for a, w, p in zip(ip_at, width, port)], pa.string()
        )
    # "255.255.255.255:-2147483648" (27 bytes) each, and 8 for put_ipv4's last word store
    out = np.empty(len(ip_at) * 27 + 8, np.uint8)
    offsets = np.empty(len(ip_at) + 1, np.int32)
    used = K.host_texts(chunk.u8, np.ascontiguousarray(ip_at), np.ascontiguousarray(port), out, offsets)
    return pa.Array.from_buffers(pa.string(), len(ip_at), [None, pa.py_buffer(offsets), pa.py_buffer(out[:used])])


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


def properties_column(chunk: Chunk, props_lo, props_len, bad: np.ndarray) -> pa.Array:
    kind = RECORD_SCHEMA.field("properties").type
    if bad.any():
        maps = [
            list(parse_properties(decode_utf8(chunk.u8[a : a + n].tobytes())).items()) if n > 0 else []
            for a, n in zip(props_lo, props_len)
        ]
        return pa.array(maps, kind)
    room = K.most_entries(props_len)
    name_lo, name_hi, value_lo, value_hi = (np.empty(room, np.int64) for _ in range(4))
    offsets = np.empty(len(props_lo) + 1, np.int32)
    n = K.property_entries(chunk.u8, props_lo, props_len, name_lo, name_hi, value_lo, value_hi, offsets)
    names = span_column(chunk.u8, name_lo[:n], name_hi[:n], pa.string())
    values = span_column(chunk.u8, value_lo[:n], value_hi[:n], pa.string())
    return pa.MapArray.from_arrays(pa.array(offsets), names, values, type=kind)


def keys_column(chunk: Chunk, lo, hi, bad: np.ndarray) -> pa.Array:
    kind = RECORD_SCHEMA.field("keys").type
    if bad.any():
        return pa.array(
            [None if a < 0 else [decode_utf8(w) for w in key_words(chunk.u8[a:b].tobytes())] for a, b in zip(lo, hi)],
            kind,
        )
    room = int(np.maximum(hi - lo, 0).sum()) // 2 + 1
    word_lo, word_hi = np.empty(room, np.int64), np.empty(room, np.int64)
    offsets = np.empty(len(lo) + 1, np.int32)
    n = K.key_words(chunk.u8, lo, hi, word_lo, word_hi, offsets)
    words = span_column(chunk.u8, word_lo[:n], word_hi[:n], pa.string())
    return pa.ListArray.from_arrays(pa.array(offsets), words, type=kind, mask=pa.array(lo < 0))


def record_batch(chunk: Chunk) -> pa.RecordBatch:
    """The records of one chunk as a RecordBatch of RECORD_SCHEMA."""
    n = len(chunk)
    col = chunk.column
    flags = col("textFlags")
    bad_topic = (flags & TOPIC_NOT_UTF8) != 0
    bad_props = (flags & PROPERTIES_NOT_UTF8) != 0
    combo = col("combo")
    position = col("position")
    props_lo = np.ascontiguousarray(col("propertiesAt"))
    props_len = np.ascontiguousarray(col("propertiesLength"))
    arrays = {"file": pa.repeat(chunk.file.name, n), "commitLogOffset": pa.array(position + chunk.file.start)}
    for name, kind in SCALARS:
        if name not in arrays and kind in (pa.int32(), pa.int64()):
            arrays[name] = pa.array(col(name).astype(kind.to_pandas_dtype()))
    arrays["bornHost"] = host_column(chunk, "bornHost", (combo & 1) != 0)
    arrays["storeHost"] = host_column(chunk, "storeHost", (combo & 2) != 0)
    topic_lo = col("topicAt")
    arrays["topic"] = text_column(chunk, topic_lo, topic_lo + col("topicLength"), bad_topic)
    arrays["msgId"] = msgid_column(chunk, (combo & 2) != 0)
    for name, prop in PROPERTY_COLUMNS.items():
        lo, hi = col(f"lo:{prop}"), col(f"hi:{prop}")
        arrays[name] = text_column(chunk, lo, hi, bad_props, lo >= 0)
    body_lo = col("bodyAt")
    arrays["body"] = span_column(chunk.u8, body_lo, body_lo + np.maximum(col("bodyLength"), 0), pa.binary())
    arrays["propertiesBytes"] = span_column(chunk.u8, props_lo, props_lo + props_len, pa.binary())
    arrays["properties"] = properties_column(chunk, props_lo, props_len, bad_props)
    arrays["keys"] = keys_column(
        chunk, np.ascontiguousarray(col("lo:KEYS")), np.ascontiguousarray(col("hi:KEYS")), bad_props
    )
    crc = col("crcOk")
    ok = crc == 1
    for r in np.flatnonzero(crc == CRC_TEXT):  # a __CRC32# value that is not ASCII: read as the broker reads it
        lo, hi = col(f"lo:{CRC32_PROPERTY}")[r], col(f"hi:{CRC32_PROPERTY}")[r]
        stored = crc_from_digits(decode_utf8(chunk.u8[lo:hi].tobytes()))
        ok[r] = stored == crc31(chunk.u8[position[r] : position[r] + col("storeSize")[r] - S.CRC32_RESERVED_LEN])
    arrays["crcOk"] = pa.array(ok, mask=crc == CRC_UNCHECKED)
    schema = record_schema(chunk.entries is not None)
    if chunk.entries is not None:
        arrays["dledger"] = pa.StructArray.from_arrays(
            [pa.array(column) for column in chunk.entries.T], fields=list(DLEDGER_FIELD.type)
        )
    return pa.RecordBatch.from_arrays([arrays[f.name] for f in schema], schema=schema)
