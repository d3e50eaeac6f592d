"""Broker rules that every engine applies, each written once: the Python paths call these functions and the
compiled kernels (rmqctl.engine.kernels) compile these same functions, so a rule changed here changes everywhere.
They take plain integers and byte sequences (bytes, or a numpy uint8 array inside a kernel).

Sources: IndexService.buildIndex / IndexFile.indexKeyHashMethod, putKey, selectPhyOffset, ConsumeQueue.recover,
CommitLog.checkMessageAndReturnSize (tagsCode), MessageExtBrokerInner.tagsString2tagsCode,
ScheduleMessageService.computeDeliverTimestamp, CommitLogDispatcherBuildConsumeQueue / ConsumeQueue's
multiDispatchLmqQueue (4.9) and MultiDispatch (5.x) (store and common modules).
"""
from __future__ import annotations

from .javacompat import java_split, parse_long

INTEGER_MIN_VALUE = -(1 << 31)
INTEGER_MAX_VALUE = (1 << 31) - 1
KEY_SEPARATOR = 0x20  # MessageConst.KEY_SEPARATOR, " ": between the words of the KEYS property
MULTI_DISPATCH_SEPARATOR = ","  # MixAll.MULTI_DISPATCH_QUEUE_SPLITTER: between INNER_MULTI_DISPATCH queues
LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX
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


def written_units(units) -> int:
    """How many units of a consumequeue file (a numpy array of schema.CQ_DTYPE) ConsumeQueue.recover
    accepts: those before the first that is not valid."""
    invalid = (~cq_unit_valid(units["commitLogOffset"], units["size"])).nonzero()[0]
    return int(invalid[0]) if len(invalid) else len(units)


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


def multi_dispatch_targets(queues: str, offsets: str, queue_id: int, enable_lmq: bool) -> list[tuple[str, int, int]]:
    """The extra consumequeue entries of a record with INNER_MULTI_DISPATCH `queues` and
    INNER_MULTI_QUEUE_OFFSET `offsets` (multi-dispatch on): both split on MULTI_DISPATCH_SEPARATOR as
    String.split does; none unless both are non-blank and have as many parts (else the broker logs "[bug]");
    each queue at its Long.parseLong offset, stopping at the first that does not parse (it throws); a
    %LMQ% queue (with LMQ on) uses queueId 0, any other the record's."""
    if not queues.strip() or not offsets.strip():
        return []
    names, parts = java_split(queues, MULTI_DISPATCH_SEPARATOR), java_split(offsets, MULTI_DISPATCH_SEPARATOR)
    if len(names) != len(parts):
        return []
    out = []
    for name, part in zip(names, parts):
        offset = parse_long(part)
        if offset is None:
            break
        out.append((name, lmq_queue_id(name, queue_id, enable_lmq), offset))
    return out


def lite_topic(queue: str) -> tuple[str, str] | None:
    """(parent topic, lite topic) of a lite topic's LMQ queue `%LMQ%$parent$lite` (RIP-83, 5.4+), else None.
    Lite queues expire after an idle TTL, offsets and all: a vanished one is normal, never a loss."""
    if not queue.startswith(LITE_PREFIX):
        return None
    parent, sep, lite = queue[len(LITE_PREFIX):].partition(LITE_SEPARATOR)
    return (parent, lite) if sep and parent and lite else None


def queue_kind(topic: str, batch_topics=frozenset()) -> str:
    """How a queue's topic is kept: lite (a lite topic's LMQ), LMQ, BatchCQ, or a plain topic."""
    if lite_topic(topic) is not None:
        return "lite"
    if topic.startswith(LMQ_PREFIX):
        return "LMQ"
    return "BatchCQ" if topic in batch_topics else "topic"


def lmq_queue_id(name: str, queue_id: int, enable_lmq: bool) -> int:
    """The queueId of a multi-dispatch queue: 0 for a %LMQ% queue with LMQ on, else the record's."""
    return 0 if enable_lmq and name.startswith(LMQ_PREFIX) else queue_id
