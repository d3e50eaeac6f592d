"""`append`'s records encoded in one compiled pass per batch, as record.encode_record encodes one (the reference):
MessageExtEncoder's layout at the field offsets engine.record derives from the schema, the 31-bit body CRC,
and, for a 5.x store with enabledAppendPropCRC, the `__CRC32#` digits over the finished record as
DefaultAppendMessageCallback.doAppend writes them (javacompat.put_crc_digits, compiled from its one
definition).

A batch is a table of integer fields per record (the columns below) and one byte string holding, per record in
order, the born host's address, the store host's address, the body, the topic and the properties.
"""

from __future__ import annotations

import numpy as np

from .. import schema as S
from ..javacompat import CRC_DIGITS, PROPERTY_SEPARATOR, put_crc_digits as _put_crc_digits
from .jsonl_kernels import HEAD_FIELDS, put_int
from .kernels import compile_rule, copy_span, crc32, kernel, put_be32, put_be64
from ..schema import RECORD_AT as OFFSETS

# the columns of a batch's field table
COLUMNS = (
    "position",
    "storeSize",
    "magicCode",
    "queueId",
    "flag",
    "queueOffset",
    "physicalOffset",
    "sysFlag",
    "bornTimestamp",
    "bornPort",
    "storeTimestamp",
    "storePort",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "bodyLength",
    "topicLength",
    "propertiesLength",
    "combo",
)
(
    POSITION,
    SIZE,
    MAGIC,
    QUEUE_ID,
    FLAG,
    QUEUE_OFFSET,
    PHYSICAL_OFFSET,
    SYSFLAG,
    BORN_TS,
    BORN_PORT,
    STORE_TS,
    STORE_PORT,
    RECONSUME,
    PREPARED,
    BODY_LEN,
    TOPIC_LEN,
    PROPS_LEN,
    COMBO,
) = range(len(COLUMNS))

# the head's fields in record order, headSize last: the first ten stand at one offset in every host layout,
# the rest at one per layout (combo)
(
    STORE_SIZE_AT,
    MAGIC_AT,
    BODY_CRC_AT,
    QUEUE_ID_AT,
    FLAG_AT,
    QUEUE_OFFSET_AT,
    PHYSICAL_OFFSET_AT,
    SYSFLAG_AT,
    BORN_TS_AT,
    BORN_IP_AT,
) = (OFFSETS[n][0] for n in HEAD_FIELDS[:10])
BORN_PORT_AT, STORE_TS_AT, STORE_IP_AT, STORE_PORT_AT, RECONSUME_AT, PREPARED_AT, BODY_LEN_AT, HEAD_SIZE = (
    OFFSETS[n] for n in HEAD_FIELDS[10:]
)
MAGIC_V2 = S.MAGIC_V2
CRC_RESERVED = S.CRC32_RESERVED_LEN
put_crc_digits = compile_rule(_put_crc_digits)


@kernel
def encode_records(u8, fields, blob, crc_trailer):
    """Write the records of `fields` (one row each, COLUMNS) into u8 at their positions, their bytes taken from
    `blob` in order. `crc_trailer`: the properties end in a `__CRC32#` placeholder whose digits are filled in."""
    b = 0
    for i in range(fields.shape[0]):
        p = fields[i, POSITION]
        combo = fields[i, COMBO]
        size = fields[i, SIZE]
        put_be32(u8, p + STORE_SIZE_AT, size)
        put_be32(u8, p + MAGIC_AT, fields[i, MAGIC])
        put_be32(u8, p + QUEUE_ID_AT, fields[i, QUEUE_ID])
        put_be32(u8, p + FLAG_AT, fields[i, FLAG])
        put_be64(u8, p + QUEUE_OFFSET_AT, fields[i, QUEUE_OFFSET])
        put_be64(u8, p + PHYSICAL_OFFSET_AT, fields[i, PHYSICAL_OFFSET])
        put_be32(u8, p + SYSFLAG_AT, fields[i, SYSFLAG])
        put_be64(u8, p + BORN_TS_AT, fields[i, BORN_TS])
        born_len = 16 if combo & 1 else 4
        store_len = 16 if combo & 2 else 4
        copy_span(u8, p + BORN_IP_AT, blob, b, born_len)
        b += born_len
        put_be32(u8, p + BORN_PORT_AT[combo], fields[i, BORN_PORT])
        put_be64(u8, p + STORE_TS_AT[combo], fields[i, STORE_TS])
        copy_span(u8, p + STORE_IP_AT[combo], blob, b, store_len)
        b += store_len
        put_be32(u8, p + STORE_PORT_AT[combo], fields[i, STORE_PORT])
        put_be32(u8, p + RECONSUME_AT[combo], fields[i, RECONSUME])
        put_be64(u8, p + PREPARED_AT[combo], fields[i, PREPARED])
        body_len = fields[i, BODY_LEN]
        put_be32(u8, p + BODY_LEN_AT[combo], body_len)
        put_be32(u8, p + BODY_CRC_AT, crc32(blob, b, b + body_len) & 0x7FFFFFFF)
        o = copy_span(u8, p + HEAD_SIZE[combo], blob, b, body_len)
        b += body_len
        topic_len = fields[i, TOPIC_LEN]
        if fields[i, MAGIC] == MAGIC_V2:  # a 2-byte topic length
            u8[o] = (topic_len >> 8) & 0xFF
            o += 1
        u8[o] = topic_len & 0xFF
        o = copy_span(u8, o + 1, blob, b, topic_len)
        b += topic_len
        props_len = fields[i, PROPS_LEN]
        u8[o] = (props_len >> 8) & 0xFF
        u8[o + 1] = props_len & 0xFF
        copy_span(u8, o + 2, blob, b, props_len)
        b += props_len
        if crc_trailer:
            put_crc_digits(crc32(u8, p, p + size - CRC_RESERVED) & 0x7FFFFFFF, u8, p + size - 1 - CRC_DIGITS)
    return b


