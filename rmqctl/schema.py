"""Every on-disk layout of a RocketMQ store, declared once with construct.

These declarations are the single source of truth: they parse and build (tests round-trip every fixture
record through them), the `formats/` pages are checked against them, and the hot paths below are *derived*
from them (struct format strings and numpy dtypes), never written a second time by hand.

All integers are big-endian (Java ByteBuffer default). Sources: CommitLog.java / MessageExtEncoder.java,
ConsumeQueue.java, IndexHeader.java / IndexFile.java, StoreCheckpoint.java, timer/*.java (apache/rocketmq store module).
"""

from __future__ import annotations

import re
import struct

import numpy as np
from construct import (
    Bytes,
    Const,
    FormatField,
    IfThenElse,
    Int8sb,
    Int16sb,
    Int32sb,
    Int16ub,
    Int32ub,
    Int64sb,
    Padding,
    Struct,
    Switch,
    this,
)

MAGIC_V1 = -626843481  # 0xDAA320A7 MESSAGE_MAGIC_CODE
MAGIC_V2 = -626843477  # 0xDAA320AB MESSAGE_MAGIC_CODE_V2 (5.1.0+: 2-byte topic length)
MAGIC_BLANK = -875286124  # 0xCBD43194 BLANK_MAGIC_CODE
MAGIC_NAMES = {MAGIC_V1: "V1", MAGIC_V2: "V2", MAGIC_BLANK: "BLANK"}

# MessageSysFlag
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
TRANSACTION_MASK = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80
COMPRESSION_TYPE_MASK = 0x700
KNOWN_SYSFLAG_BITS = 0x7FF

END_FILE_MIN_BLANK_LENGTH = 8
CQ_UNIT_SIZE = 20
BCQ_UNIT_SIZE = 46  # BatchConsumeQueue.CQ_STORE_UNIT_SIZE
CQ_EXT_UNIT_MIN_SIZE = 20  # ConsumeQueueExt.CqExtUnit.MIN_EXT_UNIT_SIZE: the head without a bitmap
CQ_EXT_MAX_ADDRESS = -(1 << 31) - 1  # ConsumeQueueExt.MAX_ADDR: a tagsCode at or below it is an ext address
BCQ_INVALID_POS = -1  # BatchConsumeQueue.INVALID_POS, the compactedOffset every unit is written with
INDEX_HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20


def index_file_size(slots: int, entries: int) -> int:
    """IndexFile's fileTotalSize: header, hash slots, entries."""
    return INDEX_HEADER_SIZE + slots * HASH_SLOT_SIZE + entries * INDEX_ENTRY_SIZE


CHECKPOINT_FILE_SIZE = 4096
OFFSET_FILE_NAME = re.compile(r"^\d{20}$")  # commitlog and consumequeue files: their start offset, 20 digits
CRC32_RESERVED_LEN = 20  # "__CRC32#" + 0x01 + 10 digits + 0x02
PRE_BLANK_SIZE = 0x7FFFFFFF  # ConsumeQueue.fillPreBlank unit: (0, Integer.MAX_VALUE, 0)


def host(v6_flag: int):
    """MessageExt.socketAddress2ByteBuffer: raw address (4 or 16 bytes) then the port as int32."""
    return IfThenElse(
        lambda ctx: ctx.sysFlag & v6_flag,
        Struct("ip" / Bytes(16), "port" / Int32sb),
        Struct("ip" / Bytes(4), "port" / Int32sb),
    )


# The commitlog message record (MessageExtEncoder.encode / CommitLog.checkMessageAndReturnSize).
CommitLogRecord = Struct(
    "storeSize" / Int32sb,
    "magicCode" / Int32sb,
    "bodyCRC" / Int32sb,
    "queueId" / Int32sb,
    "flag" / Int32sb,
    "queueOffset" / Int64sb,
    "physicalOffset" / Int64sb,
    "sysFlag" / Int32sb,
    "bornTimestamp" / Int64sb,
    "bornHost" / host(BORNHOST_V6_FLAG),
    "storeTimestamp" / Int64sb,
    "storeHost" / host(STOREHOSTADDRESS_V6_FLAG),
    "reconsumeTimes" / Int32sb,
    "preparedTransactionOffset" / Int64sb,
    "bodyLength" / Int32sb,
    # the body is only consumed when bodyLen > 0 (MessageDecoder / checkMessageAndReturnSize)
    "body" / Bytes(lambda ctx: max(ctx.bodyLength, 0)),
    # V1: signed byte (a 128+ byte topic decodes negative and is rejected); V2: signed int16
    "topicLength" / Switch(this.magicCode, {MAGIC_V2: Int16sb}, default=Int8sb),
    "topic" / Bytes(lambda ctx: max(ctx.topicLength, 0)),
    "propertiesLength" / Int16sb,
    "properties" / Bytes(lambda ctx: max(ctx.propertiesLength, 0)),
)

