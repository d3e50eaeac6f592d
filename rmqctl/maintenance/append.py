"""`append`: write messages into a store the way the broker's CommitLog does.

The record is encoded like MessageExtEncoder.encode and placed like DefaultAppendMessageCallback.doAppend
(PHYSICALOFFSET = position, QUEUEOFFSET continuing each queue, 0 for PREPARED/ROLLBACK, STORETIMESTAMP,
31-bit body CRC, V1/V2 magic, the `__CRC32#` trailer, the 8-byte BLANK and a roll to the next file when the
record does not fit). Then, in the broker's order: fsync the commitlog, dispatch to consumequeue and index
(writers.Dispatcher), flush them, update the checkpoint. A kill at any point leaves at most a torn last
record; nothing is reported appended before it is durable.

Before the first write the true end of the commitlog is found with the broker's recovery scan
(CommitLog.recoverNormally: from the third-last file, records checked with checkCRCOnRecover). Anything but
zeros after that end is a torn or garbage tail and is refused (`rmqctl repair` cuts it off). Records past
the consumequeue dispatch point are dispatched first, as the broker's reput does on start, so queue offsets
continue from the commitlog, which is the truth.

Sources: CommitLog.asyncPutMessage/DefaultAppendMessageCallback (4.9.7, 5.3.3), MessageExtEncoder,
MultiDispatch / LmqDispatch, HookUtils.transformDelayLevelMessage, TopicValidator, MessageUtils.deleteProperty,
StoreCheckpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import time
from pathlib import Path

import numpy as np
import orjson
from typing import Callable, Iterable

from .. import dledger
from ..budget import sigint_held
from ..batchcq import batch_topics, queue_file_size
from .. import schema as S
from ..config import BrokerConfig
from ..dispatch import cq_targets
from ..errors import StoreError, UsageError
from ..javacompat import (
    CRC32_PROPERTY,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    crc31,
    crc_digits,
    encode_properties,
    java_split,
    decode_utf8,
    java_string_hash,
    java_long,
    parse_long,
    parse_properties,
)
from ..record import Message, encode_record, message_id, parse_host, read_record
from ..engine import (
    ACK_BOUND,
    ack_lines,
    available_cores,
    dispatch_decode,
    dispatch_walk,
    encode_batch,
    encode_column_block,
    encode_columns,
    encode_records,
    parse_block,
    put_index_keys,
    put_units_in_order,
    queue_offsets,
)
from ..rules import (
    LMQ_PREFIX,
    SCHEDULE_TOPIC,
    NOT_ALLOWED_SEND_TOPICS,
    MULTI_DISPATCH_SEPARATOR,
    RETRY_TOPIC_PREFIX,
    property_failure,
    lmq_queue_id,
    multi_dispatched_topic,
)
from ..store import TOPIC_NAME, Store, commitlog_dirs, offset_to_name, refuse_links_outside, valid_topic_dir_name
from .writers import DISPATCH_PARTS, RESERVE_AHEAD, Dispatcher, WritableFile, reserve_free_space
from .batchdispatch import BatchWriter, dispatch_file, dispatch_range, first_bad_queue, new_keys
from .append_point import AppendPoint, append_point, config_version, store_version
from ..timerstore import precision_ms
from ..txn import fsync_dir, locked_for_writing

# what an append runs compiled: the parser of JSON lines, the encoder and its acknowledgements, the dispatch of the
# written records, the index's key writer; all of them in engine.aot's module, so a warm append loads no numba
APPEND_KERNELS = (
    parse_block,
    encode_columns,
    queue_offsets,
    encode_records,
    ack_lines,
    dispatch_walk,
    dispatch_decode,
    put_units_in_order,
    put_index_keys,
)
TRANSIENT_PREFIX = "__RMQ.TRANSIENT."  # never stored
DLQ_TOPIC_PREFIX = "%DLQ%"
TOPIC_MAX_LENGTH = 127  # TopicValidator.TOPIC_MAX_LENGTH; also the V1 1-byte length
RETRY_OR_DLQ_TOPIC_MAX_LENGTH = 255
SHORT_MAX = 32767  # propertiesLength is a signed int16
ENCODER_HEADROOM = 64 * 1024  # MessageExtEncoder: whole record <= maxMessageSize (body) + 64 KiB
INT32_RANGE = (-(1 << 31), (1 << 31) - 1)
INT64_RANGE = (-(1 << 63), (1 << 63) - 1)
PROPERTY_WAIT = "WAIT"
PROPERTY_DELAY = "DELAY"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QID = "REAL_QID"
PROPERTY_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
PROPERTY_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
CRC_DIGITS = 10
CRC_TRAILER_PLACEHOLDER = (CRC32_PROPERTY + NAME_VALUE_SEPARATOR + "0" * CRC_DIGITS + PROPERTY_SEPARATOR).encode(
    "ascii"
)


@dataclasses.dataclass
class NewMessage:
    """A message to append, as a producer (or a dump line) gives it. Offsets, CRCs, size and magic are
    always computed. `properties` are (name, value) pairs in stored order; `properties_string` (the exact
    stored text) wins when given. `broker_order` stores the properties in the iteration order of the
    broker's HashMap, as a broker writes a message a client sent."""

    topic: str
    body: bytes = b""
    queue_id: int = 0
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int | None = None  # None: now
    born_host: str | None = None  # None: the store host
    store_host: str | None = None  # None: brokerIP1:listenPort, else the store's last record's
    store_timestamp: int | None = None  # None: now (the broker's time of append)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    properties_string: str | None = None
    broker_order: bool = False


@dataclasses.dataclass
class Appended:
    """Where a message went (the `append` output line)."""

    commitLogOffset: int
    queueOffset: int
    msgId: str
    file: str
    position: int

    def as_dict(self) -> dict:
        return dict(vars(self))  # flat fields: no deep copy (dataclasses.asdict was a third of append's time)


class AckBlock:
    """Where the messages of one block went (append_batch.stage_columns): columns of Appended's fields, the
    store host of each (into `prefixes`, msgId's first half: address and port in hex)."""

    def __init__(self, starts, positions, store_ts, queue_offsets, store_hosts, prefixes: list[str]):
        self.starts, self.positions, self.store_ts = starts, positions, store_ts
        # (contiguous, as engine.aot's entry of ack_lines takes it)
        self.queue_offsets, self.store_hosts = queue_offsets, np.ascontiguousarray(store_hosts)
        self.prefixes = prefixes

    def lines(self) -> str:
        """The acknowledgements, each as cli.render.dumps writes Appended.as_dict() (a test holds them equal)."""
        prefixes = np.zeros((max(len(self.prefixes), 1), 40), np.uint8)
        for h, p in enumerate(self.prefixes):
            prefixes[h, : len(p)] = np.frombuffer(p.encode(), np.uint8)
        files, which = np.unique(self.starts, return_inverse=True)
        names = np.frombuffer("".join(offset_to_name(int(s)) for s in files).encode(), np.uint8).reshape(len(files), -1)
        file_names = np.ascontiguousarray(names[which.ravel()])
        out = np.empty(ACK_BOUND * len(self.starts) + 8, np.uint8)
        end = ack_lines(
            self.starts,
            self.positions,
            self.queue_offsets,
            self.store_hosts,
            prefixes,
            np.array([len(p) for p in self.prefixes] or [0], np.int64),
            file_names,
            out,
        )
        return out[:end].tobytes().decode("ascii")

    def appended(self) -> list[Appended]:
        return [
            Appended(s + p, q, f"{self.prefixes[h]}{s + p:016X}", offset_to_name(s), p)
            for s, p, q, h in zip(
                self.starts.tolist(), self.positions.tolist(), self.queue_offsets.tolist(), self.store_hosts.tolist()
            )
        ]


