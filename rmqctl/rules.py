"""Broker rules that every engine applies, each written once: the Python paths call these functions and the
compiled kernels (rmqctl.engine.kernels) compile these same functions, so a rule changed here changes everywhere.
They take plain integers and byte sequences (bytes, or a numpy uint8 array inside a kernel).

Sources: CommitLog.checkMessageAndReturnSize (record acceptance), IndexService.buildIndex / IndexFile.indexKeyHashMethod, putKey, selectPhyOffset, ConsumeQueue.recover,
CommitLog.checkMessageAndReturnSize (tagsCode), MessageExtBrokerInner.tagsString2tagsCode,
ScheduleMessageService.computeDeliverTimestamp, CommitLogDispatcherBuildConsumeQueue / ConsumeQueue's
multiDispatchLmqQueue (4.9) and MultiDispatch (5.x) (store and common modules).
"""

from __future__ import annotations

from typing import NamedTuple

from . import schema as S
from .javacompat import java_split, parse_long

INTEGER_MIN_VALUE = -(1 << 31)
INTEGER_MAX_VALUE = (1 << 31) - 1
KEY_SEPARATOR = 0x20  # MessageConst.KEY_SEPARATOR, " ": between the words of the KEYS property
MULTI_DISPATCH_SEPARATOR = ","  # MixAll.MULTI_DISPATCH_QUEUE_SPLITTER: between INNER_MULTI_DISPATCH queues
UNIT_BLOCK = 1 << 16  # queue units checked at a time (valid_prefix)
LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX
RETRY_TOPIC_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX
SYSTEM_TOPIC_PREFIX = "rmq_sys_"  # TopicValidator.SYSTEM_TOPIC_PREFIX
PATH_SEPARATOR = "/"  # File.separator on the brokers' Linux
LITE_PREFIX = LMQ_PREFIX + "$"  # RIP-83 lite topics (5.4+): the LMQ %LMQ%$parent$lite
LITE_SEPARATOR = "$"
DEFAULT_DELIVERY_DELAY = 1000  # computeDeliverTimestamp's delay for a level the table does not hold


def index_key_hash(hash_code):
    """IndexFile.indexKeyHashMethod: Math.abs(String.hashCode of `topic#key`). Math.abs(Integer.MIN_VALUE)
    is Integer.MIN_VALUE, which the broker turns into 0."""
    return 0 if hash_code == INTEGER_MIN_VALUE else abs(hash_code)


def index_slot(key_hash, slot_num):
    """IndexFile.putKey / selectPhyOffset: the hash slot a key hash chains from (of a stored keyHash too,
    which a damaged file may hold negative)."""
    return index_key_hash(key_hash) % slot_num