# The end-of-file filler: only these 8 bytes are written; the rest of the file stays zero.
BlankRecord = Struct("storeSize" / Int32sb, "magicCode" / Const(MAGIC_BLANK, Int32sb))

# ConsumeQueue unit (CQ_STORE_UNIT_SIZE = 20).
ConsumeQueueUnit = Struct("commitLogOffset" / Int64sb, "size" / Int32sb, "tagsCode" / Int64sb)

# ConsumeQueueExt (enableConsumeQueueExt): consumequeue_ext/{topic}/{queueId}/, one unit per consume queue unit,
# whose tagsCode then holds the unit's address (its offset + Long.MIN_VALUE); the filter bitmap (bitMapSize
# bytes) follows the head
ConsumeQueueExtUnit = Struct(
    "size" / Int16sb,  # the unit's bytes, bitmap included; <= 0 ends a file's units (-1: the file is full)
    "tagsCode" / Int64sb,  # the TAGS hash code the consume queue unit would hold
    "msgStoreTime" / Int64sb,  # the record's store timestamp
    "bitMapSize" / Int16sb,  # the filter bitmap's bytes after this head (0: none)
)

# BatchConsumeQueue (5.0+, topics with queue.type=BatchCQ): one unit per record, covering batchSize queue offsets
BatchConsumeQueueUnit = Struct(
    "commitLogOffset" / Int64sb,
    "size" / Int32sb,
    "tagsCode" / Int64sb,
    "storeTime" / Int64sb,
    "msgBaseOffset" / Int64sb,  # the first queue offset the record covers
    "batchSize" / Int16sb,  # how many: INNER_NUM of an inner batch, else 1
    "compactedOffset" / Int32sb,  # written as -1 (INVALID_POS)
    "reserved" / Int32sb,  # written as 0
)

IndexHeader = Struct(
    "beginTimestamp" / Int64sb,
    "endTimestamp" / Int64sb,
    "beginPhyOffset" / Int64sb,
    "endPhyOffset" / Int64sb,
    "hashSlotCount" / Int32sb,
    "indexCount" / Int32sb,
)

# The newest entry number of the slot's chain; 0 = empty.
HashSlot = Struct("indexNumber" / Int32sb)

IndexEntry = Struct("keyHash" / Int32sb, "phyOffset" / Int64sb, "timeDiff" / Int32sb, "prevIndex" / Int32sb)

# StoreCheckpoint: a 4096-byte mmap; 4.9 uses the first 3 fields, 5.0 adds masterFlushedOffset and
# 5.1.1 confirmPhyOffset. The rest is zero.
_CHECKPOINT_FIELDS = (
    "physicMsgTimestamp" / Int64sb,
    "logicsMsgTimestamp" / Int64sb,
    "indexMsgTimestamp" / Int64sb,
    "masterFlushedOffset" / Int64sb,
    "confirmPhyOffset" / Int64sb,
)
Checkpoint = Struct(*_CHECKPOINT_FIELDS, Padding(CHECKPOINT_FILE_SIZE - Struct(*_CHECKPOINT_FIELDS).sizeof()))
CHECKPOINT_FIELDS_49 = ("physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp")