# -- Java behaviours the stored bytes depend on ---------------------------------------------------------


def java_length(s: str) -> int:
    """String.length(): UTF-16 code units."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def java_utf8(s: str) -> bytes:
    """String.getBytes(UTF_8): unpaired surrogates become '?'."""
    return s.encode("utf-8", "replace")


def _spread(key: str) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return h ^ (h >> 16)


def java_hashmap_order(keys: Iterable[str], capacity: int = 16) -> list[str]:
    """Iteration order of a java.util.HashMap after putting `keys` in this order into `new HashMap<>(capacity)`:
    by bucket (spread hash & (table size - 1)), then insertion order within a bucket. The table doubles when
    size exceeds 3/4 of it, and when a bucket reaches 8 entries in a table smaller than 64 (treeifyBin).
    Re-putting a key keeps its place. (Tree bins of 8+ colliding keys in a large table are not modelled.)"""
    order: list[str] = []
    seen: set[str] = set()
    table = capacity
    for k in keys:
        if k in seen:
            continue
        bucket = _spread(k) & (table - 1)
        chain = sum(1 for o in order if _spread(o) & (table - 1) == bucket)
        seen.add(k)
        order.append(k)
        if chain >= 8 and table < 64:
            table *= 2
        if len(order) > table * 3 // 4:
            table *= 2
    rank = {k: i for i, k in enumerate(order)}
    return sorted(order, key=lambda k: (_spread(k) & (table - 1), rank[k]))


def broker_map_capacity(version: int) -> int:
    """MessageDecoder.string2messageProperties: new HashMap<>() in 4.x, new HashMap<>(128) in 5.x."""
    return 16 if version < 5 else 128


def map_properties_string(pairs: Iterable[tuple[str, str]], version: int, from_client: bool = False) -> str:
    """messageProperties2String over the broker's map holding `pairs` (later duplicates win, in place).
    `from_client`: the pairs were first put in the client's Message map, whose string the broker parsed."""
    values: dict[str, str] = {}
    for k, v in pairs:
        values[k] = v
    keys = list(values)
    if from_client:
        keys = java_hashmap_order(keys, 16)
    keys = java_hashmap_order(keys, broker_map_capacity(version))
    return encode_properties([(k, values[k]) for k in keys], trailing_separator=version >= 5)


def delete_property(text: str, name: str) -> str:
    """MessageUtils.deleteProperty: drop every `name\\x01value` pair (with its separator) from the string."""
    if name not in text:
        return text
    out = []
    idx0 = 0
    while True:
        start = idx0
        while True:
            idx1 = text.find(name, start)
            if idx1 == -1:
                break
            start = idx1 + len(name)
            at_pair_start = idx1 == 0 or text[idx1 - 1] == PROPERTY_SEPARATOR
            if at_pair_start and len(text) > start and text[start] == NAME_VALUE_SEPARATOR:
                break
        if idx1 == -1:
            out.append(text[idx0:])
            break
        out.append(text[idx0:idx1])
        idx2 = text.find(PROPERTY_SEPARATOR, idx1 + len(name) + 1)
        if idx2 == -1:
            break
        idx0 = idx2 + 1
    return "".join(out)


# -- validation -------------------------------------------------------------------------------------------


def validate_producer_topic(topic: str):
    """A producer's send to `topic`, as the client and the broker's SendMessageProcessor check it: the name
    (validate_topic_name) and TopicValidator.isNotAllowedSendTopic (the broker's own topics: a delay or a
    transaction reaches them through the broker's rewrite, never by a send)."""
    validate_topic_name(topic)
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise UsageError(f"sending a message to topic {topic} is forbidden: the broker refuses it (NO_PERMISSION)")