def index_time_diff(store_timestamp, begin_timestamp):
    """IndexFile.putKey: an entry's timeDiff, the seconds from the file's beginTimestamp to the record's
    storeTimestamp; 0 without a beginTimestamp or before it, at most Integer.MAX_VALUE."""
    diff = store_timestamp - begin_timestamp
    if begin_timestamp <= 0 or diff < 0:
        return 0
    return min(diff // 1000, INTEGER_MAX_VALUE)


def cq_unit_valid(commit_log_offset, size):
    """ConsumeQueue.recover / correctMinOffset: a unit holds a message when its commitlog offset is >= 0 and
    its size > 0 (a pre-blank unit too). Element by element on numpy arrays."""
    return (commit_log_offset >= 0) & (size > 0)


def cq_already_built(offset, size, max_physic_offset):
    """ConsumeQueue.putMessagePositionInfo (4.9.7, 5.3.3) writes nothing for a unit whose record ends at or below
    the queue's maxPhysicOffset ("Maybe try to build consume queue repeatedly")."""
    return offset + size <= max_physic_offset


def bcq_already_built(offset, max_msg_phy_offset):
    """BatchConsumeQueue.putBatchMessagePositionInfo (5.x) writes nothing for a record at or below the queue's
    maxMsgPhyOffsetInCommitLog (the last unit's record offset)."""
    return offset <= max_msg_phy_offset


def cq_put_order(cq_offset, current):
    """putMessagePositionInfo's check of a unit's queue offset against where its queue's last file ends
    (`current`, a logical byte offset): 'duplicate' (nothing written: "Build consume queue repeatedly"), else
    the unit goes at `current` whatever its queue offset says: 'written', or 'out-of-order' ("[BUG]logic queue
    order maybe wrong"). A unit at queue offset 0 is not checked."""
    expect = cq_offset * S.CQ_UNIT_SIZE
    if cq_offset == 0 or expect == current:
        return "written"
    return "duplicate" if expect < current else "out-of-order"


def record_expired(commit_log_offset, min_phy):
    """A unit or index entry whose commitLogOffset lies below the commitlog's min offset `min_phy` names a record
    the cleanup deleted: ConsumeQueue.correctMinOffset moves a queue's min past it (it keeps the first unit with
    offsetPy >= the min), DefaultMessageStore.getMessage finds no file for it (MESSAGE_WAS_REMOVING, then
    rollNextFile), CommitLog.pickupStoreTimestamp answers -1 and the RocksDB queue's compaction filter drops it.
    The broker serves such a unit as expired, not as damage. Element by element on numpy arrays (negate with ~)."""
    return commit_log_offset < min_phy


def read_at_commitlog_min(commit_log_offset, min_phy):
    """CommitLog.getMessage(offset, size) (lookMessageByOffset: the schedule service's read, and a pull's) for a
    unit whose record the cleanup deleted (record_expired): findMappedFileByOffset(offset, returnFirstOnNotFound =
    offset == 0) answers no file, so nothing is read, except at offset 0, where it answers the first file, read
    at position 0: the record at the commitlog's min instead. Whether that happens, element by element on numpy
    arrays."""
    return record_expired(commit_log_offset, min_phy) & (commit_log_offset == 0)


def pre_blank(commit_log_offset, size, tags_code):
    """ConsumeQueue.fillPreBlank's unit (0, Integer.MAX_VALUE, 0), written before a queue's first unit in its
    first file: valid to recover, yet no entry (no record). Element by element on numpy arrays."""
    return (commit_log_offset == 0) & (size == S.PRE_BLANK_SIZE) & (tags_code == 0)


RECOVERED_QUEUE_FILES = 3  # ConsumeQueue.recover and BatchConsumeQueue.recover start at a queue's third-last file


def served_units(k: int, count: int, units, written) -> int:
    """How many units of file k of a queue's `count` files the broker keeps after its load: a file before the
    third-last is never walked by recover (MappedFileQueue.load takes it whole, a unit there that is not valid
    included: its read fails, the units after it are served); from there on, `written(units)`, the units its walk
    accepts (the walk's stop then ends the queue)."""
    return len(units) if k < count - RECOVERED_QUEUE_FILES else written(units)


def written_units(units) -> int:
    """How many units of a consumequeue file (a numpy array of schema.CQ_DTYPE) ConsumeQueue.recover
    accepts: those before the first that is not valid."""
    return valid_prefix(units, lambda a: cq_unit_valid(a["commitLogOffset"], a["size"]))


def valid_prefix(units, valid) -> int:
    """How many units from the first are `valid`, a block at a time: a mostly empty (sparse) queue file is read
    only up to its end of data, and a 300,000-unit file is never held as arrays whole."""
    for a in range(0, len(units), UNIT_BLOCK):
        bad = (~valid(units[a : a + UNIT_BLOCK])).nonzero()[0]
        if len(bad):
            return a + int(bad[0])
    return len(units)


def index_dropped_after_crash(end_timestamp: int, index_msg_timestamp: int) -> bool:
    """IndexService.load(lastExitOK=false): after a crash the broker deletes an index file whose endTimestamp is
    after the checkpoint's indexMsgTimestamp (and re-indexes only from where its recovery starts)."""
    return end_timestamp > index_msg_timestamp


EMPTY_LAST_FILE_DELETED = (5, 2)  # MappedFileQueue.doLoad deletes a zero-length last file from 5.1.3 on


class QueueLoad(NamedTuple):
    """What MappedFileQueue.load makes of a queue's files (queue_files_loaded)."""

    kept: int  # the files (in name order) the broker keeps
    fails: bool  # the load fails: the broker does not start
    said: str  # why, or what it drops ("" when it loads every file as it is)


def queue_files_loaded(lengths: list[int], file_size: int, release: tuple[int, int], live: bool) -> QueueLoad:
    """MappedFileQueue.load over a queue's files in name order (their `lengths`). A file of another length than
    `file_size` fails the load ("length not matched message store config value"; kept: the files before it),
    but a zero-length last file: 5.1.3+ deletes it at load ("size is 0, auto delete"), 4.x and 5.0-5.1.2 refuse
    it, and beside a running broker it is the queue's next file, created and not yet mapped."""
    n, said, fails = len(lengths), "", False
    if n and lengths[-1] == 0 and file_size:
        n -= 1
        if live or release >= EMPTY_LAST_FILE_DELETED:
            said = "a zero-length last file, which the broker deletes at load"
        elif release >= (5, 0):
            said = "a zero-length last file: RocketMQ 5.1.3+ deletes it at load, 5.0-5.1.2 refuse to start"
        else:
            said, fails = "a zero-length last file, which RocketMQ 4.x refuses to load", True
    for i, length in enumerate(lengths[:n]):
        if length != file_size:
            return QueueLoad(
                i, True, f"{length} bytes, not {file_size} (length not matched message store config value)"
            )
    return QueueLoad(n, fails, said)


class CorrectMinOffsetFailed(Exception):
    """5.x correctMinOffset on an empty last file: ByteBuffer.position(-20) throws IllegalArgumentException."""


def corrected_min_logic(
    version: int, min_logic: int, first_start: int, first_offsets, last_end: int, last_offset, min_phy: int
) -> int:
    """ConsumeQueue.correctMinOffset(min_phy): the queue's new minLogicOffset (bytes) from its current one, the
    first file's start and the commitLogOffset of each unit it reads, the end of its last file's readable units
    and the commitLogOffset of the last of them (None: the last file reads nothing).
    4.9.7: the first unit of the first file at or above min_phy; none: unchanged. 5.x: a queue already
    deprecated stays; one whose last unit lies below min_phy gets min = its end (no live unit left); else a
    binary search of the first file from the previous minimum (the broker's loop, quirks included)."""
    unit = S.CQ_UNIT_SIZE
    if version == 4:
        hits = (~record_expired(first_offsets, min_phy)).nonzero()[0]  # a numpy array of the file's commitLogOffsets
        return first_start + int(hits[0]) * unit if len(hits) else min_logic
    if min_logic >= last_end:
        return min_logic
    if last_offset is None:
        raise CorrectMinOffsetFailed("correctMinOffset reads position -20 of the empty last file")
    if record_expired(last_offset, min_phy):
        return last_end
    start, intact = min_logic - first_start, True
    if start < 0:
        start, intact = 0, False
    if start >= len(first_offsets) * unit:
        return min_logic  # the broker logs an inconsistency (or selectMappedBuffer returns null) and leaves it
    region = first_offsets[start // unit :]
    if intact and not record_expired(int(region[0]), min_phy):
        return min_logic
    low, high = 0, (len(region) - 1) * unit
    while high - low > unit:
        mid = (low + high) // 2 // unit * unit
        value = int(region[mid // unit])
        if value > min_phy:
            high = mid
        elif value == min_phy:
            low = high = mid
            break
        else:
            low = mid
    for i in range(low, high + 1, unit):
        if not record_expired(int(region[i // unit]), min_phy):
            return first_start + start + i
    return min_logic


def next_key_word(data, start, end):
    """IndexService.buildIndex splits KEYS on KEY_SEPARATOR and indexes every non-empty word: the next word
    of data[start:end] as (first, end), (end, end) when there is none. The separator byte never occurs
    inside a multi-byte UTF-8 character, so splitting the bytes splits the decoded text the same way."""
    lo = start
    while lo < end and data[lo] == KEY_SEPARATOR:
        lo += 1
    hi = lo
    while hi < end and data[hi] != KEY_SEPARATOR:
        hi += 1
    return lo, hi


def key_words(data: bytes) -> list[bytes]:
    """Every word the broker indexes from a KEYS value (its UTF-8 bytes)."""
    words = []
    lo, hi = next_key_word(data, 0, len(data))
    while lo < hi:
        words.append(data[lo:hi])
        lo, hi = next_key_word(data, hi, len(data))
    return words


def tags_code(tags_hash, tags_length):
    """MessageExtBrokerInner.tagsString2tagsCode: the String.hashCode of the TAGS text (`tags_hash`); 0 when
    the record has no TAGS or they are empty (`tags_length` 0)."""
    return tags_hash if tags_length > 0 else 0


def delivery_tags_code(code, level, delays, store_timestamp):
    """checkMessageAndReturnSize on SCHEDULE_TOPIC_XXXX with a DELAY of `level` (Integer.parseInt of it):
    the level clamped to getMaxDelayLevel, then, when it is > 0, the tagsCode is computeDeliverTimestamp:
    storeTimestamp + the level's delay. `delays[k]` is level k's delay in ms (-1 where the table has none;
    its last index is the highest level). Otherwise the tagsCode stays `code`."""
    level = min(level, len(delays) - 1)
    if level <= 0:
        return code
    delay = delays[level]
    return store_timestamp + (delay if delay >= 0 else DEFAULT_DELIVERY_DELAY)


def multi_dispatched_topic(topic: str, v5: bool) -> bool:
    """Whether a record of `topic` has its INNER_MULTI_DISPATCH queues dispatched (multi-dispatch on) and, for
    append, wrapped: 4.9 any topic; 5.x not a retry topic, a system topic or the schedule topic
    (MultiDispatchUtils.isNeedHandleMultiDispatch, MixAll.topicAllowsLMQ)."""
    return not v5 or not (topic.startswith((RETRY_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX)) or topic == SCHEDULE_TOPIC)


def multi_dispatch_parts(queues: str, offsets: str, v5: bool) -> list[tuple[str, str, int | None]]:
    """(queue, its offset part, that part's Long.parseLong or None where it throws) in the order
    ConsumeQueue.multiDispatchLmqQueue reads a record's INNER_MULTI_DISPATCH `queues` and INNER_MULTI_QUEUE_OFFSET
    `offsets`: both split on MULTI_DISPATCH_SEPARATOR as String.split does; none unless both are non-blank and
    have as many parts (else the broker logs "[bug]"); 5.x skips a queue whose name holds the path separator
    before it reads its offset."""
    if not queues.strip() or not offsets.strip():
        return []
    names, parts = java_split(queues, MULTI_DISPATCH_SEPARATOR), java_split(offsets, MULTI_DISPATCH_SEPARATOR)
    if len(names) != len(parts):
        return []
    return [(name, part, parse_long(part)) for name, part in zip(names, parts) if not (v5 and PATH_SEPARATOR in name)]


def multi_dispatch_targets(
    queues: str, offsets: str, queue_id: int, enable_lmq: bool, v5: bool
) -> list[tuple[str, int, int]]:
    """The extra consumequeue entries of a record (multi-dispatch on): each queue of multi_dispatch_parts at its
    offset, stopping at the first that does not parse (it throws: multi_dispatch_throws); a %LMQ% queue (with LMQ
    on) uses queueId 0, any other the record's."""
    out = []
    for name, _, offset in multi_dispatch_parts(queues, offsets, v5):
        if offset is None:
            break
        out.append((name, lmq_queue_id(name, queue_id, enable_lmq), offset))
    return out


def multi_dispatch_throws(queues: str, offsets: str, v5: bool) -> str | None:
    """The offset part of multi_dispatch_parts that Long.parseLong throws on (None: none). The exception leaves
    the dispatch, and the reput retries the record for good (4.9.7, 5.3.3): nothing after it reaches a consume
    queue or the index."""
    return next((part for _, part, offset in multi_dispatch_parts(queues, offsets, v5) if offset is None), None)


def lite_topic(queue: str) -> tuple[str, str] | None:
    """(parent topic, lite topic) of a lite topic's LMQ queue `%LMQ%$parent$lite` (RIP-83, 5.4+), else None.
    Lite queues expire after an idle TTL, offsets and all: a vanished one is normal, never a loss."""
    if not queue.startswith(LITE_PREFIX):
        return None
    parent, sep, lite = queue[len(LITE_PREFIX) :].partition(LITE_SEPARATOR)
    return (parent, lite) if sep and parent and lite else None


def queue_kind(topic: str, batch_topics=frozenset()) -> str:
    """How a queue's topic is kept: lite (a lite topic's LMQ), LMQ, BatchCQ, or a plain topic."""
    if lite_topic(topic) is not None:
        return "lite"
    if topic.startswith(LMQ_PREFIX):
        return "LMQ"
    return "BatchCQ" if topic in batch_topics else "topic"


# TopicValidator.SYSTEM_TOPIC_SET, and the prefixes of topics a broker may write with no topic config (or with one
# made later: the transaction op topic never gets one in 4.9.7, the half topic only at the first check)
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "CHECKPOINT_TOPIC",
    }
)
# TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET (4.9.7 and 5.x): a producer's send to one is refused (NO_PERMISSION)
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
UNCONFIGURED_PREFIXES = ("rmq_sys_", "%RETRY%", "%DLQ%", LMQ_PREFIX)


def deleted_topic(topic: str, configured: frozenset | None, present: set) -> bool:
    """Whether `topic` was deleted (mqadmin deleteTopic: out of the broker's topics, `configured`, every queue of
    it removed, its records left in the commitlog until the cleanup deletes their files): not when the topics
    are unknown (None), when a queue of it is still there (`present`: the topics with a queue), nor for a system,
    retry, DLQ or LMQ topic, which a broker writes without a topic config of its own."""
    return (
        configured is not None
        and topic not in configured
        and topic not in present
        and topic not in SYSTEM_TOPICS
        and not topic.startswith(UNCONFIGURED_PREFIXES)
    )


def lmq_queue_id(name: str, queue_id: int, enable_lmq: bool) -> int:
    """The queueId of a multi-dispatch queue: 0 for a %LMQ% queue with LMQ on, else the record's."""
    return 0 if enable_lmq and name.startswith(LMQ_PREFIX) else queue_id


# -- a sound record's properties, as checkMessageAndReturnSize reads them -------------------------------------------
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC


def checked_properties(topic: str, has_properties: bool, props: dict, v5: bool, check_dup_info: bool):
    """What fails checkMessageAndReturnSize inside a sound record's properties (read when propertiesLength > 0),
    as (finding kind, detail), else None: 5.x's recovery with duplicationEnable (checkDupInfo) fails a record
    whose DUP_INFO is missing or not two parts as String.split("_") cuts it; a SCHEDULE_TOPIC_XXXX record's
    DELAY that Integer.parseInt refuses throws, and the check catches it as a failure."""
    if not has_properties:
        return None
    if v5 and check_dup_info:
        dup = props.get("DUP_INFO")
        if dup is None or len(java_split(dup, "_")) != 2:
            shown = "none" if dup is None else repr(dup)
            return (
                "dup-info",
                f"DUP_INFO is {shown}, not two parts split on '_' (duplicationEnable: recovery's checkDupInfo)",
            )
    delay = props.get("DELAY")
    if topic == SCHEDULE_TOPIC and delay is not None and parse_long(delay, 32) is None:
        return "unparsable-property", f"DELAY {delay!r} of a {SCHEDULE_TOPIC} record, which Integer.parseInt refuses"
    return None


def batch_size_failure(props: dict, v5: bool):
    """5.x's setBatchSizeIfNeeded, the last step of checkMessageAndReturnSize: a record with both INNER_BASE and
    INNER_NUM has them read by Long.parseLong and Short.parseShort, which throw on anything else: (kind, detail)
    of the failure, else None."""
    if not v5 or "INNER_BASE" not in props or "INNER_NUM" not in props:
        return None
    base, num = props["INNER_BASE"], props["INNER_NUM"]
    if parse_long(base) is None:
        return "unparsable-property", f"INNER_BASE {base!r}, which Long.parseLong refuses"
    if parse_long(num, 16) is None:
        return "unparsable-property", f"INNER_NUM {num!r}, which Short.parseShort refuses"
    return None


def property_failure(topic: str, has_properties: bool, props: dict, v5: bool, check_dup_info: bool):
    """The first of checked_properties and batch_size_failure that fails (the property CRC, which the check
    reads between them, is the caller's): (kind, detail), else None."""
    return checked_properties(topic, has_properties, props, v5, check_dup_info) or batch_size_failure(props, v5)


# -- record acceptance --------------------------------------------------------------------------------------------
# What checkMessageAndReturnSize makes of the bytes at a record's start, before any CRC: a message, the BLANK that
# closes a file, or the kind of its refusal (the finding's name: VERDICT_KINDS). Every walk, Python or compiled,
# decides with record_head and record_tail; `why` says which check refused, for the finding's detail.
RECORD, BLANK, ZEROS, ILLEGAL_MAGIC, TRUNCATED, BAD_LENGTH = range(6)
VERDICT_KINDS = ("ok", "blank", "zeros", "illegal-magic", "truncated-record", "bad-length")
FEW_BYTES, PAST_END, SHORT_HEAD, BODY_PAST, TOPIC_LENGTH_CUT, TOPIC_PAST, PROPERTIES_PAST, LENGTH_FORMULA = range(1, 9)
MAGIC_V1, MAGIC_V2, MAGIC_BLANK = S.MAGIC_V1, S.MAGIC_V2, S.MAGIC_BLANK
MESSAGE_MAGICS = (MAGIC_V1, MAGIC_V2)  # what a message's magicCode can be: where a search for one looks
MAGIC_AT, SYSFLAG_AT, HEAD_SIZE, BODY_LENGTH_AT = S.MAGIC_AT, S.SYSFLAG_AT, S.HEAD_SIZE, S.BODY_LENGTH_AT
SMALLEST_HEAD, FIXED_LENGTH = S.SMALLEST_HEAD, S.FIXED_LENGTH
BORN_V6, STORE_V6 = S.BORNHOST_V6_FLAG, S.STOREHOSTADDRESS_V6_FLAG


def be8(data, at):
    """The signed byte at data[at] (a kernel loads it itself)."""
    return S.TOPIC_LEN_V1.unpack_from(data, at)[0]


def be16(data, at):
    """The big-endian (Java) short at data[at] (a kernel loads it itself)."""
    return S.PROPS_LEN.unpack_from(data, at)[0]


def be32(data, at):
    """The big-endian (Java) int at data[at] (a kernel loads it itself)."""
    return S.INT32.unpack_from(data, at)[0]


def message_magic(magic, allow_v2):
    """A message's magicCode: V1, or V2 where the broker reads it (5.1+; 4.9 reads V2 as any other code)."""
    return magic == MAGIC_V1 or (allow_v2 and magic == MAGIC_V2)


def record_magic(size, magic, allow_v2):
    """The verdict of a record's first 8 bytes: RECORD for a message's magic, BLANK, else ZEROS (all zero:
    nothing written there) or ILLEGAL_MAGIC."""
    if magic == MAGIC_BLANK:
        return BLANK
    if message_magic(magic, allow_v2):
        return RECORD
    return ZEROS if size == 0 and magic == 0 else ILLEGAL_MAGIC


def blank_fails(size, left, v5):
    """5.3.2+'s checkMessageAndReturnSize (apache/rocketmq#9002) fails `remaining < totalSize - 4` before it
    reads the magic: a BLANK claiming more than the `left` bytes of its file fails (4.x and 5.0-5.3.1 take it)."""
    return v5 and size > left


def record_head(data, pos, limit, allow_v2):
    """checkMessageAndReturnSize up to the body, on the record at data[pos] (its bytes end at `limit`).
    Returns (verdict, size, combo, body length, V2, why): RECORD when the head is sound (then record_tail
    judges the rest), BLANK (`size`: the bytes it claims), or the refusal, `why` saying which check."""
    if pos < 0 or limit - pos < 8:  # (a position before the bytes is none: a caller's offset gone wrong)
        return TRUNCATED, 0, 0, 0, False, FEW_BYTES
    size = be32(data, pos)
    magic = be32(data, pos + MAGIC_AT)
    v2 = magic == MAGIC_V2
    verdict = record_magic(size, magic, allow_v2)
    if verdict != RECORD:
        return verdict, size, 0, 0, v2, 0
    if size <= 0 or pos + size > limit:
        return TRUNCATED, size, 0, 0, v2, PAST_END
    if size < SMALLEST_HEAD:  # sysFlag must lie inside the record before it chooses the host widths
        return BAD_LENGTH, size, 0, 0, v2, SHORT_HEAD
    sysflag = be32(data, pos + SYSFLAG_AT)
    combo = (1 if sysflag & BORN_V6 else 0) | (2 if sysflag & STORE_V6 else 0)
    if HEAD_SIZE[combo] > size:
        return BAD_LENGTH, size, 0, 0, v2, SHORT_HEAD
    body_len = be32(data, pos + BODY_LENGTH_AT[combo])
    if body_len > 0 and HEAD_SIZE[combo] + body_len > size:
        return BAD_LENGTH, size, combo, body_len, v2, BODY_PAST
    return RECORD, size, combo, body_len, v2, 0


def reput_fields_end(data, pos, limit, allow_v2):
    """Where the reput's checkMessageAndReturnSize stops reading a message whose lengths disagree with its
    TOTALSIZE (record_head / record_tail refuse it): it reads each field from the file's buffer (its data up to
    `limit`), the hosts, topic and properties through an array of TOTALSIZE bytes, then returns (TOTALSIZE,
    failed), and DefaultMessageStore.doReput goes on reading that buffer where the fields ended. None where the
    check throws instead (a read past the buffer or the array; 5.3.2+: TOTALSIZE past the buffer) or fails at the
    magic: the reput then skips the rest of the file."""
    if limit - pos <= 8 or not message_magic(be32(data, pos + MAGIC_AT), allow_v2):
        return None
    size = be32(data, pos)
    sysflag = be32(data, pos + SYSFLAG_AT) if pos + SYSFLAG_AT + 4 <= limit else 0
    combo = (1 if sysflag & BORN_V6 else 0) | (2 if sysflag & STORE_V6 else 0)
    if (allow_v2 and limit - pos < size) or size < (20 if combo else 8) or pos + HEAD_SIZE[combo] > limit:
        return None
    p = pos + HEAD_SIZE[combo] + max(be32(data, pos + BODY_LENGTH_AT[combo]), 0)
    width = 2 if be32(data, pos + MAGIC_AT) == MAGIC_V2 else 1
    if p + width > limit:
        return None
    topic_len = be16(data, p) if width == 2 else be8(data, p)
    p += width + topic_len
    if not 0 <= topic_len <= size or p + 2 > limit:
        return None
    props_len = be16(data, p)
    p += 2 + max(props_len, 0)
    return p if props_len <= size and p <= limit else None


def record_tail(data, pos, size, combo, body_len, v2):
    """The rest of checkMessageAndReturnSize's parse, after record_head accepted the head: the topic and
    properties lengths and calMsgLength. Returns (topic start, topic length, properties length, why): topic
    start -1 and `why` the check when it refuses the record (a BAD_LENGTH)."""
    end = pos + size
    p = pos + HEAD_SIZE[combo] + max(body_len, 0)
    width = 2 if v2 else 1
    if p + width > end:
        return -1, 0, 0, TOPIC_LENGTH_CUT
    topic_len = be16(data, p) if v2 else be8(data, p)
    p += width
    if topic_len < 0 or p + topic_len + 2 > end:
        return -1, topic_len, 0, TOPIC_PAST
    props_len = be16(data, p + topic_len)
    if props_len > 0 and p + topic_len + 2 + props_len > end:
        return -1, topic_len, props_len, PROPERTIES_PAST
    if FIXED_LENGTH[combo] + width + max(body_len, 0) + topic_len + max(props_len, 0) != size:
        return -1, topic_len, props_len, LENGTH_FORMULA
    return p, topic_len, props_len, 0