# ---- 5.x timer wheel (store/timer/: TimerLog.java, Slot.java, TimerWheel.java, TimerCheckpoint.java) ----------
TIMER_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC: where timer messages wait in the commitlog
TIMER_MAGIC_DEFAULT, TIMER_MAGIC_ROLL, TIMER_MAGIC_DELETE = 1, 2, 4  # unit magic bits (MAGIC_*)
TIMERLOG_UNIT_SIZE = 52  # TimerLog.UNIT_SIZE
TIMERLOG_MIN_BLANK = 16  # TimerLog.MIN_BLANK_LEN: a file keeps room for this BLANK after its last unit
TIMER_WHEEL_SLOTS = 7 * 86400 * 2  # TIMER_WHEEL_TTL_DAY * DAY_SECS slots, twice: whatever the precision
WHEEL_SLOT_SIZE = 32  # Slot.SIZE
TIMERCHECK_FILE_SIZE = 4096  # TimerCheckpoint maps OS_PAGE_SIZE

# One message waiting in the wheel, appended by TimerMessageStore.doEnqueue; units of one slot chain
# newest first through prevPos (-1 ends the chain).
TimerLogUnit = Struct(
    "size" / Int32sb,
    "prevPos" / Int64sb,
    "magic" / Int32sb,
    "currWriteTimeMs" / Int64sb,
    "delayedTimeOffsetMs" / Int32sb,  # delivery (or roll) time - currWriteTimeMs
    "offsetPy" / Int64sb,
    "sizePy" / Int32sb,
    "realTopicHash" / Int32sb,  # REAL_TOPIC's String.hashCode, for the metrics
    "reserved" / Int64sb,
)

# TimerLog.append's end-of-file filler: the bytes left, a zero long, then the magic where a unit's magic sits.
TimerLogBlank = Struct("size" / Int32sb, "prevPos" / Int64sb, "magic" / Const(MAGIC_BLANK, Int32sb))

# One slot of the timerwheel file, at (timeMs / precisionMs) % TIMER_WHEEL_SLOTS * 32.
WheelSlot = Struct(
    "timeDivPrecision" / Int64sb,  # the slot's time / precisionMs; 0 = never used
    "firstPos" / Int64sb,
    "lastPos" / Int64sb,  # the newest unit, where the chain starts
    "num" / Int32sb,  # units in the chain, DELETE units counting -1
    "magic" / Int32sb,
)

# config/timercheck: TimerCheckpoint.flush writes 7 longs into its 4096-byte map.
TimerCheckpoint = Struct(
    "lastReadTimeMs" / Int64sb,
    "lastTimerLogFlushPos" / Int64sb,
    "lastTimerQueueOffset" / Int64sb,
    "masterTimerQueueOffset" / Int64sb,
    "dataVersionStateVersion" / Int64sb,
    "dataVersionTimestamp" / Int64sb,
    "dataVersionCounter" / Int64sb,
    Padding(TIMERCHECK_FILE_SIZE - 56),
)

# ---- the 5.4 RocksDB message store (rocksdbstore/; rmqctl.rocksdbstore) ---------------------------------------
# Its values; each key is an int64 (the head below) then UTF-8 text (IndexRocksDBRecord, TimerRocksDBRecord,
# TransRocksDBRecord getKeyBytes / getValueBytes), an index key also ending in the record's int64 offsetPy.
RocksDBIndexValue = Struct("storeTime" / Int64sb)
RocksDBTimerValue = Struct("sizePy" / Int32sb, "offsetPy" / Int64sb)
RocksDBTransValue = Struct("checkTimes" / Int32sb, "sizePy" / Int32sb)
RocksDBKeyHead = Struct("head" / Int64sb)  # index: the hour bucket; timer: delayTime; trans: offsetPy

# Message ids are the uppercase hex of these bytes. The ip is 4 bytes in a 32-char id and 16 in a 56-char
# one, so parse and build with ipLength=4 or 16.
_id_ip = "ip" / Bytes(lambda ctx: ctx._params.ipLength)
# MessageDecoder.createMessageId: the record's storeHost then its PHYSICALOFFSET.
OffsetMsgId = Struct("storeHost" / Struct(_id_ip, "port" / Int32sb), "physicalOffset" / Int64sb)
# MessageClientIDSetter (the UNIQ_KEY property): client ip, pid as a short, classloader hashCode, ms since
# the start of the client's month, then a counter, both truncated to their widths.
UniqKey = Struct(_id_ip, "pid" / Int16ub, "classLoaderHash" / Int32sb, "spanMS" / Int32ub, "counter" / Int16ub)