def validate_topic_name(topic: str):
    """TopicValidator.validateTopic (retry/DLQ topics may be 255 long)."""
    if not topic or not topic.strip():
        raise UsageError("the topic is blank")
    if not TOPIC_NAME.fullmatch(topic):
        raise UsageError(f"topic {topic!r} contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
    limit = (
        RETRY_OR_DLQ_TOPIC_MAX_LENGTH if topic.startswith((RETRY_TOPIC_PREFIX, DLQ_TOPIC_PREFIX)) else TOPIC_MAX_LENGTH
    )
    if len(topic) > limit:
        raise UsageError(f"topic is {len(topic)} characters, longer than the {limit} allowed")


def record_version_for_topic(topic: str, version: int, config: BrokerConfig) -> bool:
    """What the store accepts and can represent; True when the record needs the V2 magic (2-byte topic
    length: 5.1+, autoMessageVersionOnTopicLen and more than 127 UTF-16 chars)."""
    if not topic:
        raise UsageError("the topic is empty")
    if not valid_topic_dir_name(topic):
        raise UsageError(f"topic {topic!r} cannot name a consumequeue directory")
    chars = java_length(topic)
    if version < 5 and chars > TOPIC_MAX_LENGTH:
        raise UsageError(
            f"topic is {chars} characters: a RocketMQ 4.x store takes at most {TOPIC_MAX_LENGTH} "
            "(longer topics need the V2 record of RocketMQ 5.1+, which 4.x cannot read)"
        )
    v2 = version >= 5 and config.autoMessageVersionOnTopicLen and chars > TOPIC_MAX_LENGTH
    if not v2 and len(java_utf8(topic)) > TOPIC_MAX_LENGTH:
        raise UsageError(
            f"topic is {len(java_utf8(topic))} UTF-8 bytes: the 1-byte topic length of a V1 record "
            f"holds at most {TOPIC_MAX_LENGTH}"
        )
    return v2


def _check_range(name: str, value, bounds: tuple[int, int]):
    if type(value) is int and bounds[0] <= value <= bounds[1]:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be an integer, not {value!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise UsageError(f"{name} {value} does not fit its {'int32' if bounds == INT32_RANGE else 'int64'} field")


def _check_property_text(name: str, value: str):
    for sep in (NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR):
        if sep in name or sep in value:
            raise UsageError(f"property {name!r} contains a \\x01 or \\x02 separator character")


# -- broker-side rewrites a caller can ask for -------------------------------------------------------------


def apply_delay_level(msg: NewMessage, level: int, config: BrokerConfig) -> NewMessage:
    """CommitLog.asyncPutMessage (4.9) / HookUtils.transformDelayLevelMessage (5.x) for a new message: the
    level (clamped to the table) goes into DELAY, the topic becomes SCHEDULE_TOPIC_XXXX with queueId =
    level-1, REAL_TOPIC/REAL_QID keep the original, and the properties are rebuilt from the broker's map.
    Only NOT and COMMIT transaction types are delayed; any other keeps the DELAY its producer's setDelayTimeLevel
    put, as does a level of 0 or less."""
    if msg.properties_string is not None:
        raise UsageError("--delay-level rewrites properties; it cannot be combined with a verbatim propertiesString")
    if msg.sys_flag & S.TRANSACTION_MASK not in (S.TRANSACTION_NOT_TYPE, S.TRANSACTION_COMMIT_TYPE) or level <= 0:
        pairs = [(k, v) for k, v in msg.properties if k != PROPERTY_DELAY] + [(PROPERTY_DELAY, str(level))]
        return dataclasses.replace(msg, properties=pairs)
    level = min(level, max(config.delay_level_table()))
    # a DELAY already there keeps its place in the map and takes the new value
    pairs = list(msg.properties) + [
        (PROPERTY_DELAY, str(level)),
        (PROPERTY_REAL_TOPIC, msg.topic),
        (PROPERTY_REAL_QID, str(msg.queue_id)),
    ]
    return dataclasses.replace(msg, topic=SCHEDULE_TOPIC, queue_id=level - 1, properties=pairs, broker_order=True)


TIMER_PROPERTIES = ("TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")  # MessageConst: a timer message's
INT_MAX = 2**31 - 1


def timer_as_sent(msg: NewMessage, config: BrokerConfig, version: int, now: int, delay_level: int) -> NewMessage:
    """5.x's HookUtils.handleScheduleMessage ahead of the delay rewrite, for a NOT or COMMIT message not sent to
    rmq_sys_wheel_timer: with a delay level its TIMER_* properties are dropped; else one of them (and no
    TIMER_OUT_MS) makes it a timer message, which waits in the timer wheel (transformTimerMessage): topic
    rmq_sys_wheel_timer, queue 0, TIMER_OUT_MS its deliver time less timerPrecisionMs (a multiple of it) or
    rounded down to it, REAL_TOPIC/REAL_QID the original. A deliver time not after `now` is stored as sent. What
    the broker's send refuses, rmqctl refuses."""
    tran = msg.sys_flag & S.TRANSACTION_MASK
    if version < 5 or msg.topic == S.TIMER_TOPIC or tran not in (S.TRANSACTION_NOT_TYPE, S.TRANSACTION_COMMIT_TYPE):
        return msg
    props = dict(msg.properties)
    if delay_level > 0:
        return dataclasses.replace(msg, properties=[(k, v) for k, v in msg.properties if k not in TIMER_PROPERTIES])
    if "TIMER_OUT_MS" in props or not any(p in props for p in TIMER_PROPERTIES):
        return msg
    if not config.timerWheelEnable:
        raise UsageError("a timer message (TIMER_*) with timerWheelEnable=false: the broker rejects it")
    name = next(p for p in ("TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS") if p in props)
    value = parse_long(props[name])
    if value is None:
        raise UsageError(f"{name} {props[name]!r} is not a number: the broker rejects the message (Long.parseLong)")
    deliver = java_long(
        now + value * 1000 if name == "TIMER_DELAY_SEC" else now + value if name == "TIMER_DELAY_MS" else value
    )
    if deliver <= now:
        if "TIMER_DEL_UNIQKEY" in props:
            raise UsageError("a timer delete (TIMER_DEL_UNIQKEY) whose time has passed: the broker rejects it")
        return msg
    if deliver - now > config.timerMaxDelaySec * 1000:
        raise UsageError(
            f"{name}: delivery more than timerMaxDelaySec={config.timerMaxDelaySec} s ahead, which the broker rejects"
        )
    if config.timerCongestNumEachSlot < INT_MAX:
        raise UsageError(
            "timerCongestNumEachSlot is set: the broker's timer flow control (random, per slot) is not modelled"
        )
    precision = precision_ms(config.timerPrecisionMs)
    deliver = deliver - precision if deliver % precision == 0 else deliver // precision * precision
    pairs = list(msg.properties) + [
        ("TIMER_OUT_MS", str(deliver)),
        (PROPERTY_REAL_TOPIC, msg.topic),
        (PROPERTY_REAL_QID, str(msg.queue_id)),
    ]
    return dataclasses.replace(msg, topic=S.TIMER_TOPIC, queue_id=0, properties=pairs, broker_order=True)


def delay_level_of(msg: NewMessage) -> int:
    """Message.getDelayTimeLevel: its DELAY property, 0 without one; a DELAY that Integer.parseInt refuses fails
    the send."""
    value = dict(msg.properties).get(PROPERTY_DELAY)
    if value is None:
        return 0
    level = parse_long(value, 32)
    if level is None:
        raise UsageError(f"DELAY {value!r} is not a number: the broker's send fails on it (Integer.parseInt)")
    return level


def delayed_as_sent(msg: NewMessage, config: BrokerConfig) -> NewMessage:
    """A producer's message with a DELAY property as the broker stores it (4.9's CommitLog.asyncPutMessage, 5.x's
    HookUtils.handleScheduleMessage, both through getDelayTimeLevel): a level above 0 is apply_delay_level's
    rewrite."""
    level = delay_level_of(msg)
    return apply_delay_level(msg, level, config) if level > 0 else msg


# -- the appender -----------------------------------------------------------------------------------------


def properties_text(
    msg: NewMessage, version: int, crc_trailer: bool, config: BrokerConfig, next_queue_offset: Callable[[str, int], int]
) -> str:
    """The properties string as the broker would store it (before the CRC trailer); `next_queue_offset`
    gives a queue's next offset for INNER_MULTI_QUEUE_OFFSET."""
    if msg.properties_string is not None:
        text = msg.properties_string
        if crc_trailer:
            text = delete_property(text, CRC32_PROPERTY)
        pairs = None
    else:
        pairs = []
        for k, v in msg.properties:
            if not isinstance(k, str) or not isinstance(v, str):
                raise UsageError(f"property {k!r}: names and values must be strings")
            _check_property_text(k, v)
            if k.startswith(TRANSIENT_PREFIX) or (crc_trailer and k == CRC32_PROPERTY):
                continue
            pairs.append((k, v))
        if msg.broker_order:
            text = map_properties_string(pairs, version, from_client=True)
        else:
            text = encode_properties(pairs, trailing_separator=version >= 5)
    return _with_multi_queue_offsets(msg, text, pairs, version, config, next_queue_offset)


def _with_multi_queue_offsets(
    msg: NewMessage, text: str, pairs, version: int, config: BrokerConfig, next_queue_offset: Callable[[str, int], int]
) -> str:
    """MultiDispatch.wrapMultiDispatch (4.x) / LmqDispatch.wrapLmqDispatch (5.x), when the message names
    INNER_MULTI_DISPATCH queues but carries no INNER_MULTI_QUEUE_OFFSET: put each queue's next offset,
    drop WAIT, and rebuild the string from the broker's map."""
    props = dict(pairs) if pairs is not None else parse_properties(text)
    queues = props.get(PROPERTY_MULTI_DISPATCH, "")
    if not queues.strip() or PROPERTY_MULTI_QUEUE_OFFSET in props:
        return text
    names = java_split(queues, MULTI_DISPATCH_SEPARATOR)
    if version < 5:
        if not config.enableMultiDispatch:
            return text
        keys = [(n, lmq_queue_id(n, msg.queue_id, config.enableLmq)) for n in names]
    else:
        if not config.enableLmq or not multi_dispatched_topic(msg.topic, True):
            return text
        if not all(n.startswith(LMQ_PREFIX) for n in names):
            raise UsageError(
                "RocketMQ 5.x multi-dispatches only to %LMQ% queues; give INNER_MULTI_QUEUE_OFFSET yourself"
            )
        keys = [(n, 0) for n in names]
    offsets = MULTI_DISPATCH_SEPARATOR.join(str(next_queue_offset(t, q)) for t, q in keys)
    base = list(pairs) if pairs is not None else list(props.items())
    base = [(k, v) for k, v in base if k != PROPERTY_WAIT] + [(PROPERTY_MULTI_QUEUE_OFFSET, offsets)]
    return map_properties_string(base, version)


def catch_up(store: Store, d: Dispatcher, point: AppendPoint, config: BrokerConfig):
    """The broker's reput on start: dispatch the records of [catch_up_from, end), a commitlog file at a time,
    as the reput does (IndexService.buildIndex skips a record below the index's endPhyOffset), each file's
    new consumequeue and index files reserved before it is written, the records read as the recovery walk
    read them (V2 magic or not); then the checkpoint's consumequeue and index times (the commitlog's is left:
    no record was written). One deliberate difference from 5.x: its recoverNormally dispatches only records
    past maxPhyOffsetOfConsumeQueue (`>`: the record that starts where the queues end is never dispatched, and
    the reput then starts at the confirm offset); this dispatches it too, as 4.9.7's reput does, so no message
    is left out of its queue."""
    writer = BatchWriter(d, point.allow_v2, build_cq=True, build_index=True)
    for f, b in dispatch_range(store, point.catch_up_from, point.end, config, point.allow_v2):
        reserve_free_space(store.root, writer.space_needed([b]), keep=d.spare)
        if d.index is not None:
            d.index.reserve_keys(new_keys(d.index, b))
        writer.write_in_order(
            f.buf, b, lambda topic, position: refuse_queue_name(store.root, topic, f.start + position)
        )
    d.flush()
    d.spare.free()
    write_checkpoint(store.root, 0, d.logics_ts, d.index.completed_end_ts if d.index is not None else 0)


def stored_properties(
    msg: NewMessage,
    body_len: int,
    version: int,
    crc_trailer: bool,
    config: BrokerConfig,
    next_queue_offset: Callable[[str, int], int],
) -> bytes:
    """The stored properties bytes (with the CRC trailer's placeholder), checked against their limits and the
    broker's record check."""
    if body_len > config.maxMessageSize:
        raise UsageError(f"body is {body_len} bytes, over maxMessageSize={config.maxMessageSize}")
    props = java_utf8(properties_text(msg, version, crc_trailer, config, next_queue_offset))
    if crc_trailer:
        if props and not props.endswith(PROPERTY_SEPARATOR.encode()):
            props += PROPERTY_SEPARATOR.encode()
        props += CRC_TRAILER_PLACEHOLDER
    if len(props) > SHORT_MAX:
        raise UsageError(f"properties are {len(props)} bytes, over the {SHORT_MAX} a record holds")
    refuse_unreadable(msg.topic, props, version >= 5, config.duplicationEnable)
    return props


def refuse_unreadable(topic: str, props: bytes, v5: bool, dup_info: bool):
    """A record the broker's check fails on (rules.property_failure) is refused: its
    recovery would truncate the commitlog there, every later message with it."""
    pairs = parse_properties(decode_utf8(props)) if props else {}
    failure = property_failure(topic, bool(props), pairs, v5, dup_info)
    if failure is not None:
        raise UsageError(
            f"{failure[1]}: the broker's record check fails on it, and its recovery would truncate the commitlog there"
        )


def reference_record(row: tuple, parts: tuple, crc_trailer: bool) -> bytearray:
    """One record encoded by the reference encoder (record.encode_record) from engine.encode's row and bytes."""
    m = Message()
    (
        _,
        size,
        m.magicCode,
        m.queueId,
        m.flag,
        m.queueOffset,
        m.physicalOffset,
        m.sysFlag,
        m.bornTimestamp,
        m.bornPort,
        m.storeTimestamp,
        m.storePort,
        m.reconsumeTimes,
        m.preparedTransactionOffset,
        *_,
    ) = row
    m.bornIp, m.storeIp, m.body, m.topicBytes, m.propertiesBytes = parts
    m.bodyCRC = crc31(m.body)
    record = bytearray(encode_record(m))
    if crc_trailer:
        # doAppend: the CRC covers the final bytes (offsets and store time patched) minus the trailer
        crc = crc31(memoryview(record)[: size - S.CRC32_RESERVED_LEN])
        record[size - 1 - CRC_DIGITS : size - 1] = crc_digits(crc).encode("ascii")
    return record


def refuse_bad_queues(root: Path, batches: list):
    """What the dispatch of `batches` refuses (first_bad_queue), said before anything is durable, as a full disk is."""
    for start, _, b in batches:
        bad = first_bad_queue(b, np.arange(len(b.cq_record)))
        if bad is not None:
            refuse_queue_name(root, bad[0], start + bad[1])


def refuse_queue_name(root: Path, topic: str, offset: int):
    raise StoreError(
        f"queue {topic!r} of the record cannot be a consumequeue directory name; refusing to dispatch it",
        root / "commitlog",
        offset=offset,
    )


class CommitLogTail:
    """The commitlog files being appended to: the append point, the BLANK that ends a full file and the roll
    to the next, files created (or preallocated ones reused) in the directories the config names, and their
    flush. With `dry_run` only the positions move."""

    def __init__(self, store: Store, end: int, dry_run: bool):
        self.file_size = store.commitlog.file_size
        self.dry_run = dry_run
        self.files: dict[int, WritableFile] = {}
        self.pending: dict[int, tuple[list, list]] = {}  # file start -> staged records' rows and bytes
        self.blocks: list[tuple[int, np.ndarray, tuple]] = []  # (file start, rows, columns) staged as columns
        self._buffer = np.empty(0, np.uint8)  # what encode() encodes records into before the file
        self.encoded: dict[int, list[tuple[int, bytes]]] = {}  # file start -> records staged as bytes (write)
        self.new_dirs: set[Path] = set()
        self._existing = {f.start: f for f in store.commitlog.files}
        self._dirs = sorted(store.commitlog_dirs)
        # the append point: file start and write position; the file is opened by the first append
        self.cur_start = None
        self._first_start = end - end % self.file_size
        self.wrote = end % self.file_size
        self.durable_end = end  # the commitlog up to here is committed; past it nothing is acknowledged

    def place(self, size: int) -> tuple[int, int]:
        """doAppend's space check: a record fits only with 8 bytes to spare; otherwise the 8-byte BLANK
        (TOTALSIZE = the rest of the file) ends this file and the record goes to offset 0 of the next."""
        if self.cur_start is None:
            self.cur_start = self._first_start
            self._open_file(self.cur_start)
        remaining = self.file_size - self.wrote
        if size + S.END_FILE_MIN_BLANK_LENGTH > remaining:
            # MappedFileQueue.getLastMappedFile: the next file starts one file size on; it is created first,
            # so a full disk stops here with the current file unchanged
            self._open_file(self.cur_start + self.file_size)
            if not self.dry_run:
                f = self.files[self.cur_start]
                f.reserve_to(self.wrote + S.BLANK.size)
                S.BLANK.pack_into(f.map, self.wrote, remaining, S.MAGIC_BLANK)
                f.dirty = True
            self.cur_start += self.file_size
            self.wrote = 0
        if not self.dry_run:
            self.files[self.cur_start].reserve_to(self.wrote + size)
        return self.cur_start, self.wrote

    def place_many(self, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """place() for records of these sizes in order: (file starts, positions). Records that fit the current
        file go at once; the one that does not goes through place(), which ends the file and rolls on."""
        starts, positions = np.empty(len(sizes), np.int64), np.empty(len(sizes), np.int64)
        i = 0
        while i < len(sizes):
            start, positions[i] = self.place(int(sizes[i]))
            ends = positions[i] + np.cumsum(sizes[i:])
            fit = i + int(np.searchsorted(ends + S.END_FILE_MIN_BLANK_LENGTH, self.file_size, side="right"))
            fit = max(fit, i + 1)
            positions[i + 1 : fit] = ends[: fit - i - 1]
            starts[i:fit] = start
            self.wrote = int(ends[fit - i - 1])
            if not self.dry_run:
                self.files[start].reserve_to(self.wrote)
            i = fit
        return starts, positions

    def stage_block(self, start: int, fields: np.ndarray, parts: tuple):
        """Records of the file at `start` to encode at encode(), as rows of engine.encode's COLUMNS and the columns
        their bytes are copied from (engine.encode_column_block's parts)."""
        self.blocks.append((start, fields, parts))

    def stage(self, start: int, row: tuple, parts: tuple):
        """A record to encode at row[0] of the file at `start` (engine.encode's row and bytes), at encode()."""
        if not self.dry_run:
            rows, blobs = self.pending.setdefault(start, ([], []))
            rows.append(row)
            blobs.extend(parts)
        self.wrote = row[0] + row[1]

    def encode(self, crc_trailer: bool, jobs: int | None):
        """Write the staged records, a file's at a time: encoded in one compiled pass (a block of them in `jobs`
        threads, None: one per core) into a buffer of their own, then copied into the file with the first
        record's TOTALSIZE last. A kill before that leaves a TOTALSIZE of 0 where they begin, which ends the data
        for the broker's recovery and append's, never a record torn after a sound head: 4.x covers no property
        byte with a CRC, so a tail still zero would read as part of a message."""
        for start in sorted({*self.pending, *self.encoded, *(s for s, _, _ in self.blocks)}):
            rows, parts = self.pending.get(start, ([], []))
            blocks = [(fields, p) for s, fields, p in self.blocks if s == start]
            written = self.encoded.get(start, [])
            lo, hi = _extent(rows, written, blocks)
            if len(self._buffer) < hi - lo:  # (kept from commit to commit: its pages are faulted in once)
                self._buffer = np.empty(hi - lo, np.uint8)
            staged = self._buffer[: hi - lo]
            if rows:
                encode_batch(staged, [(r[0] - lo, *r[1:]) for r in rows], parts, crc_trailer)
            for fields, p in blocks:
                moved = fields.copy()
                moved[:, 0] -= lo
                encode_column_block(staged, moved, p, crc_trailer, jobs or available_cores())
            for pos, record in written:
                staged[pos - lo : pos - lo + len(record)] = np.frombuffer(record, np.uint8)
            f = self.files[start]
            into_file(f.map, lo, staged)
            f.dirty = True
        self.pending.clear()
        self.blocks.clear()
        self.encoded.clear()

    def dispatched(
        self,
        starts: np.ndarray,
        all_positions: np.ndarray,
        config: BrokerConfig,
        allow_v2: bool,
        with_keys: bool,
        jobs: int | None,
    ) -> list:
        """(file start, file map, batchdispatch.FileDispatch) of the staged records (at these file starts and
        positions, in order), a commitlog file at a time: the broker's reput of them, read back from the bytes
        written, decoded in `jobs` threads (None: every core)."""
        out = []
        cuts = np.flatnonzero(np.diff(starts)) + 1
        for i, j in zip([0, *cuts.tolist()], [*cuts.tolist(), len(starts)]):
            start, positions = int(starts[i]), all_positions[i:j]
            f = self.files[start]
            b = dispatch_file(f.map, self.file_size, config, allow_v2, with_keys, jobs=jobs, starts=positions)
            if len(b.position) < j - i:  # a record just encoded that the broker's reader would refuse
                raise StoreError(
                    "a record rmqctl wrote does not read back; nothing was acknowledged",
                    f.path,
                    position=int(positions[len(b.position)]),
                )
            out.append((start, f.map, b))
        return out

    def write(self, start: int, pos: int, record: bytes):
        """A record encoded already (by the reference encoder), staged to go into the file with the others at
        encode()."""
        if not self.dry_run:
            self.encoded.setdefault(start, []).append((pos, record))
        self.wrote = pos + len(record)

    def _open_file(self, start: int):
        """An existing (preallocated, all-zero) file is reused; otherwise it is created at full size."""
        if self.dry_run or start in self.files:
            return
        existing = self._existing.get(start)
        if existing is not None:
            self.files[start] = WritableFile(existing.path, self.file_size, create=False, ahead=0)
            return
        directory = self._dirs[(start // self.file_size) % len(self._dirs)]
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            self.new_dirs.add(directory.parent)
        self.files[start] = WritableFile(
            directory / offset_to_name(start), self.file_size, create=True, ahead=RESERVE_AHEAD
        )
        self.new_dirs.add(directory)

    def flush(self):
        """msync + fsync every file written, then the directories of new files (deepest first)."""
        for start in sorted(self.files):
            self.files[start].flush()
        for d in sorted(self.new_dirs, key=lambda p: len(p.parts), reverse=True):
            fsync_dir(d)
        self.new_dirs.clear()
        if self.cur_start is not None:
            self.durable_end = self.cur_start + self.wrote  # a failure from here on leaves them for the reput
            self.files[self.cur_start].release_below(self.wrote)

    def close_full(self):
        for start in [s for s in self.files if s != self.cur_start]:
            self.files.pop(start).close()

    def take_back(self):
        """Undo the writes of messages never committed (an error, such as a full disk, came first): their
        bytes (and an end-of-file BLANK they caused) become zeros again and files created for them go, so
        the commitlog is as it was; none of them was acknowledged."""
        end = self.cur_start + self.wrote
        for start in sorted(self.files):
            f = self.files[start]
            if f.created and start >= self.durable_end:
                f.map.close()
                os.close(f.fd)
                os.unlink(f.path)
                fsync_dir(f.path.parent)
                del self.files[start]
                continue
            lo, hi = max(self.durable_end, start) - start, min(end, start + self.file_size) - start
            if lo < hi:  # (the first TOTALSIZE first: a kill mid-way then leaves the data ending there)
                f.map[lo : min(lo + S.INT32.size, hi)] = bytes(min(S.INT32.size, hi - lo))
                f.map[lo:hi] = bytes(hi - lo)
                f.dirty = True

    def close(self):
        self.pending.clear()  # never written: nothing to take back
        self.blocks.clear()
        self.encoded.clear()
        if not self.dry_run and self.cur_start is not None and self.cur_start + self.wrote > self.durable_end:
            self.take_back()
        for f in self.files.values():
            f.close()
        self.files.clear()


def _extent(rows: list, written: list, blocks: list) -> tuple[int, int]:
    """Where a file's staged records (rows, records as bytes, column blocks) begin and end. They must lie end to
    end: every byte of the buffer they are encoded into is a record's, and a gap would copy stale bytes."""
    spans = [(r[0], r[0] + r[1]) for r in rows] + [(pos, pos + len(rec)) for pos, rec in written]
    spans += [(int(f[:, 0].min()), int((f[:, 0] + f[:, 1]).max())) for f, _ in blocks]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    sizes = sum(r[1] for r in rows) + sum(len(rec) for _, rec in written) + sum(int(f[:, 1].sum()) for f, _ in blocks)
    if sizes != hi - lo:
        raise AssertionError(f"a file's staged records do not lie end to end ({sizes} bytes in {hi - lo})")
    return lo, hi


def into_file(m, lo: int, staged: np.ndarray):
    """A file's encoded records (`staged`, from position `lo` of its map) into the file, the first record's
    TOTALSIZE last: until it lands, the data ends where they begin (CommitLogTail.encode)."""
    m[lo + S.INT32.size : lo + len(staged)] = staged[S.INT32.size :]
    m[lo : lo + S.INT32.size] = staged[: S.INT32.size]


class Appender:
    """Appends messages to the store at `store_root` (a new store where lock_new_or_existing allows), holding
    the broker's lock from open() to close(). Use as a context manager:
        with Appender("/data/store", load_config("broker.conf")) as app:
            app.append(NewMessage(topic="TopicTest", body=b"hi", properties=[("TAGS", "A")]))
            print(app.commit())   # durable from here on
    `rocketmq_version` (4 or 5) chooses the record style: from the config (rocketmqVersion, or a 5.x-only key
    such as enabledAppendPropCRC), else the store's records, else 4 (every broker reads it). `keep_index_time`
    names new index files by the store time of the message opening them (copies stay reproducible).
    `dry_run` computes everything and writes nothing. `jobs`: the threads that encode a commit's records and decode
    them for their dispatch (None: one per core; 1 where the caller's own threads keep the other cores busy)."""

    def __init__(
        self,
        store_root: str | os.PathLike,
        config: BrokerConfig | None = None,
        rocketmq_version: int | None = None,
        dry_run: bool = False,
        keep_index_time: bool = False,
        clock: Callable[[], int] | None = None,
        create: bool = False,
        jobs: int | None = None,
    ):
        self.root = Path(store_root).expanduser()
        self.jobs = jobs
        self.create, self._created, self._committed = create, [], False
        self.config = config or BrokerConfig()
        refuse_dledger_replica(self.root, self.config)
        self.requested_version = rocketmq_version
        self.dry_run = dry_run
        self.keep_index_time = keep_index_time
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.version = 4
        self.version_source = "default"
        self.warnings: list[str] = []
        self._lock = None
        self._dispatcher: Dispatcher | None = None
        self._staged: list = []  # (file start, position, store time, Appended) or an AckBlock, in order
        self._topics: dict[tuple[str, bool], tuple[bool, bytes]] = {}
        self._tail: CommitLogTail | None = None
        self._next: dict[tuple[str, int], int] = {}
        self._read_queues: set[tuple[str, int]] = set()  # queues whose consumequeue max offset is merged in
        self._opened = False

    # -- open: lock, geometry, recovery, catch-up ---------------------------------------------------------
    def __enter__(self) -> "Appender":
        self.open()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        self.close()

    def open(self):
        if not self.dry_run:  # (a dry run writes nothing and takes no lock: it may preview a running broker's store)
            self._lock, self._created = lock_new_or_existing(self.root, self.config, self.create)
        try:
            self._open_store()
        except BaseException:
            self.close()
            raise
        self._opened = True

    def _open_store(self):
        store = self.store = store_to_append(self.root, self.config)
        self.file_size, self.cq_file_size = store.commitlog.file_size, store.consumequeue_file_size
        self.slot_num, self.index_num = store.index_geometry
        self.version, self.version_source = config_version(self.config, self.requested_version)
        self._batch_topics = frozenset(batch_topics(store))  # dispatched to batchconsumequeue/, never appended to
        rec = append_point(store, self.config, self.version, self.version_source)
        if self.version_source == "default":
            self.version, self.version_source = store_version(self.root, rec.style_votes) or (self.version, "default")
        self.crc_trailer = self.version >= 5 and self.config.enabledAppendPropCRC
        self.default_store_host = self.config.store_host or rec.last_store_host
        self.end, self._next = rec.end, rec.next_offsets
        self._tail = CommitLogTail(store, rec.end, self.dry_run)
        if self.dry_run:
            return
        self._dispatcher = appending_dispatcher(self, store)
        self._writer = BatchWriter(self._dispatcher, self.version >= 5, build_cq=True, build_index=True)
        if rec.catch_up_from is not None:
            catch_up(store, self._dispatcher, rec, self.config)
            self.warnings += dispatch_warnings(self._dispatcher)

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        """The next message's queue offset: the consumequeue's max, or past the commitlog's records, if higher."""
        key = (topic, queue_id)
        if key not in self._read_queues:
            hi = self.store.consume_queue(topic, queue_id).offset_range()[1] if valid_topic_dir_name(topic) else 0
            self._next[key] = max(self._next.get(key, 0), hi)
            self._read_queues.add(key)
        return self._next[key]

    def append(self, msg: NewMessage, producer_topic_rules: bool = True) -> Appended:
        """Place one message and stage its record (not yet durable: commit() encodes the staged records, makes
        them durable and dispatches them). `producer_topic_rules` applies TopicValidator as a producer's send
        meets it; copies of stored records (dump lines) are held only to what the store itself accepts."""
        if not self._opened:
            raise UsageError("Appender.open() first")
        _check_fields(msg, self._batch_topics)
        v2, topic_bytes = self._topic(msg.topic, producer_topic_rules)
        store_host = msg.store_host or self.default_store_host
        if not store_host:
            raise UsageError("no store host: give --store-host (storeHost) or set brokerIP1 in the broker config")
        born_ip, born_port, store_ip, store_port, combo, sys_flag = record_hosts(msg, store_host)
        body = bytes(msg.body)
        props = stored_properties(msg, len(body), self.version, self.crc_trailer, self.config, self.next_queue_offset)
        size = S.record_length(sys_flag, len(body), len(topic_bytes), len(props), v2)
        check_record_size(size, self.config.maxMessageSize, self.file_size)
        dispatched = sys_flag & S.TRANSACTION_MASK in (S.TRANSACTION_NOT_TYPE, S.TRANSACTION_COMMIT_TYPE)
        queue_offset = self.next_queue_offset(msg.topic, msg.queue_id) if dispatched else 0
        start, pos = self._tail.place(size)
        born_ts = self.clock() if msg.born_timestamp is None else msg.born_timestamp
        store_ts = self.clock() if msg.store_timestamp is None else msg.store_timestamp
        # the record's fields in layout order, as the encoder takes them (kept dense: formatting would stack 18 lines)
        row = (pos, size, S.MAGIC_V2 if v2 else S.MAGIC_V1, msg.queue_id, msg.flag, queue_offset, start + pos, sys_flag,
               born_ts, born_port, store_ts, store_port, msg.reconsume_times, msg.prepared_transaction_offset,
               len(body), len(topic_bytes), len(props), combo)  # fmt: skip
        parts = (born_ip, store_ip, body, topic_bytes, props)
        if dispatched and self.config.enableMultiDispatch and PROPERTY_MULTI_DISPATCH.encode() in props:
            # written at once by the reference encoder: its entries are read from the record itself
            record = reference_record(row, parts, self.crc_trailer)
            self._tail.write(start, pos, record)
            targets = cq_targets(read_record(record, 0, size), self.config, self.version >= 5)
        else:
            self._tail.stage(start, row, parts)
            targets = [(msg.topic, msg.queue_id, queue_offset)] if dispatched else []
        for t, q, qoff in targets:
            self._next[(t, q)] = max(self._next.get((t, q), 0), qoff + 1)
        result = Appended(
            start + pos, queue_offset, message_id(store_ip, store_port, start + pos), offset_to_name(start), pos
        )
        self._staged.append((start, pos, store_ts, result))
        return result

    def _topic(self, topic: str, producer_topic_rules: bool) -> tuple[bool, bytes]:
        """(V2 record, topic bytes) once the topic passed its checks; remembered per topic."""
        key = (topic, producer_topic_rules)
        got = self._topics.get(key)
        if got is None:
            if producer_topic_rules:  # (the topic stored: a delayed send's is SCHEDULE_TOPIC_XXXX by now)
                validate_topic_name(topic)
            got = self._topics[key] = (record_version_for_topic(topic, self.version, self.config), java_utf8(topic))
        return got

    def commit(self) -> list[Appended]:
        """Make the written messages durable in the broker's order: commitlog (msync + fsync, new files'
        directories), then consumequeue and index entries, then the checkpoint. Returns where they went."""
        return [a for e in self._commit() for a in (e.appended() if isinstance(e, AckBlock) else [e[3]])]

    def commit_lines(self) -> str:
        """commit(), its acknowledgements as the JSON lines `append` prints."""
        return "".join(e.lines() if isinstance(e, AckBlock) else dumps_appended(e[3]) for e in self._commit())

    def _commit(self) -> list:
        staged, self._staged = self._staged, []
        if self.dry_run or not staged:
            return staged
        with sigint_held():  # (Ctrl-C lands between commits: see budget.sigint_held)
            self._tail.encode(self.crc_trailer, self.jobs)
            batches = self._tail.dispatched(
                *staged_places(staged), self.config, self.version >= 5, self._dispatcher.index is not None, self.jobs
            )
            refuse_bad_queues(self.root, batches)
            # the dispatch's new files and the checkpoint must fit before anything is durable (close() undoes it)
            needed = self._writer.space_needed([b for *_, b in batches])
            reserve_free_space(self.root, needed + [S.CHECKPOINT_FILE_SIZE], keep=self._dispatcher.spare)
            if self._dispatcher.index is not None:
                self._dispatcher.index.reserve_keys(sum(len(b.key_hash) for *_, b in batches))
            self._tail.flush()  # one fsync for the batch: the broker's group commit
            d = self._dispatcher
            for start, buf, b in batches:
                self._writer.write_in_order(
                    buf, b, lambda topic, position: refuse_queue_name(self.root, topic, start + position)
                )
            d.flush()
            d.spare.free()  # what the dispatch did not take
            self.warnings += dispatch_warnings(self._dispatcher)
            index, last = d.index, staged[-1]
            physic_ts = int(last.store_ts[-1]) if isinstance(last, AckBlock) else last[2]
            write_checkpoint(self.root, physic_ts, d.logics_ts, index.completed_end_ts if index is not None else 0)
            self._committed = True
            self._tail.close_full()  # full files: nothing more to write there
            return staged

    def close(self):
        if self._tail is not None:
            self._tail.close()
        if self._dispatcher is not None:
            self._dispatcher.close()
            self._dispatcher = None
        if hasattr(self, "store"):
            self.store.close()
        if not self._committed:
            self._created = remove_created(self._created)
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.__exit__(None, None, None)
        self._opened = False


def staged_places(staged: list) -> tuple[np.ndarray, np.ndarray]:
    """(file starts, positions) of staged messages (Appender._staged's entries), in order."""
    starts = np.concatenate([e.starts if isinstance(e, AckBlock) else [e[0]] for e in staged]).astype(np.int64)
    return starts, np.concatenate([e.positions if isinstance(e, AckBlock) else [e[1]] for e in staged]).astype(np.int64)


def dumps_appended(a: Appended) -> str:
    """An acknowledgement line: compact JSON of Appended's fields."""
    return orjson.dumps(a.as_dict()).decode() + "\n"


def appending_dispatcher(app: Appender, store: Store) -> Dispatcher:
    """The Dispatcher an Appender writes its consumequeue, BatchCQ and index entries with."""
    return Dispatcher(
        app.root,
        app.config,
        app.cq_file_size,
        app.slot_num,
        app.index_num,
        app.version >= 5,
        index_clock=app.clock,
        index_by_store_time=app.keep_index_time,
        batch_topics=app._batch_topics,
        batch_file_size=queue_file_size(store),
    )


def refuse_dledger_replica(root: Path, config: BrokerConfig):
    """A message appended offline to one replica of a DLedger group makes its log diverge from the others'."""
    if root.is_dir() and dledger.detect(root, config) is not None:
        raise UsageError(
            "this store is one replica of a DLedger (Raft) group: a message appended offline to one "
            "replica makes its log diverge from the others' (a new leader truncates or contradicts "
            "it); refusing. Send it through the group's leader instead",
            root,
        )


def record_hosts(msg: NewMessage, store_host: str) -> tuple[bytes, int, bytes, int, int, int]:
    """(born ip, born port, store ip, store port, host combination, sysFlag) of a message's record: the broker sets
    the IPv6 bits from the address types; a stale bit would misplace every later field."""
    born_ip, born_port = _host(msg.born_host or store_host, "bornHost")
    store_ip, store_port = _host(store_host, "storeHost")
    combo = (len(born_ip) == 16) + 2 * (len(store_ip) == 16)
    sys_flag = msg.sys_flag & ~(S.BORNHOST_V6_FLAG | S.STOREHOSTADDRESS_V6_FLAG)
    sys_flag |= (S.BORNHOST_V6_FLAG if combo & 1 else 0) | (S.STOREHOSTADDRESS_V6_FLAG if combo & 2 else 0)
    return born_ip, born_port, store_ip, store_port, combo, sys_flag


def check_record_size(size: int, max_message_size: int, file_size: int):
    """A record the broker's encoder refuses, or one no commitlog file can hold beside its end-of-file blank."""
    if size > max_message_size + ENCODER_HEADROOM:
        raise UsageError(f"record is {size} bytes, over maxMessageSize + 64 KiB")
    if size + S.END_FILE_MIN_BLANK_LENGTH > file_size:
        raise UsageError(
            f"record is {size} bytes: with the 8-byte end-of-file blank it cannot fit a {file_size}-byte commitlog file"
        )


def write_checkpoint(root: Path, physic_ts: int, logics_ts: int, index_end_ts: int):
    """StoreCheckpoint: physicMsgTimestamp = the last flushed message's store time, logicsMsgTimestamp =
    the last consumequeue write's, indexMsgTimestamp = the end time of the newest completed index file.
    A missing checkpoint is created at its 4096 bytes; the other fields are left as they are."""
    path = root / "checkpoint"
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size < S.CHECKPOINT_FILE_SIZE:
            os.ftruncate(fd, S.CHECKPOINT_FILE_SIZE)
        names = [n for n, _ in S.fixed_fields(S.Checkpoint)]
        values = dict(zip(names, S.CHECKPOINT_HEAD.unpack(os.pread(fd, S.CHECKPOINT_HEAD.size, 0))))
        updates = {"physicMsgTimestamp": physic_ts, "logicsMsgTimestamp": logics_ts, "indexMsgTimestamp": index_end_ts}
        values.update({k: v for k, v in updates.items() if v > 0})
        os.pwrite(fd, S.CHECKPOINT_HEAD.pack(*(values[n] for n in names)), 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(root)


def dispatch_warnings(d: Dispatcher) -> list[str]:
    """What the dispatcher met (duplicates, out-of-order entries) as warnings, once."""
    out = [
        f"consumequeue {queue}: entry {qoff} for commitlog offset {off} was {status}"
        for status, queue, qoff, off in d.events
        if status != "already-built"
    ]
    d.events.clear()
    return out


def store_to_append(root: Path, config: BrokerConfig) -> Store:
    """The store, refused when it holds a part this version does not read or a link leading out of it."""
    store = Store(root, config)
    store.parts.refuse_writer("append", DISPATCH_PARTS)
    refuse_links_outside(store)
    return store


def _check_fields(msg: NewMessage, batch_topics: frozenset):
    """Header fields within their Java types; no inner batch, and no message to a BatchCQ topic (the broker
    assigns their queue offsets from its batch offset table, which rmqctl does not)."""
    if msg.topic in batch_topics:
        raise UsageError(
            f"topic {msg.topic!r} is a BatchCQ topic (queue.type=BatchCQ): its queue offsets are the "
            "broker's batch offsets, which rmqctl does not assign; nothing was appended"
        )
    for name, value, bounds in (
        ("queueId", msg.queue_id, INT32_RANGE),
        ("flag", msg.flag, INT32_RANGE),
        ("sysFlag", msg.sys_flag, INT32_RANGE),
        ("reconsumeTimes", msg.reconsume_times, INT32_RANGE),
        ("preparedTransactionOffset", msg.prepared_transaction_offset, INT64_RANGE),
    ):
        _check_range(name, value, bounds)
    for name, value in (("bornTimestamp", msg.born_timestamp), ("storeTimestamp", msg.store_timestamp)):
        if value is not None:
            _check_range(name, value, INT64_RANGE)
    if msg.sys_flag & S.INNER_BATCH_FLAG:
        raise UsageError(
            "inner-batch records (sysFlag 0x80) belong to a BatchConsumeQueue, which rmqctl does not append to"
        )


def lock_new_or_existing(root: Path, config: BrokerConfig, create: bool):
    """The store's lock, taken (entered), and what was created for it. A new store only where one was asked
    for, so a misspelt --store never becomes one: an existing empty directory (a lock file alone counts as
    empty), or any directory with `create`, is made a store root the way the broker's first start makes one
    (the root, the commitlog and consumequeue directories, then the lock). What it creates is taken away
    again if the lock cannot be had, or (Appender.close) if nothing was committed."""
    if root.is_dir():
        try:
            Store(root, config)
            created = []
        except StoreError:
            if any(p.name != "lock" for p in root.iterdir()) and not create:
                raise StoreError(
                    "not a RocketMQ store root, and not empty: pass --create to make a new store in it", root
                ) from None
            created = make_store_root(root, config)
    elif not create:
        raise StoreError("store directory does not exist: pass --create to make a new store there", root)
    else:
        created = make_store_root(root, config)
    lock = locked_for_writing(root)
    try:
        lock.__enter__()
    except BaseException:
        remove_created(created)
        raise
    return lock, created


def make_store_root(root: Path, config: BrokerConfig) -> list[Path]:
    created = []
    for d in [root, *commitlog_dirs(root, config), root / "consumequeue"]:
        missing = [p for p in [*reversed(d.parents), d] if not p.exists()]
        for p in missing:
            p.mkdir()
        created += missing
    if not (root / "lock").exists():
        created.append(root / "lock")  # the lock is taken next
    for p in reversed(created):
        if p.is_dir():
            fsync_dir(p.parent)
    return created


def remove_created(created: list[Path]) -> list[Path]:
    """Take away what make_store_root made (deepest first); returns what is left to take away: nothing."""
    for p in reversed(created):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists():
            p.unlink()
    return []


@functools.lru_cache(maxsize=1024)  # a copy's lines name the same few hosts
def _host(text: str, what: str) -> tuple[bytes, int]:
    try:
        ip, port = parse_host(text)
    except (ValueError, TypeError):
        raise UsageError(f"{what} {text!r} is not ip:port") from None
    if not 0 <= port <= 0xFFFF:
        raise UsageError(f"{what} {text!r}: port out of range")
    return ip, port
