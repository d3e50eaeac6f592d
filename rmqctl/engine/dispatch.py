"""The broker's dispatch of a whole commitlog file in one compiled pass: for every record, what
CommitLogDispatcherBuildConsumeQueue and CommitLogDispatcherBuildIndex take from it (queue, queue offset,
tagsCode, the IndexService hash of every `topic#key`).

rmqctl.dispatch is the reference. A record the kernel does not decide itself is flagged for it: one with a
DELAY property (the schedule topic's tagsCode), with INNER_MULTI_DISPATCH when multi-dispatch is on (LMQ
queues), or whose topic, TAGS, KEYS or UNIQ_KEY is not well-formed UTF-8 (Java replaces malformed bytes;
well-formed text is hashed here over its UTF-16 code units exactly as String.hashCode does).
"""

from __future__ import annotations


import numpy as np

from .. import schema as S
from .kernels import (
    T_AT,
    T_HASH,
    T_LEN,
    T_WELL_FORMED,
    TOPIC_COLUMNS,
    be32,
    be64,
    find_properties,
    java_hash,
    kernel,
    property_names,
    rehash,
    store_byte_at,
    topic_id,
)
from ..rules import RECORD
from ..schema import PHYSICAL_OFFSET_AT, QUEUE_ID_AT, QUEUE_OFFSET_AT, SMALLEST_HEAD, STORE_TIMESTAMP_AT, SYSFLAG_AT
from .record import (
    decode_head,
    decode_tail,
    head_outcome,
    key_hash_of,
    next_key_word,
    prefetch_ahead,
    signed32,
    tags_code,
)


PROPS_LEN = S.PROPS_LEN.size
TRANSACTION_MASK, ROLLBACK = S.TRANSACTION_MASK, S.TRANSACTION_ROLLBACK_TYPE
# property lookups: indexes into WANTED
TAGS, KEYS, UNIQ_KEY, DELAY, MULTI_DISPATCH = range(5)
WANTED, WANTED_LENS = property_names("TAGS", "KEYS", "UNIQ_KEY", "DELAY", "INNER_MULTI_DISPATCH")
HASH_SEPARATOR = ord("#")  # IndexService.buildKey: topic + "#" + key


@kernel
def _grown(a, n):
    """`a` with room for at least n + 1 items."""
    if n < len(a):
        return a
    bigger = np.empty(2 * len(a), a.dtype)
    bigger[: len(a)] = a
    return bigger