# ---- DLedger mode (enableDLegerCommitLog): the commitlog lives in DLedger's entry files ------------------
# Sources (openmessaging/dledger tag dledger-all-0.3.1.2): DLedgerEntry.java (POS_OFFSET, HEADER_SIZE,
# BODY_OFFSET), DLedgerEntryCoder.encode / encodeIndex, MmapFileList.preAppend (the BLANK),
# DLedgerMmapFileStore (MAGIC_1, INDEX_UNIT_SIZE).
DLEDGER_MAGIC = 1  # DLedgerMmapFileStore.MAGIC_1 = CURRENT_MAGIC
DLEDGER_BLANK_MAGIC = -1  # MmapFileList.BLANK_MAGIC_CODE
DLEDGER_MIN_BLANK = 8  # MmapFileList.MIN_BLANK_LEN

# The entry header; the body (for RocketMQ: one commitlog record) follows it.
DLedgerEntryHeader = Struct(
    "magic" / Int32sb,
    "size" / Int32sb,  # header + body
    "index" / Int64sb,
    "term" / Int64sb,
    "pos" / Int64sb,  # the entry's own absolute offset in the data files
    "channel" / Int32sb,
    "chainCrc" / Int32sb,
    "bodyCrc" / Int32sb,
    "bodyLength" / Int32sb,
)

# The end of a data file that cannot take the next entry + 8 bytes: only these 8 bytes are written.
DLedgerBlank = Struct(
    "magic" / Const(DLEDGER_BLANK_MAGIC, Int32sb),
    "size" / Int32sb,  # every byte left in the file from here
)

# One unit per entry at index * 32 in the index files.
DLedgerIndexUnit = Struct("magic" / Int32sb, "pos" / Int64sb, "size" / Int32sb, "index" / Int64sb, "term" / Int64sb)

SCHEMAS = {
    "commitlog-record": CommitLogRecord,
    "blank-record": BlankRecord,
    "consumequeue-unit": ConsumeQueueUnit,
    "batchconsumequeue-unit": BatchConsumeQueueUnit,
    "consumequeue-ext-unit": ConsumeQueueExtUnit,
    "index-header": IndexHeader,
    "hash-slot": HashSlot,
    "index-entry": IndexEntry,
    "checkpoint": Checkpoint,
    "timerlog-unit": TimerLogUnit,
    "timerlog-blank": TimerLogBlank,
    "wheel-slot": WheelSlot,
    "timercheck": TimerCheckpoint,
    "rocksdb-key-head": RocksDBKeyHead,
    "rocksdb-index-value": RocksDBIndexValue,
    "rocksdb-timer-value": RocksDBTimerValue,
    "rocksdb-trans-value": RocksDBTransValue,
    "dledger-entry-header": DLedgerEntryHeader,
    "dledger-blank": DLedgerBlank,
    "dledger-index-unit": DLedgerIndexUnit,
}


# ---- derivation: the hot paths are compiled from the declarations above --------------------------------


def _leaf_format(subcon) -> str | None:
    """The struct code of a fixed-width integer field, or None for anything variable."""
    while hasattr(subcon, "subcon") and not isinstance(subcon, FormatField):
        subcon = subcon.subcon
    if isinstance(subcon, FormatField):
        return subcon.fmtstr
    return None


def fixed_fields(schema: Struct) -> list[tuple[str, str]]:
    """(name, struct code) of every field of a struct made only of fixed-width integers."""
    out = []
    for sc in schema.subcons:
        fmt = _leaf_format(sc)
        if sc.name is None:  # padding
            continue
        if fmt is None:
            raise TypeError(f"{sc.name} is not a fixed-width field")
        out.append((sc.name, fmt))
    return out


def compile_struct(schema: Struct) -> struct.Struct:
    """One struct.Struct for a fixed layout (dpkt style), in declaration order."""
    return struct.Struct(">" + "".join(f[1:] for _, f in fixed_fields(schema)))


def field_offsets(schema: Struct) -> dict[str, int]:
    """Byte offset of each field of a fixed layout, in declaration order."""
    out, pos = {}, 0
    for sc in schema.subcons:
        if sc.name is not None:
            out[sc.name] = pos
        pos += sc.sizeof()
    return out


