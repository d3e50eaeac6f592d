"""`append` of many messages given as columns (a block of JSON Lines parsed by engine.jsonl_parse, a batch of a
Parquet file's rows): the same records, queue offsets and acknowledgements as Appender.append gives them one by
one, placed, checked and encoded a block at a time with no Python step per message.

A block is taken only when every message in it is one the per-message path would take as it stands, with no
rewrite (no INNER_MULTI_DISPATCH, `__RMQ.TRANSIENT.` or `__CRC32#` text in its properties, which
append.stored_properties would edit) and none of its refusals (each limit is checked here on the whole block
first). Otherwise stage_columns changes nothing and says so: the caller appends those messages one by one, which
refuses the bad one with its line or row.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import schema as S
from ..engine import (
    IP_BYTES,
    PARSE_MOST_DISTINCT,
    PARSED_BORN_TS,
    PARSED_FLAG,
    PARSED_NAMES,
    PARSED_PREPARED,
    PARSED_QUEUE_ID,
    PARSED_RECONSUME,
    PARSED_STORE_TS,
    PARSED_SYSFLAG,
    TOPIC_COLUMNS,
    interned_texts,
    parse_block,
    queue_offsets,
)
from .append import (
    CRC_TRAILER_PLACEHOLDER,
    ENCODER_HEADROOM,
    INT32_RANGE,
    PROPERTY_MULTI_DISPATCH,
    SHORT_MAX,
    TRANSIENT_PREFIX,
    AckBlock,
    Appender,
    _host,
)
from ..errors import UsageError
from ..javacompat import CRC32_PROPERTY

# text in the properties that stored_properties rewrites or drops, or that the broker's record check parses
# (append.refuse_unreadable): such blocks go message by message
REWRITTEN = tuple(
    t.encode() for t in (PROPERTY_MULTI_DISPATCH, TRANSIENT_PREFIX, CRC32_PROPERTY, "DELAY", "INNER_BASE")
)
PLACEHOLDER = np.frombuffer(CRC_TRAILER_PLACEHOLDER, np.uint8).copy()


@dataclasses.dataclass
class MessageColumns:
    """Messages as columns. ids[row] = (topic, born host, store host) into `topics` and `hosts` (-1: no host
    given); `born_given` / `store_given` say which rows carry their own timestamp. Bodies and stored
    properties texts (UTF-8, before the CRC trailer) are spans of `body` and `props` (offsets n + 1 long)."""

    ids: np.ndarray
    topics: list[str]
    hosts: list[str]
    queue_id: np.ndarray
    flag: np.ndarray
    sys_flag: np.ndarray
    born_ts: np.ndarray
    born_given: np.ndarray
    store_ts: np.ndarray
    store_given: np.ndarray
    reconsume: np.ndarray
    prepared: np.ndarray
    body: np.ndarray
    body_off: np.ndarray
    props: np.ndarray
    props_off: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def stage_columns(app: Appender, c: MessageColumns) -> bool:
    """Place and stage the messages of `c` as Appender.append would one by one (commit() makes them durable);
    False, with nothing changed, when a message needs the per-message path."""
    if app.dry_run or not len(c):
        return False
    checked = _checked(app, c)
    if checked is None:
        return False
    ids, ips, sizes, sys_flag, combo, v2, topic_lens, props_lens, topics_checked = checked
    dispatched = np.isin(sys_flag & S.TRANSACTION_MASK, (S.TRANSACTION_NOT_TYPE, S.TRANSACTION_COMMIT_TYPE))
    qoff = _queue_offsets(app, c, dispatched)
    starts, positions = app._tail.place_many(sizes)
    now = app.clock()
    born_ts = np.where(c.born_given, c.born_ts, now)
    store_ts = np.where(c.store_given, c.store_ts, now)
    ports = np.array([p for _, p in ips] or [0], np.int64)
    fields = np.stack(
        [
            positions,
            sizes,
            np.where(v2, S.MAGIC_V2, S.MAGIC_V1),
            c.queue_id,
            c.flag,
            qoff,
            starts + positions,
            sys_flag,
            born_ts,
            ports[ids[:, 1]],
            store_ts,
            ports[ids[:, 2]],
            c.reconsume,
            c.prepared,
            np.diff(c.body_off),
            topic_lens,
            props_lens,
            combo,
        ],
        axis=1,
    )
    hosts = np.zeros((max(len(ips), 1), IP_BYTES), np.uint8)  # (an IPv4 address takes the first 4 of a row)
    for h, (ip, _) in enumerate(ips):
        hosts[h, : len(ip)] = np.frombuffer(ip, np.uint8)
    topic_bytes = [b for _, b in topics_checked]
    topics = np.frombuffer(b"".join(topic_bytes) or b"\0", np.uint8)
    topic_off = np.cumsum([0] + [len(t) for t in topic_bytes]).astype(np.int64)
    cuts = np.flatnonzero(np.diff(starts)) + 1
    for lo, hi in zip([0, *cuts], [*cuts, len(c)]):  # a file's rows at a time (a block may roll to a new file)
        # copied into the map from the columns themselves at commit (engine.encode_column_block)
        parts = (ids[lo:hi], hosts.ravel(), topics, topic_off, c.body, c.body_off[lo : hi + 1], c.props)
        app._tail.stage_block(int(starts[lo]), fields[lo:hi], (*parts, c.props_off[lo : hi + 1], PLACEHOLDER))
    prefixes = [(ip + port.to_bytes(4, "big", signed=True)).hex().upper() for ip, port in ips]
    app._staged.append(AckBlock(starts, positions, store_ts, qoff, ids[:, 2], prefixes))
    return True


def _checked(app: Appender, c: MessageColumns):
    """The block's records (hosts resolved, sizes, flags) when every message passes append's checks unchanged;
    None when one of them needs the per-message path."""
    try:
        topics = [app._topic(t, False) for t in c.topics]
        ips = [_host(h, "host") for h in c.hosts]
    except UsageError:
        return None
    if (
        app.config.duplicationEnable
        or any(t in app._batch_topics for t in c.topics)
        or any(_region(c.props, c.props_off).find(word) >= 0 for word in REWRITTEN)
    ):
        return None
    ids = c.ids.copy()
    if (ids[:, 2] < 0).any():
        if not app.default_store_host:
            return None
        try:
            ips.append(_host(app.default_store_host, "storeHost"))
        except UsageError:
            return None
        ids[ids[:, 2] < 0, 2] = len(ips) - 1
    ids[:, 1] = np.where(ids[:, 1] < 0, ids[:, 2], ids[:, 1])
    for column in (c.queue_id, c.flag, c.sys_flag, c.reconsume):
        if len(column) and (column.min() < INT32_RANGE[0] or column.max() > INT32_RANGE[1]):
            return None
    if (c.sys_flag & S.INNER_BATCH_FLAG).any():
        return None
    v6 = np.array([len(ip) == 16 for ip, _ in ips] or [False])
    combo = v6[ids[:, 1]].astype(np.int64) + 2 * v6[ids[:, 2]]
    sys_flag = c.sys_flag & ~(S.BORNHOST_V6_FLAG | S.STOREHOSTADDRESS_V6_FLAG)
    sys_flag |= np.where(combo & 1, S.BORNHOST_V6_FLAG, 0) | np.where(combo & 2, S.STOREHOSTADDRESS_V6_FLAG, 0)
    v2 = np.array([v for v, _ in topics] or [False])[ids[:, 0]]
    topic_lens = np.array([len(b) for _, b in topics] or [0], np.int64)[ids[:, 0]]
    props_lens = np.diff(c.props_off)
    body_lens = np.diff(c.body_off)
    if app.crc_trailer:
        ends_open = (props_lens > 0) & (c.props[np.maximum(c.props_off[1:] - 1, 0)] != ord("\x02"))
        props_lens = props_lens + ends_open + len(CRC_TRAILER_PLACEHOLDER)
    # MessageExtEncoder.calMsgLength from its one home, per kind of record (host families, topic length width)
    fixed = np.array(
        [
            [
                S.record_length(S.BORNHOST_V6_FLAG * (k & 1) + S.STOREHOSTADDRESS_V6_FLAG * (k >> 1), 0, 0, 0, w)
                for w in (False, True)
            ]
            for k in range(4)
        ],
        np.int64,
    )
    sizes = fixed[combo, v2.astype(np.int64)] + body_lens + topic_lens + props_lens
    if (
        body_lens.max() > app.config.maxMessageSize
        or props_lens.max() > SHORT_MAX
        or sizes.max() > app.config.maxMessageSize + ENCODER_HEADROOM
        or sizes.max() + S.END_FILE_MIN_BLANK_LENGTH > app.file_size
    ):
        return None
    return ids, ips, sizes, sys_flag, combo, v2, topic_lens, props_lens, topics


def _region(u8: np.ndarray, offsets: np.ndarray) -> bytes:
    return u8[offsets[0] : offsets[-1]].tobytes()


def _queue_offsets(app: Appender, c: MessageColumns, dispatched: np.ndarray) -> np.ndarray:
    """Each message's queue offset, continuing its queue (Appender.next_queue_offset); the queues' next offsets
    move past them."""
    keys = (c.ids[:, 0] << 33) + (c.queue_id + (1 << 31))
    groups, first_rows, inverse = np.unique(keys, return_index=True, return_inverse=True)
    queues = [(c.topics[c.ids[r, 0]], int(c.queue_id[r])) for r in first_rows]
    first = np.array([app.next_queue_offset(t, q) for t, q in queues], np.int64)
    start = first.copy()
    out = queue_offsets(inverse.astype(np.int64).ravel(), first, dispatched)
    for g in np.flatnonzero(first != start):
        app._next[queues[g]] = max(app._next.get(queues[g], 0), int(first[g]))
    return out


def parsed_lines(
    app: Appender, u8: np.ndarray, lo: int, hi: int, max_rows: int, max_bytes: int, keep_timestamps: bool
) -> tuple[int, int, MessageColumns | None, bool]:
    """engine.jsonl_parse over the whole lines u8[lo:hi]: (where it stopped, lines read, their messages (None when
    none), whether it stopped at a line the per-line path reads)."""
    n_names = len(PARSED_NAMES)
    room = hi - lo + 64
    ints, present = np.zeros((max_rows, n_names), np.int64), np.zeros(max_rows, np.int64)
    spans = np.zeros((max_rows, n_names, 2), np.int64)
    body, props = np.empty(room, np.uint8), np.empty(room, np.uint8)
    body_off, props_off = np.zeros(max_rows + 1, np.int64), np.zeros(max_rows + 1, np.int64)
    ids = np.empty((max_rows, 3), np.int64)
    tables = [np.zeros(2 * PARSE_MOST_DISTINCT, np.int64) for _ in range(2)]
    interned = [np.zeros((TOPIC_COLUMNS, PARSE_MOST_DISTINCT), np.int64) for _ in range(2)]
    counts = np.zeros(2, np.int64)
    end, lines, rows, stopped = parse_block(
        u8,
        lo,
        hi,
        max_rows,
        max_bytes,
        app.version >= 5,
        ints,
        present,
        spans,
        body,
        body_off,
        props,
        props_off,
        ids,
        tables[0],
        interned[0],
        tables[1],
        interned[1],
        counts,
    )
    if not rows:
        return end, lines, None, stopped
    ints, present = ints[:rows], present[:rows]
    store_given = (present & (1 << PARSED_STORE_TS)) != 0 if keep_timestamps else np.zeros(rows, bool)
    columns = MessageColumns(
        ids=ids[:rows],
        topics=interned_texts(u8, interned[0], int(counts[0])),
        hosts=interned_texts(u8, interned[1], int(counts[1])),
        queue_id=ints[:, PARSED_QUEUE_ID],
        flag=ints[:, PARSED_FLAG],
        sys_flag=ints[:, PARSED_SYSFLAG],
        born_ts=ints[:, PARSED_BORN_TS],
        born_given=(present & (1 << PARSED_BORN_TS)) != 0,
        store_ts=ints[:, PARSED_STORE_TS],
        store_given=store_given,
        reconsume=ints[:, PARSED_RECONSUME],
        prepared=ints[:, PARSED_PREPARED],
        body=body,
        body_off=body_off[: rows + 1],
        props=props,
        props_off=props_off[: rows + 1],
    )
    return end, lines, columns, stopped


@dataclasses.dataclass
class ParsedLines:
    """One step of parsed_batches: the whole lines buf[lo:end] (`lines` of them), their messages (None when
    none), and, when the kernel stopped at a line it leaves to the per-line path, that line: buf[end:left]."""

    lo: int
    end: int
    lines: int
    columns: MessageColumns | None
    left: int


def parsed_batches(
    app: Appender, buf: bytes, lo: int, hi: int, max_rows: int, max_bytes: int, keep_timestamps: bool
) -> list[list[ParsedLines]]:
    """The whole lines buf[lo:hi] parsed (parsed_lines) into batches of at most max_rows messages and about
    max_bytes, each batch a group commit's steps in order. It reads only the lines and the store's version, so
    a thread may parse the next block while the appender writes this one."""
    u8 = np.frombuffer(buf, np.uint8)
    batches = []
    while lo < hi:
        rows, first, steps = 0, lo, []
        while lo < hi and rows < max_rows and lo - first < max_bytes:
            end, lines, columns, stopped = parsed_lines(
                app, u8, lo, hi, max_rows - rows, max_bytes - (lo - first), keep_timestamps
            )
            left = end
            if stopped:  # the line the kernel leaves: one message for the per-line path
                nl = buf.find(b"\n", end, hi)
                left = hi if nl < 0 else nl + 1
            rows += (0 if columns is None else len(columns)) + stopped
            steps.append(ParsedLines(lo, end, lines, columns, left))
            lo = left
        batches.append(steps)
    return batches


# a scan's (or an export's) integer columns, by MessageColumns' names; an absent or null value is 0
ROW_INTEGERS = {
    "queue_id": "queueId",
    "flag": "flag",
    "sys_flag": "sysFlag",
    "reconsume": "reconsumeTimes",
    "prepared": "preparedTransactionOffset",
}


def arrow_columns(batch, keep_timestamps: bool) -> MessageColumns | None:
    """A batch of a scan's or an export's rows (timestamps as epoch milliseconds) as message_from_row reads
    them, or None where a row needs that per-row reading: a null topic or body, properties not given as ASCII
    propertiesBytes (their pairs, or text that Java's UTF-8 decoding could change). Values are taken from the
    Arrow buffers: pyarrow's scalars and to_numpy would load pandas, half a second of start-up. Topics and hosts
    may come dictionary-encoded (as the Parquet reader can hand them over: PARQUET_DICTIONARIES)."""
    names, n = batch.schema.names, batch.num_rows
    if (
        "topic" not in names
        or "propertiesBytes" not in names
        or batch.column("topic").null_count
        or batch.column("propertiesBytes").null_count
        or not _types_read(batch.schema)
        or ("body" in names and batch.column("body").null_count)
    ):
        return None
    props, props_off = _binary(batch.column("propertiesBytes"))
    if (props[props_off[0] : props_off[-1]] >= 0x80).any():
        return None
    body, body_off = (
        _binary(batch.column("body")) if "body" in names else (np.zeros(1, np.uint8), np.zeros(n + 1, np.int64))
    )
    topic = _dictionary(batch.column("topic"))
    hosts: list[str] = []
    ids = np.empty((n, 3), np.int64)
    ids[:, 0] = _int64s(topic.indices)[0]
    for k, name in ((1, "bornHost"), (2, "storeHost")):
        ids[:, k] = -1
        if name in names:
            encoded = _dictionary(batch.column(name))
            indices, given = _int64s(encoded.indices)
            ids[:, k] = np.where(given, indices + len(hosts), -1)
            hosts += encoded.dictionary.to_pylist()

    def integers(name: str) -> tuple[np.ndarray, np.ndarray]:
        return _int64s(batch.column(name)) if name in names else (np.zeros(n, np.int64), np.zeros(n, bool))

    born_ts, born_given = integers("bornTimestamp")
    store_ts, store_given = integers("storeTimestamp")
    return MessageColumns(
        ids=ids,
        topics=topic.dictionary.to_pylist(),
        hosts=hosts,
        born_ts=born_ts,
        born_given=born_given,
        store_ts=store_ts,
        store_given=store_given & keep_timestamps,
        body=body,
        body_off=body_off,
        props=props,
        props_off=props_off,
        **{field: integers(name)[0] for field, name in ROW_INTEGERS.items()},
    )


# the text columns a Parquet file's reader hands over dictionary-encoded (ParquetFile's read_dictionary): a few
# distinct values in many rows, which arrow_columns takes as they are instead of encoding them again
PARQUET_DICTIONARIES = ("topic", "bornHost", "storeHost")


def _dictionary(column):
    """A text column as a DictionaryArray (its indices and its values)."""
    import pyarrow as pa  # (only for --parquet)

    if pa.types.is_dictionary(column.type):
        return column
    import pyarrow.compute as pc  # (only for columns not read dictionary-encoded: ~30 ms of start-up)

    return pc.dictionary_encode(column)


def _int64s(column) -> tuple[np.ndarray, np.ndarray]:
    """An integer column's values as int64, 0 where null, and where they are not null."""
    import pyarrow as pa  # (only for --parquet)

    kind = column.type
    if pa.types.is_signed_integer(kind) or (pa.types.is_unsigned_integer(kind) and kind.bit_width < 64):
        values, at = column.buffers()[1], column.offset  # every such value fits an int64: numpy widens it
        dtype = np.dtype(f"<{'i' if pa.types.is_signed_integer(kind) else 'u'}{kind.bit_width // 8}")
    else:  # uint64: Arrow's checked cast refuses a value past int64
        array = column.cast(pa.int64())
        values, at, dtype = array.buffers()[1], array.offset, np.dtype("<i8")
    n = len(column)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    values = np.frombuffer(values, dtype)[at : at + n].astype(np.int64)
    if not column.null_count:
        return values, np.ones(n, bool)
    validity = column.buffers()[0]
    given = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[at : at + n].astype(bool)
    return np.where(given, values, 0), given


def _types_read(schema) -> bool:
    """Whether each column has the type a scan writes (strings, bytes, integers), which message_from_row reads
    as they are."""
    import pyarrow as pa  # (only for --parquet)

    def text(kind) -> bool:  # a string, or one read dictionary-encoded (PARQUET_DICTIONARIES)
        return pa.types.is_string(kind.value_type if pa.types.is_dictionary(kind) else kind)

    kinds = {
        "topic": text,
        "bornHost": text,
        "storeHost": text,
        "body": pa.types.is_binary,
        "propertiesBytes": pa.types.is_binary,
    }
    for field in schema:
        if field.name in kinds and not kinds[field.name](field.type):
            return False
        if field.name in (*ROW_INTEGERS.values(), "bornTimestamp", "storeTimestamp") and not pa.types.is_integer(
            field.type
        ):
            return False
    return True


def _binary(column) -> tuple[np.ndarray, np.ndarray]:
    """The bytes and the n + 1 offsets of a binary column without nulls."""
    _, offsets, data = column.buffers()  # (binary: int32 offsets, as _types_read holds them)
    off = np.frombuffer(offsets, "<i4")[column.offset : column.offset + len(column) + 1].astype(np.int64)
    u8 = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
    return (u8 if len(u8) else np.zeros(1, np.uint8)), off