@kernel
def walk(u8, limit, allow_v2, start, stop_at):
    """The header walk over u8[:limit] from `start` (each TOTALSIZE says where the next record starts) up
    to a BLANK, the end, a head rules.record_head refuses, or the first record starting at or past `stop_at`
    (a window: the next walk goes on from there). Returns (record starts, where it stopped)."""
    if not 0 <= start <= limit:  # (no record starts outside the bytes)
        return np.empty(0, np.int64), start
    starts = np.empty((min(limit, stop_at) - start) // SMALLEST_HEAD + 1, np.int64)  # untouched pages cost nothing
    n, pos = 0, start
    while pos + 8 <= limit and pos < stop_at:
        prefetch_ahead(u8, pos, limit)
        verdict, size, _, _, _, _ = head_outcome(u8, pos, limit, allow_v2)
        if verdict != RECORD:
            break
        starts[n] = pos
        n += 1
        pos += size
    return starts[:n], pos


@kernel
def decode(
    u8,
    starts,
    allow_v2,
    multi_dispatch,
    with_keys,
    size,
    phy,
    store_ts,
    queue_id,
    queue_offset,
    sysflag,
    topic,
    tags,
    reference,
):
    """Decode the records at `starts` (from walk) up to the first that read_record refuses (left to it:
    engine.record's checks), filling per record (arrays as long as `starts`): size, PHYSICALOFFSET, STORETIMESTAMP,
    queueId, queueOffset, sysFlag, topic id, tagsCode, reference flag. Returns the topics ((start, length)
    of each id's first occurrence), the index keys (record, IndexService hash), UNIQ_KEY first then each
    KEYS word, none for ROLLBACK or reference records, and how many records were decoded."""
    n = len(starts)
    key_record = np.empty(max(16, 3 * n), np.int64)
    key_hash = np.empty(max(16, 3 * n), np.int64)
    keys = 0
    table = np.zeros(128, np.int64)
    topics = np.empty((TOPIC_COLUMNS, len(table) // 2), np.int64)
    n_topics = 0
    value_lo = np.empty(len(WANTED_LENS), np.int64)
    value_hi = np.empty(len(WANTED_LENS), np.int64)
    i = 0
    while i < n:
        pos = starts[i]
        rec_size, combo, body_len, v2 = decode_head(u8, pos, len(u8), allow_v2)
        if not rec_size:
            break
        topic_lo, topic_len, props_len, _ = decode_tail(u8, pos, rec_size, combo, body_len, v2)
        if topic_lo < 0:
            break
        end = pos + rec_size
        props_lo = topic_lo + topic_len + PROPS_LEN  # the properties run to the record's end
        flags = be32(u8, pos + SYSFLAG_AT)
        size[i], phy[i], tags[i], reference[i] = rec_size, be64(u8, pos + PHYSICAL_OFFSET_AT), 0, False
        store_ts[i] = be64(u8, pos + STORE_TIMESTAMP_AT[combo])
        queue_id[i], queue_offset[i], sysflag[i] = be32(u8, pos + QUEUE_ID_AT), be64(u8, pos + QUEUE_OFFSET_AT), flags
        if 2 * (n_topics + 1) > len(table):  # keep the table at most half full
            wider = np.empty((TOPIC_COLUMNS, len(table)), np.int64)
            wider[:, :n_topics] = topics[:, :n_topics]
            topics, table = wider, np.zeros(2 * len(table), np.int64)
            rehash(topics, n_topics, table)
        t, n_topics = topic_id(u8, topic_lo, topic_len, pos, table, topics, n_topics)
        topic[i] = t
        topic_hash, ok = topics[T_HASH, t], topics[T_WELL_FORMED, t] == 1
        r = i
        i += 1
        find_properties(u8, props_lo, end, WANTED, WANTED_LENS, value_lo, value_hi)
        if not ok or value_lo[DELAY] >= 0 or (multi_dispatch and value_lo[MULTI_DISPATCH] >= 0):
            reference[r] = True
            continue
        if value_lo[TAGS] >= 0:
            h, ok = java_hash(u8, value_lo[TAGS], value_hi[TAGS], 0)
            if not ok:
                reference[r] = True
                continue
            tags[r] = tags_code(signed32(h), value_hi[TAGS] - value_lo[TAGS])
        if not with_keys or flags & TRANSACTION_MASK == ROLLBACK:
            continue
        prefix = (topic_hash * 31 + HASH_SEPARATOR) & 0xFFFFFFFF
        first_key = keys
        for which in (UNIQ_KEY, KEYS):
            lo, hi = value_lo[which], value_hi[which]
            while lo < hi:
                if which == KEYS:  # every non-empty word
                    lo, word_end = next_key_word(u8, lo, hi)
                else:
                    word_end = hi
                if word_end == lo:
                    break
                h, ok = java_hash(u8, lo, word_end, prefix)
                if not ok:
                    reference[r] = True
                    break
                key_record, key_hash = _grown(key_record, keys), _grown(key_hash, keys)
                key_record[keys] = r
                key_hash[keys] = key_hash_of(h)
                keys += 1
                lo = word_end
            if reference[r]:
                keys = first_key  # the reference path indexes this record
                break
    return topics[T_AT : T_LEN + 1, :n_topics].T.copy(), key_record[:keys], key_hash[:keys], i


# where a consumequeue unit's fields are (ConsumeQueue.putMessagePositionInfo's 20 bytes, big-endian)
CQ_AT = tuple(S.CQ_DTYPE.fields[n][1] for n in ("commitLogOffset", "size", "tagsCode"))


@kernel
def put_units_in_order(addresses, wrote, file_size, queue, phy, size, tags):
    """Consumequeue units written in the order given (commitlog order), unit i into queue[i]'s last file (mapped
    at addresses[queue[i]], written up to wrote[queue[i]]), as ConsumeQueueWriter.put appends one; stops before
    the first unit whose file is full. Returns the units written (wrote moves past them)."""
    for i in range(len(queue)):
        q = queue[i]
        at = wrote[q]
        if at + S.CQ_UNIT_SIZE > file_size:
            return i
        a = addresses[q] + at
        for k in range(8):
            store_byte_at(a + CQ_AT[0] + k, (phy[i] >> (56 - 8 * k)) & 0xFF)
            store_byte_at(a + CQ_AT[2] + k, (tags[i] >> (56 - 8 * k)) & 0xFF)
        for k in range(4):
            store_byte_at(a + CQ_AT[1] + k, (size[i] >> (24 - 8 * k)) & 0xFF)
        wrote[q] = at + S.CQ_UNIT_SIZE
    return len(queue)