def compile_dtype(schema: Struct) -> np.dtype:
    """A numpy record dtype with the same fields, for vectorised reads of CQ units and index entries."""
    kinds = {
        "q": "i8",
        "l": "i4",
        "L": "u4",
        "i": "i4",
        "h": "i2",
        "b": "i1",
        "Q": "u8",
        "I": "u4",
        "H": "u2",
        "B": "u1",
    }
    return np.dtype([(name, ">" + kinds[fmt[-1]]) for name, fmt in fixed_fields(schema)])


def record_head_layout(born_v6: bool, store_v6: bool) -> tuple[struct.Struct, tuple[str, ...]]:
    """The fixed head of a commitlog record, from TOTALSIZE up to and including BODY length, for one host
    combination, as a single struct format with the field names it yields (ip fields as bytes)."""
    flags = (BORNHOST_V6_FLAG if born_v6 else 0) | (STOREHOSTADDRESS_V6_FLAG if store_v6 else 0)
    fmt, names = ">", []
    for sc in CommitLogRecord.subcons:
        if isinstance(sc.subcon, IfThenElse):
            chosen = (
                sc.subcon.thensubcon
                if (flags & (BORNHOST_V6_FLAG if sc.name == "bornHost" else STOREHOSTADDRESS_V6_FLAG))
                else sc.subcon.elsesubcon
            )
            for part in chosen.subcons:
                code = _leaf_format(part)
                fmt += code[1:] if code else f"{part.subcon.length}s"
                names.append(f"{sc.name}.{part.name}")
            continue
        code = _leaf_format(sc)
        if code is None:
            raise AssertionError(f"unexpected variable field {sc.name} before bodyLength")
        fmt += code[1:]
        names.append(sc.name)
        if sc.name == "bodyLength":
            break
    return struct.Struct(fmt), tuple(names)


def unit_layouts(schema: Struct) -> tuple[struct.Struct, np.dtype]:
    """A unit read one at a time (struct) and a file of them read at once (dtype): both views of one layout."""
    return compile_struct(schema), compile_dtype(schema)


CQ_UNIT, CQ_DTYPE = unit_layouts(ConsumeQueueUnit)
BCQ_UNIT, BCQ_DTYPE = unit_layouts(BatchConsumeQueueUnit)
CQ_EXT_UNIT, CQ_EXT_DTYPE = unit_layouts(ConsumeQueueExtUnit)
INDEX_ENTRY, INDEX_ENTRY_DTYPE = unit_layouts(IndexEntry)
INDEX_HEADER = compile_struct(IndexHeader)
HASH_SLOT = compile_struct(HashSlot)
BLANK = compile_struct(BlankRecord)
CHECKPOINT_HEAD = compile_struct(Checkpoint)  # the fields before the padding
# where each field of these fixed layouts sits
INDEX_HEADER_AT = field_offsets(IndexHeader)
INDEX_ENTRY_AT = field_offsets(IndexEntry)
CHECKPOINT_AT = field_offsets(Checkpoint)
# Record heads keyed by (born_v6, store_v6).
RECORD_HEADS = {(b, s): record_head_layout(b, s) for b in (False, True) for s in (False, True)}
TOPIC_LEN_V1 = struct.Struct(">b")
TOPIC_LEN_V2 = struct.Struct(">h")
PROPS_LEN = struct.Struct(">h")
TIMERLOG_UNIT, TIMERLOG_UNIT_DTYPE = unit_layouts(TimerLogUnit)
TIMERLOG_BLANK = compile_struct(TimerLogBlank)
WHEEL_SLOT_DTYPE = compile_dtype(WheelSlot)
TIMERCHECK_HEAD = compile_struct(TimerCheckpoint)
DLEDGER_ENTRY_HEADER = compile_struct(DLedgerEntryHeader)
DLEDGER_BLANK = compile_struct(DLedgerBlank)
DLEDGER_INDEX_UNIT, DLEDGER_INDEX_DTYPE = unit_layouts(DLedgerIndexUnit)
# DLedgerEntry.BODY_OFFSET: a message's commitlog offset is its entry's pos + this
DLEDGER_BODY_OFFSET = DLEDGER_ENTRY_HEADER.size
# DLedgerEntry.HEADER_SIZE (the header without bodyLength): recovery wants size > this
DLEDGER_HEADER_SIZE = DLEDGER_BODY_OFFSET - 4
DLEDGER_POS_AT = sum(struct.calcsize(">" + code[1:]) for _, code in fixed_fields(DLedgerEntryHeader)[:4])
DLEDGER_INDEX_UNIT_SIZE = DLEDGER_INDEX_UNIT.size
# the entry fields `dump commitlog` shows with a DLedger store's record (`dledger`), in order: the header's
# index and term, its pos and size, and where the entry is in its file
DLEDGER_DUMP_FIELDS = ("index", "term", "entryPos", "entrySize", "entryFilePosition")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")