def encode_batch(buf, rows: list[tuple], parts: list[bytes], crc_trailer: bool):
    """Encode the records `rows` (tuples in COLUMNS order) into `buf` (a writable map), their bytes `parts`."""
    encode_fields(
        buf,
        np.array(rows, dtype=np.int64).reshape(-1, len(COLUMNS)),
        np.frombuffer(b"".join(parts), np.uint8),
        crc_trailer,
    )


def encode_fields(buf, fields: np.ndarray, blob: np.ndarray, crc_trailer: bool):
    """encode_batch's records given as a table of COLUMNS (int64, a row each) and their bytes in order."""
    used = encode_records(np.frombuffer(buf, np.uint8), np.ascontiguousarray(fields, np.int64), blob, crc_trailer)
    assert used == len(blob), "every staged byte goes into a record"


@kernel
def gather_parts(
    ids, host_ips, host_lens, topics, topic_off, body, body_off, props, props_off, crc_trailer, placeholder, blob
):
    """encode_records' byte string for rows given as columns: per row (ids: topic, born host, store host) the two
    hosts' addresses, the body, the topic and the properties, these ending (with `crc_trailer`) in a separator
    and `placeholder`, the `__CRC32#` trailer still to be filled in, as append.stored_properties ends them.
    Returns the end in blob."""
    b = 0
    sep = ord(PROPERTY_SEPARATOR)
    for r in range(ids.shape[0]):
        for k in (1, 2):
            h = ids[r, k]
            b = copy_span(blob, b, host_ips[h], 0, host_lens[h])
        b = copy_span(blob, b, body, body_off[r], body_off[r + 1] - body_off[r])
        t = ids[r, 0]
        b = copy_span(blob, b, topics, topic_off[t], topic_off[t + 1] - topic_off[t])
        n = props_off[r + 1] - props_off[r]
        b = copy_span(blob, b, props, props_off[r], n)
        if crc_trailer:
            if n and props[props_off[r + 1] - 1] != sep:
                blob[b] = sep
                b += 1
            b = copy_span(blob, b, placeholder, 0, len(placeholder))
    return b


@kernel
def queue_offsets(groups, first, counted):
    """Each row's queue offset: its queue's (groups[row]) next offset `first[group]`, counting on, for rows that are
    `counted` (dispatched); 0 for the others (PREPARED and ROLLBACK records). `first` ends as the next offsets."""
    out = np.zeros(len(groups), np.int64)
    for r in range(len(groups)):
        if counted[r]:
            g = groups[r]
            out[r] = first[g]
            first[g] += 1
    return out


_ACK_PIECES = ('{"commitLogOffset":', ',"queueOffset":', ',"msgId":"', '","file":"', '","position":', "}\n")
ACK_TEXT = np.frombuffer("".join(_ACK_PIECES).encode(), np.uint8).copy()
# piece k: ACK_TEXT[ACK_AT[k]:ACK_AT[k + 1]]
ACK_AT = tuple(int(n) for n in np.cumsum([0] + [len(p) for p in _ACK_PIECES]))
UPPER_HEX = np.frombuffer(b"0123456789ABCDEF", np.uint8).copy()
ACK_BOUND = 200  # bytes of one acknowledgement at most: its fixed text, four int64s and a 40 + 16 digit msgId


@kernel
def put_piece(out, o, k):
    return copy_span(out, o, ACK_TEXT, ACK_AT[k], ACK_AT[k + 1] - ACK_AT[k])


@kernel
def ack_lines(starts, positions, queue_offsets, hosts, prefixes, prefix_lens, names, out):
    """Append's acknowledgement lines (cli.render.dumps of Appended.as_dict()): commitLogOffset, queueOffset, msgId
    (the store host's prefix then the offset in 16 upper-case hex digits, as record.message_id), the file's
    20-digit name and the position; `names` holds each row's file name. Returns the end in out (ACK_BOUND a row)."""
    o = 0
    for i in range(len(starts)):
        offset = starts[i] + positions[i]
        o = put_piece(out, o, 0)
        o = put_int(out, o, offset)
        o = put_piece(out, o, 1)
        o = put_int(out, o, queue_offsets[i])
        o = put_piece(out, o, 2)
        h = hosts[i]
        o = copy_span(out, o, prefixes[h], 0, prefix_lens[h])
        for k in range(16):
            out[o + k] = UPPER_HEX[(offset >> (60 - 4 * k)) & 15]
        o = put_piece(out, o + 16, 3)
        o = copy_span(out, o, names[i], 0, names.shape[1])
        o = put_piece(out, o, 4)
        o = put_int(out, o, positions[i])
        o = put_piece(out, o, 5)
    return o
