"""`append`'s records encoded in one compiled pass per batch, as record.encode_record encodes one (the reference):
MessageExtEncoder's layout at the field offsets engine.record derives from the schema, the 31-bit body CRC,
and, for a 5.x store with enabledAppendPropCRC, the `__CRC32#` digits over the finished record as
DefaultAppendMessageCallback.doAppend writes them (javacompat.put_crc_digits, compiled from its one
definition).

A batch is a table of integer fields per record (the columns below) and one byte string holding, per record in
order, the born host's address, the store host's address, the body, the topic and the properties.
"""

from __future__ import annotations

import concurrent.futures

import numpy as np

from .. import schema as S
from ..budget import block_sigint_here
from ..javacompat import CRC_DIGITS, PROPERTY_SEPARATOR, put_crc_digits as _put_crc_digits
from .jsonl_kernels import HEAD_FIELDS, put_int
from .kernels import compile_rule, copy_span, crc32, kernel, move_bytes, put_be32, put_be64
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
MIN_ENCODE_PART = 2048  # records: fewer are not worth a thread
IP_BYTES = 16  # an address's room in encode_columns' hosts: an IPv6 one's (an IPv4 one takes the first 4)
SEPARATOR = ord(PROPERTY_SEPARATOR)


@kernel
def put_record(
    u8, fields, i, hosts, born, store, body, body_at, topic, topic_at, props, props_at, given, extra, crc_trailer
):
    """Record i of `fields` (COLUMNS) at its position in u8: its fields from the row, then the born and store
    hosts' addresses (at hosts[born:], hosts[store:]: 4 or 16 bytes, as the row's combo says), the body, the
    topic and the properties copied from where they lie (body[body_at:], ...). Of the properties `given` bytes
    are copied; where the row's properties length is longer, a separator follows them if they lack one, then
    `extra` (the `__CRC32#` trailer's placeholder). `crc_trailer`: the properties end in that placeholder,
    whose digits are filled in over the finished record."""
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
    copy_span(u8, p + BORN_IP_AT, hosts, born, 16 if combo & 1 else 4)
    put_be32(u8, p + BORN_PORT_AT[combo], fields[i, BORN_PORT])
    put_be64(u8, p + STORE_TS_AT[combo], fields[i, STORE_TS])
    copy_span(u8, p + STORE_IP_AT[combo], hosts, store, 16 if combo & 2 else 4)
    put_be32(u8, p + STORE_PORT_AT[combo], fields[i, STORE_PORT])
    put_be32(u8, p + RECONSUME_AT[combo], fields[i, RECONSUME])
    put_be64(u8, p + PREPARED_AT[combo], fields[i, PREPARED])
    body_len = fields[i, BODY_LEN]
    put_be32(u8, p + BODY_LEN_AT[combo], body_len)
    put_be32(u8, p + BODY_CRC_AT, crc32(body, body_at, body_at + body_len) & 0x7FFFFFFF)
    o = p + HEAD_SIZE[combo]
    move_bytes(u8, o, body, body_at, body_len)  # (the C library's memcpy: a body is most of a record's bytes)
    o += body_len
    topic_len = fields[i, TOPIC_LEN]
    if fields[i, MAGIC] == MAGIC_V2:  # a 2-byte topic length
        u8[o] = (topic_len >> 8) & 0xFF
        o += 1
    u8[o] = topic_len & 0xFF
    o = copy_span(u8, o + 1, topic, topic_at, topic_len)
    props_len = fields[i, PROPS_LEN]
    u8[o] = (props_len >> 8) & 0xFF
    u8[o + 1] = props_len & 0xFF
    o = copy_span(u8, o + 2, props, props_at, given)
    if props_len > given:
        if props_len - given > len(extra):
            u8[o] = SEPARATOR
            o += 1
        copy_span(u8, o, extra, 0, len(extra))
    if crc_trailer:
        put_crc_digits(crc32(u8, p, p + size - CRC_RESERVED) & 0x7FFFFFFF, u8, p + size - 1 - CRC_DIGITS)


@kernel
def encode_records(u8, fields, blob, crc_trailer):
    """Write the records of `fields` (one row each, COLUMNS) into u8 at their positions, their bytes taken from
    `blob` in order: per record the born host's address, the store host's, the body, the topic and the properties.
    `crc_trailer`: the properties end in a `__CRC32#` placeholder whose digits are filled in."""
    b = 0
    for i in range(fields.shape[0]):
        combo = fields[i, COMBO]
        born_len = 16 if combo & 1 else 4
        store_len = 16 if combo & 2 else 4
        body_at = b + born_len + store_len
        topic_at = body_at + fields[i, BODY_LEN]
        props_at = topic_at + fields[i, TOPIC_LEN]
        props_len = fields[i, PROPS_LEN]
        put_record(
            u8, fields, i, blob, b, b + born_len, blob, body_at, blob, topic_at, blob, props_at, props_len, blob[:0],
            crc_trailer,
        )  # fmt: skip
        b = props_at + props_len
    return b


@kernel
def encode_columns(
    u8, fields, ids, hosts, topics, topic_off, body, body_off, props, props_off, crc_trailer, placeholder
):
    """encode_records for records given as columns, each part copied from where it lies: per row (ids: topic,
    born host, store host) the hosts' addresses (host h's at hosts[h * IP_BYTES:]), the body and properties
    (spans of `body` and `props` by their offsets) and the topic (a span of `topics` by topic_off); with
    `crc_trailer` the properties end in a separator (where they lack one) and `placeholder`, the `__CRC32#`
    trailer whose digits are filled in, as append.stored_properties ends them. Returns the rows written."""
    for r in range(ids.shape[0]):
        put_record(
            u8,
            fields,
            r,
            hosts,
            ids[r, 1] * IP_BYTES,
            ids[r, 2] * IP_BYTES,
            body,
            body_off[r],
            topics,
            topic_off[ids[r, 0]],
            props,
            props_off[r],
            props_off[r + 1] - props_off[r],
            placeholder,
            crc_trailer,
        )
    return ids.shape[0]


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


def encode_column_block(buf, fields: np.ndarray, parts: tuple, crc_trailer: bool, jobs: int = 1):
    """encode_columns' records (`parts`: ids, hosts, topics, topic_off, body, body_off, props, props_off,
    placeholder) written into `buf`; with `jobs` > 1 and records enough, in parts of the rows on as many threads
    at once (the kernel lets the GIL go, and each record goes to its own bytes)."""
    u8, fields = np.frombuffer(buf, np.uint8), np.ascontiguousarray(fields, np.int64)
    ids, hosts, topics, topic_off, body, body_off, props, props_off, placeholder = parts

    def encode(lo: int, hi: int) -> int:
        return encode_columns(
            u8,
            fields[lo:hi],
            ids[lo:hi],
            hosts,
            topics,
            topic_off,
            body,
            body_off[lo : hi + 1],
            props,
            props_off[lo : hi + 1],
            crc_trailer,
            placeholder,
        )

    rows = np.linspace(0, len(fields), max(1, min(jobs, len(fields) // MIN_ENCODE_PART)) + 1).astype(np.int64)
    if len(rows) == 2:
        written = encode(0, len(fields))
    else:
        with concurrent.futures.ThreadPoolExecutor(len(rows) - 2, initializer=block_sigint_here) as pool:
            others = [pool.submit(encode, int(lo), int(hi)) for lo, hi in zip(rows[1:-1], rows[2:])]
            written = encode(0, int(rows[1])) + sum(f.result() for f in others)
    assert written == len(fields), "every staged record is written"


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