assert BCQ_DTYPE.itemsize == BCQ_UNIT_SIZE
assert CQ_EXT_UNIT.size == CQ_EXT_UNIT_MIN_SIZE
assert CQ_UNIT.size == CQ_UNIT_SIZE and INDEX_HEADER.size == INDEX_HEADER_SIZE
assert INDEX_ENTRY.size == INDEX_ENTRY_SIZE and HASH_SLOT.size == HASH_SLOT_SIZE
assert Checkpoint.sizeof() == CHECKPOINT_FILE_SIZE
assert TIMERLOG_UNIT.size == TIMERLOG_UNIT_DTYPE.itemsize == TIMERLOG_UNIT_SIZE
assert TIMERLOG_BLANK.size == TIMERLOG_MIN_BLANK and WHEEL_SLOT_DTYPE.itemsize == WHEEL_SLOT_SIZE
assert TimerCheckpoint.sizeof() == TIMERCHECK_FILE_SIZE
assert (DLEDGER_BODY_OFFSET, DLEDGER_POS_AT, DLEDGER_INDEX_UNIT_SIZE) == (48, 24, 32)


def host_length(sysflag: int, v6_flag: int) -> int:
    return 20 if sysflag & v6_flag else 8


def record_length(sysflag: int, body_len: int, topic_len: int, props_len: int, v2: bool = False) -> int:
    """MessageExtEncoder.calMsgLength: 74 + B + S + T + body + topic + properties."""
    return (
        74
        + host_length(sysflag, BORNHOST_V6_FLAG)
        + host_length(sysflag, STOREHOSTADDRESS_V6_FLAG)
        + (2 if v2 else 1)
        + max(body_len, 0)
        + topic_len
        + max(props_len, 0)
    )


def _record_field_offsets() -> dict[str, tuple[int, ...]]:
    """Offset of each head field per host layout ("combo": born v6 + 2 * store v6, the two sysFlag bits that
    widen the hosts), from the struct formats RECORD_HEADS derives from the construct declaration;
    "headSize" is the head's length."""
    out: dict[str, list[int]] = {}
    for combo in range(4):
        head, names = RECORD_HEADS[(bool(combo & 1), bool(combo & 2))]
        pos = 0
        for name, (count, code) in zip(names, re.findall(r"(\d*)([a-zA-Z])", head.format[1:])):
            out.setdefault(name, []).append(pos)
            pos += struct.calcsize(">" + count + code)
        assert pos == head.size
        out.setdefault("headSize", []).append(pos)
    return {k: tuple(v) for k, v in out.items()}


RECORD_AT = _record_field_offsets()
# fields up to sysFlag sit at the same place in every layout
MAGIC_AT, BODY_CRC_AT, QUEUE_ID_AT, QUEUE_OFFSET_AT, PHYSICAL_OFFSET_AT, SYSFLAG_AT = (
    RECORD_AT[name][0] for name in ("magicCode", "bodyCRC", "queueId", "queueOffset", "physicalOffset", "sysFlag")
)
assert RECORD_AT["storeSize"] == (0,) * 4
assert all(
    len(set(RECORD_AT[n])) == 1 for n in ("magicCode", "bodyCRC", "queueId", "queueOffset", "physicalOffset", "sysFlag")
)
HEAD_SIZE = RECORD_AT["headSize"]
STORE_TIMESTAMP_AT = RECORD_AT["storeTimestamp"]
BODY_LENGTH_AT = RECORD_AT["bodyLength"]
SMALLEST_HEAD = min(HEAD_SIZE)
# record_length's fixed part per layout: 74 + bornHost + storeHost
FIXED_LENGTH = tuple(
    record_length((BORNHOST_V6_FLAG if c & 1 else 0) | (STOREHOSTADDRESS_V6_FLAG if c & 2 else 0), 0, 0, 0) - 1
    for c in range(4)
)
